// SPDX-License-Identifier: BSD-3-Clause
// Session 55: (1) is the dgemm tile kernel slowed by tile copies beside it (pitched or contiguous, one way or both)?
// (2) is a pitched tile copy slowed only while a kernel runs? Kernels one at a time with an idle gap after each
// (busy share from 1 down), the copy's slowdown against the kernels' busy share.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>
#include <cublas_v2.h>
#include <cuda_runtime.h>
static double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
int main() {
    size_t LDMAX = 16384, T = 2048;
    double *h, *h2, *d, *d2, *a, *b, *c;
    cudaHostAlloc(&h, LDMAX * 4096 * 8, cudaHostAllocPortable);
    cudaHostAlloc(&h2, LDMAX * 4096 * 8, cudaHostAllocPortable);
    cudaMalloc(&d, 4096 * 4096 * 8); cudaMalloc(&d2, 4096 * 4096 * 8);
    cublasHandle_t hd; cublasCreate(&hd);
    cudaStream_t sc, so, sk; cudaStreamCreate(&sc); cudaStreamCreate(&so); cudaStreamCreate(&sk);
    cublasSetStream(hd, sk);
    double one = 1.0;
    for (size_t TT : {2048, 4096}) {
        T = TT;
        cudaMalloc(&a, T * T * 8); cudaMalloc(&b, T * T * 8); cudaMalloc(&c, T * T * 8);
        cudaMemset(a, 0, T * T * 8); cudaMemset(b, 0, T * T * 8); cudaMemset(c, 0, T * T * 8);
        auto tile = [&](int in, double *host, double *dev, cudaStream_t s, size_t i, size_t LD) {
            double *hp = host + (i % (LD / T)) * T;
            if (in) cudaMemcpy2DAsync(dev, T * 8, hp, LD * 8, T * 8, T, cudaMemcpyHostToDevice, s);
            else cudaMemcpy2DAsync(hp, LD * 8, dev, T * 8, T * 8, T, cudaMemcpyDeviceToHost, s);
            cudaStreamSynchronize(s);
        };
        auto gemm = [&]() {
            cublasDgemm(hd, CUBLAS_OP_N, CUBLAS_OP_N, T, T, T, &one, a, T, b, T, &one, c, T);
            cudaStreamSynchronize(sk);
        };
        // (1) the kernel beside copies
        int nk = (int)(4e-1 / (2.0 * T * T * T / 50e12)) + 3;
        auto kernels = [&]() { double t0 = now(); for (int i = 0; i < nk; i++) gemm(); return (now() - t0) / nk; };
        kernels();
        double kalone = kernels();
        const char *what[] = {"h2d tiles LD 8192", "h2d+d2h tiles LD 8192", "h2d tiles LD T", "h2d+d2h tiles LD T"};
        for (int mode = 0; mode < 4; mode++) {
            size_t LD = mode < 2 ? 8192 : T;
            std::atomic<int> stop{0};
            std::vector<std::thread> th;
            th.emplace_back([&]() { for (size_t i = 0; !stop.load(); i++) tile(1, h, d, sc, i, LD); });
            if (mode % 2)
                th.emplace_back([&]() { for (size_t i = 0; !stop.load(); i++) tile(0, h2, d2, so, i, LD); });
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
            double k = kernels();
            stop = 1;
            for (auto &x : th) x.join();
            printf("T %zu dgemm alone %.3f ms; beside %s x%.3f\n", T, kalone * 1e3, what[mode], k / kalone);
        }
        // (2) the pitched copy beside kernels busy a share of the time
        int n = (int)(256 * 1024 * 1024 / (T * T * 8)) + 2;
        auto go = [&](size_t LD) { double t0 = now(); for (int i = 0; i < n; i++) tile(1, h, d, sc, i, LD); return (now() - t0) / n; };
        go(8192);
        double alone = go(8192);
        for (double gap : {0.0, 0.5, 1.0, 2.0, 4.0}) {
            std::atomic<int> stop{0};
            std::atomic<double> busy{0}, all{0};
            std::thread k([&]() {
                double t0 = now(), b = 0;
                while (!stop.load()) {
                    double s = now(); gemm(); b += now() - s;
                    double until = now() + gap * kalone;
                    while (now() < until) {}
                }
                busy = b; all = now() - t0;
            });
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
            double t = go(8192);
            stop = 1; k.join();
            printf("T %zu h2d tile LD 8192 beside kernels busy %.2f of the time: x%.3f (alone %.1f GB/s)\n", T,
                   busy / all, t / alone, T * T * 8 / alone / 1e9);
        }
        cudaFree(a); cudaFree(b); cudaFree(c);
    }
    printf("err %s\n", cudaGetErrorString(cudaGetLastError()));
}
