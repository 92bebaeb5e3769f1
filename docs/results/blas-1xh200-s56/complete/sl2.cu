// SPDX-License-Identifier: BSD-3-Clause
// Session 56 experiment: which sl predicts tiled axpy? For each copy size (1-512 MiB, page-locked, contiguous), h2d's
// slowdown (a) beside a loop of d2h copies of the same size (the deployment's way), (b) in pairs started together (one
// h2d, one d2h of the same size, both waited), (c) beside one d2h of half the size started with it (axpy: 2 in, 1 back).
#include <atomic>
#include <cstdio>
#include <thread>
#include <cuda_runtime.h>
int main() {
    size_t MAX = (size_t)512 << 20;
    char *h, *d;
    cudaHostAlloc(&h, 2 * MAX, cudaHostAllocPortable);
    cudaMalloc(&d, 2 * MAX);
    cudaStream_t s1, s2; cudaStreamCreate(&s1); cudaStreamCreate(&s2);
    cudaEvent_t a0, a1; cudaEventCreate(&a0); cudaEventCreate(&a1);
    for (size_t bytes = (size_t)1 << 20; bytes <= MAX; bytes *= 2) {
        int reps = (int)(((size_t)4 << 30) / bytes / 4) + 3;
        auto in = [&](cudaStream_t s) { cudaMemcpyAsync(d, h, bytes, cudaMemcpyHostToDevice, s); };
        auto out = [&](size_t b, cudaStream_t s) { cudaMemcpyAsync(h + MAX, d + MAX, b, cudaMemcpyDeviceToHost, s); };
        // h2d's own time, by events on its stream
        auto timed_in = [&]() {
            cudaEventRecord(a0, s1); in(s1); cudaEventRecord(a1, s1); cudaEventSynchronize(a1);
            float ms; cudaEventElapsedTime(&ms, a0, a1); return ms * 1e-3;
        };
        double alone = 0, loop = 0, pair = 0, half = 0;
        in(s1); cudaDeviceSynchronize();
        for (int i = 0; i < reps; i++) alone += timed_in();
        std::atomic<int> stop{0};
        std::thread other([&]() { while (!stop.load()) { out(bytes, s2); cudaStreamSynchronize(s2); } });
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        for (int i = 0; i < reps; i++) loop += timed_in();
        stop = 1; other.join();
        for (int i = 0; i < reps; i++) { out(bytes, s2); pair += timed_in(); cudaDeviceSynchronize(); }
        for (int i = 0; i < reps; i++) { out(bytes / 2, s2); half += timed_in(); cudaDeviceSynchronize(); }
        printf("%7.1f MiB h2d: alone %.1f GB/s; x%.3f beside a loop the other way, x%.3f beside one of the same size "
               "started with it, x%.3f beside one of half the size\n", bytes / 1048576.0, bytes * reps / alone / 1e9,
               loop / alone, pair / alone, half / alone);
        fflush(stdout);
    }
    printf("err %s\n", cudaGetErrorString(cudaGetLastError()));
}
