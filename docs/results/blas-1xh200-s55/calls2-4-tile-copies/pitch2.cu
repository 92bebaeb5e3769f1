// SPDX-License-Identifier: BSD-3-Clause
// Session 55: is a pitched tile copy slowed by a copy the other way as it is by a kernel? Tile copies (T x T doubles,
// host columns LD apart, page-locked, one at a time, each waited) alone, beside a loop of the same tile copies the
// other way, beside a contiguous copy loop the other way, beside cublasDgemm T^3, and beside both a kernel and the
// other way's tile copies; both directions.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>
#include <cublas_v2.h>
#include <cuda_runtime.h>
static double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
int main() {
    size_t MAXB = (size_t)16384 * 4096 * 8;
    double *h, *h2, *d, *d2, *a, *b, *c;
    cudaHostAlloc(&h, MAXB, cudaHostAllocPortable);
    cudaHostAlloc(&h2, MAXB, cudaHostAllocPortable);
    cudaMalloc(&d, (size_t)4096 * 4096 * 8);
    cudaMalloc(&d2, (size_t)4096 * 4096 * 8);
    cublasHandle_t hd; cublasCreate(&hd);
    cudaStream_t sc, so, sk; cudaStreamCreate(&sc); cudaStreamCreate(&so); cudaStreamCreate(&sk);
    cublasSetStream(hd, sk);
    double one = 1.0;
    for (size_t T : {1024, 2048, 4096}) {
        cudaMalloc(&a, T * T * 8); cudaMalloc(&b, T * T * 8); cudaMalloc(&c, T * T * 8);
        cudaMemset(a, 0, T * T * 8); cudaMemset(b, 0, T * T * 8); cudaMemset(c, 0, T * T * 8);
        for (size_t LD : {T, (size_t)8192, (size_t)16384}) {
            if (LD < T || LD * T * 8 > MAXB) continue;
            for (int h2d = 1; h2d >= 0; h2d--) {
                int n = (int)(256 * 1024 * 1024 / (T * T * 8)) + 2;
                auto tile = [&](int in, double *host, double *dev, cudaStream_t s, size_t i) {
                    double *hp = host + (i % (LD / T)) * T;
                    if (in) cudaMemcpy2DAsync(dev, T * 8, hp, LD * 8, T * 8, T, cudaMemcpyHostToDevice, s);
                    else cudaMemcpy2DAsync(hp, LD * 8, dev, T * 8, T * 8, T, cudaMemcpyDeviceToHost, s);
                    cudaStreamSynchronize(s);
                };
                auto go = [&]() {
                    double t0 = now();
                    for (int i = 0; i < n; i++) tile(h2d, h, d, sc, i);
                    return (now() - t0) / n;
                };
                // 0: alone, 1: other way's tile copies, 2: other way contiguous, 3: dgemm, 4: dgemm + other tiles
                double t[5];
                go();
                t[0] = go();
                for (int mode = 1; mode <= 4; mode++) {
                    std::atomic<int> stop{0};
                    std::vector<std::thread> th;
                    if (mode == 1 || mode == 4)
                        th.emplace_back([&]() { for (size_t i = 0; !stop.load(); i++) tile(!h2d, h2, d2, so, i); });
                    if (mode == 2)
                        th.emplace_back([&]() {
                            while (!stop.load()) {
                                if (h2d) cudaMemcpyAsync(h2, d2, T * T * 8, cudaMemcpyDeviceToHost, so);
                                else cudaMemcpyAsync(d2, h2, T * T * 8, cudaMemcpyHostToDevice, so);
                                cudaStreamSynchronize(so);
                            }
                        });
                    if (mode >= 3)
                        th.emplace_back([&]() {
                            while (!stop.load()) {
                                cublasDgemm(hd, CUBLAS_OP_N, CUBLAS_OP_N, T, T, T, &one, a, T, b, T, &one, c, T);
                                cudaStreamSynchronize(sk);
                            }
                        });
                    std::this_thread::sleep_for(std::chrono::milliseconds(5));
                    t[mode] = go();
                    stop = 1;
                    for (auto &x : th) x.join();
                }
                printf("T %5zu LD %6zu %s: alone %.1f GB/s; x%.2f beside other-way tiles, x%.2f beside other-way "
                       "contiguous, x%.2f beside dgemm, x%.2f beside both\n", T, LD, h2d ? "h2d" : "d2h",
                       T * T * 8 / t[0] / 1e9, t[1] / t[0], t[2] / t[0], t[3] / t[0], t[4] / t[0]);
                fflush(stdout);
            }
        }
        cudaFree(a); cudaFree(b); cudaFree(c);
    }
    printf("err %s\n", cudaGetErrorString(cudaGetLastError()));
}
