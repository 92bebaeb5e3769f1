// SPDX-License-Identifier: BSD-3-Clause
// Session 54: do copies slow beside dgemm only when kernels are queued deep? 16 T x T tile copies of an 8192-wide
// pinned matrix on one stream, beside a thread that keeps `depth` cublasDgemm T^3 in flight (syncing every depth).
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <cublas_v2.h>
#include <cuda_runtime.h>
static double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
int main() {
    size_t LD = 8192, N = LD * LD;
    double *h, *d, *a, *b, *c;
    cudaHostAlloc(&h, N * 8, cudaHostAllocPortable);
    cudaMalloc(&d, N * 8);
    cublasHandle_t hd; cublasCreate(&hd);
    cudaStream_t sc, sk; cudaStreamCreate(&sc); cudaStreamCreate(&sk);
    cublasSetStream(hd, sk);
    for (size_t T : {1024, 2048, 4096}) {
        cudaMalloc(&a, T * T * 8); cudaMalloc(&b, T * T * 8); cudaMalloc(&c, T * T * 8);
        cudaMemset(a, 0, T * T * 8); cudaMemset(b, 0, T * T * 8); cudaMemset(c, 0, T * T * 8);
        double one = 1.0;
        size_t tiles = (LD / T) * (LD / T);
        auto copies = [&]() {
            for (size_t t = 0; t < tiles; t++)
                cudaMemcpy2DAsync(d + t * T * T, T * 8, h + (t % (LD / T)) * T + (t / (LD / T)) * T * LD, LD * 8, T * 8, T,
                                  cudaMemcpyHostToDevice, sc);
            cudaStreamSynchronize(sc);
        };
        auto one_by_one = [&]() { // the deployment's way: one tile copy at a time, each waited
            for (size_t t = 0; t < tiles; t++) {
                cudaMemcpy2DAsync(d + t * T * T, T * 8, h + (t % (LD / T)) * T + (t / (LD / T)) * T * LD, LD * 8, T * 8,
                                  T, cudaMemcpyHostToDevice, sc);
                cudaStreamSynchronize(sc);
            }
        };
        for (int i = 0; i < 2; i++) cublasDgemm(hd, CUBLAS_OP_N, CUBLAS_OP_N, T, T, T, &one, a, T, b, T, &one, c, T);
        copies(); cudaDeviceSynchronize();
        double t0 = now(); copies(); double alone = now() - t0;
        t0 = now(); one_by_one(); double alone1 = now() - t0;
        for (int depth : {1, 2, 4, 16}) {
            std::atomic<int> stop{0};
            long launched = 0;
            std::thread k([&]() {
                while (!stop.load()) {
                    for (int i = 0; i < depth; i++)
                        cublasDgemm(hd, CUBLAS_OP_N, CUBLAS_OP_N, T, T, T, &one, a, T, b, T, &one, c, T);
                    launched += depth;
                    cudaStreamSynchronize(sk);
                }
            });
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
            t0 = now(); copies(); double busy = now() - t0;
            t0 = now(); one_by_one(); double busy1 = now() - t0;
            stop = 1; k.join();
            printf("T %zu depth %2d: queued copies %.1f GB/s alone, %.1f beside (x%.2f); one by one %.1f alone, %.1f "
                   "beside (x%.2f)\n", T, depth, tiles * T * T * 8 / alone / 1e9, tiles * T * T * 8 / busy / 1e9,
                   busy / alone, tiles * T * T * 8 / alone1 / 1e9, tiles * T * T * 8 / busy1 / 1e9, busy1 / alone1);
        }
        cudaFree(a); cudaFree(b); cudaFree(c);
    }
    printf("err %s\n", cudaGetErrorString(cudaGetLastError()));
}
