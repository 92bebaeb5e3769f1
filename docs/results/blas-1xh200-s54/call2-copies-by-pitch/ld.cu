// SPDX-License-Identifier: BSD-3-Clause
// Session 54: does the slowdown of tile copies beside dgemm depend on the host matrix's leading dimension? Tile
// copies (T x T doubles, columns LD apart in pinned memory, one at a time, each waited) alone and beside a thread
// running cublasDgemm T^3 one at a time; both directions.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <cublas_v2.h>
#include <cuda_runtime.h>
static double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
int main() {
    size_t MAXB = (size_t)32768 * 4096 * 8;
    double *h, *d, *a, *b, *c;
    cudaHostAlloc(&h, MAXB, cudaHostAllocPortable);
    cudaMalloc(&d, (size_t)4096 * 4096 * 8);
    cublasHandle_t hd; cublasCreate(&hd);
    cudaStream_t sc, sk; cudaStreamCreate(&sc); cudaStreamCreate(&sk);
    cublasSetStream(hd, sk);
    double one = 1.0;
    for (size_t T : {1024, 2048, 4096}) {
        cudaMalloc(&a, T * T * 8); cudaMalloc(&b, T * T * 8); cudaMalloc(&c, T * T * 8);
        cudaMemset(a, 0, T * T * 8); cudaMemset(b, 0, T * T * 8); cudaMemset(c, 0, T * T * 8);
        for (size_t LD : {T, 2 * T, 4 * T, (size_t)8192, (size_t)16384, (size_t)32768}) {
            if (LD < T || LD * T * 8 > MAXB) continue;
            for (int h2d = 1; h2d >= 0; h2d--) {
                int n = (int)(256 * 1024 * 1024 / (T * T * 8)) + 2;
                auto go = [&]() {
                    double t0 = now();
                    for (int i = 0; i < n; i++) {
                        double *hp = h + (i % (LD / T)) * T;
                        if (h2d)
                            cudaMemcpy2DAsync(d, T * 8, hp, LD * 8, T * 8, T, cudaMemcpyHostToDevice, sc);
                        else
                            cudaMemcpy2DAsync(hp, LD * 8, d, T * 8, T * 8, T, cudaMemcpyDeviceToHost, sc);
                        cudaStreamSynchronize(sc);
                    }
                    return (now() - t0) / n;
                };
                go();
                double alone = go();
                std::atomic<int> stop{0};
                std::thread k([&]() {
                    while (!stop.load()) {
                        cublasDgemm(hd, CUBLAS_OP_N, CUBLAS_OP_N, T, T, T, &one, a, T, b, T, &one, c, T);
                        cudaStreamSynchronize(sk);
                    }
                });
                std::this_thread::sleep_for(std::chrono::milliseconds(5));
                double beside = go();
                stop = 1; k.join();
                printf("T %5zu LD %6zu %s: alone %.1f GB/s, beside dgemm %.1f GB/s (x%.2f)\n", T, LD, h2d ? "h2d" : "d2h",
                       T * T * 8 / alone / 1e9, T * T * 8 / beside / 1e9, beside / alone);
            }
        }
        cudaFree(a); cudaFree(b); cudaFree(c);
    }
    printf("err %s\n", cudaGetErrorString(cudaGetLastError()));
}
