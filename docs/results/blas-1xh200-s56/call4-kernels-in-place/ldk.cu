// SPDX-License-Identifier: BSD-3-Clause
// Session 56 experiment: does a cuBLAS gemm tile run slower on operands in place in a large matrix (ld = the matrix's
// rows) than on packed tiles (ld = T)? Batches of T x T x T tiles queued back to back (>= 20 ms), each tile at a
// different place of the large matrices, as the tiled routine walks them.
#include <chrono>
#include <cstdio>
#include <cublas_v2.h>
#include <cuda_runtime.h>
static double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
int main() {
    size_t N = 16384 + 256;
    void *a, *b, *c;
    cudaMalloc(&a, N * N * 8); cudaMalloc(&b, N * N * 8); cudaMalloc(&c, N * N * 8);
    cudaMemset(a, 0, N * N * 8); cudaMemset(b, 0, N * N * 8); cudaMemset(c, 0, N * N * 8);
    cublasHandle_t hd; cublasCreate(&hd);
    double one = 1.0; float onef = 1.0f;
    for (int single = 0; single <= 1; single++) {
        size_t es = single ? 4 : 8;
        for (size_t T : {1024, 1536, 2048, 3072, 4096}) {
            auto run = [&](size_t lda, size_t ldb, size_t ldc) {
                // tiles of a T-sized grid inside ld x (N*N/ld) matrices; packed: ld = T, tiles back to back
                auto at = [&](void *base, size_t ld, int i) {
                    size_t per_col = ld / T, cols = (N * N * 8 / es) / ld / T;
                    size_t r = i % per_col, q = (i / per_col) % cols;
                    return (char *)base + (q * T * ld + r * T) * es;
                };
                double flop = 2.0 * T * T * T;
                int n = (int)(20e-3 * 45e12 / flop) + 8;
                auto go = [&]() {
                    cudaDeviceSynchronize();
                    double t0 = now();
                    for (int i = 0; i < n; i++) {
                        if (single)
                            cublasSgemm(hd, CUBLAS_OP_N, CUBLAS_OP_N, T, T, T, &onef, (float *)at(a, lda, i), lda,
                                        (float *)at(b, ldb, i + 1), ldb, &onef, (float *)at(c, ldc, i), ldc);
                        else
                            cublasDgemm(hd, CUBLAS_OP_N, CUBLAS_OP_N, T, T, T, &one, (double *)at(a, lda, i), lda,
                                        (double *)at(b, ldb, i + 1), ldb, &one, (double *)at(c, ldc, i), ldc);
                    }
                    cudaDeviceSynchronize();
                    return (now() - t0) / n;
                };
                go();
                double t = 1e30;
                for (int r = 0; r < 3; r++) { double x = go(); t = x < t ? x : t; }
                return t;
            };
            double packed = run(T, T, T);
            printf("%s T %5zu: packed %8.1f us", single ? "sgemm" : "dgemm", T, packed * 1e6);
            for (size_t ld : {4096, 8192, 16384, 16384 + 64})
                if (ld >= T)
                    printf(" | ld %5zu: all x%.2f, A only x%.2f, C only x%.2f", ld, run(ld, ld, ld) / packed,
                           run(ld, T, T) / packed, run(T, T, ld) / packed);
            printf("\n");
            fflush(stdout);
        }
    }
    printf("err %s\n", cudaGetErrorString(cudaGetLastError()));
}
