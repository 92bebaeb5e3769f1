// SPDX-License-Identifier: BSD-3-Clause
// Session 55: the slowdown of pitched tile copies beside dgemm at every T from 1024 to 8192 in steps of 512 (host
// columns 128 KiB apart, page-locked), both directions: smooth in T, or peaked at some sizes?
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <cublas_v2.h>
#include <cuda_runtime.h>
static double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
int main() {
    size_t LD = 16384, TMAX = 8192;
    double *h, *d, *a, *b, *c;
    cudaHostAlloc(&h, LD * TMAX * 8, cudaHostAllocPortable);
    cudaMalloc(&d, TMAX * TMAX * 8);
    cudaMalloc(&a, TMAX * TMAX * 8); cudaMalloc(&b, TMAX * TMAX * 8); cudaMalloc(&c, TMAX * TMAX * 8);
    cudaMemset(a, 0, TMAX * TMAX * 8); cudaMemset(b, 0, TMAX * TMAX * 8); cudaMemset(c, 0, TMAX * TMAX * 8);
    cublasHandle_t hd; cublasCreate(&hd);
    cudaStream_t sc, sk; cudaStreamCreate(&sc); cudaStreamCreate(&sk);
    cublasSetStream(hd, sk);
    double one = 1.0;
    for (size_t T = 1024; T <= TMAX; T += 512) {
        double r[2][2];
        for (int h2d = 1; h2d >= 0; h2d--) {
            int n = (int)(512.0 * 1024 * 1024 / (T * T * 8)) + 2;
            auto go = [&](size_t ld) {
                double t0 = now();
                for (int i = 0; i < n; i++) {
                    double *hp = h + (i % (ld / T)) * T;
                    if (h2d) cudaMemcpy2DAsync(d, T * 8, hp, ld * 8, T * 8, T, cudaMemcpyHostToDevice, sc);
                    else cudaMemcpy2DAsync(hp, ld * 8, d, T * 8, T * 8, T, cudaMemcpyDeviceToHost, sc);
                    cudaStreamSynchronize(sc);
                }
                return (now() - t0) / n;
            };
            go(LD);
            double alone = go(LD), tight = go(T);
            std::atomic<int> stop{0};
            std::thread k([&]() {
                while (!stop.load()) {
                    cublasDgemm(hd, CUBLAS_OP_N, CUBLAS_OP_N, T, T, T, &one, a, T, b, T, &one, c, T);
                    cudaStreamSynchronize(sk);
                }
            });
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
            double beside = go(LD);
            stop = 1; k.join();
            r[h2d][0] = alone / tight; r[h2d][1] = beside / alone;
        }
        printf("T %5zu: h2d pitched/tight x%.2f, beside dgemm x%.2f; d2h pitched/tight x%.2f, beside dgemm x%.2f\n", T,
               r[1][0], r[1][1], r[0][0], r[0][1]);
        fflush(stdout);
    }
    printf("err %s\n", cudaGetErrorString(cudaGetLastError()));
}
