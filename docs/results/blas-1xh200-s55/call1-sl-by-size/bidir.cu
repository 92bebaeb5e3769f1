// SPDX-License-Identifier: BSD-3-Clause
// Session 55 experiment: does the slowdown of a copy while the other direction copies (sl) depend on the copy's
// size? Contiguous copies of 1 MiB .. 1 GiB from page-locked memory, h2d timed alone and while another thread copies
// d2h in a loop (the deployment's way), and the other way round; also both directions queued at once on two
// streams, as axpy's lanes run (x and y in, y back).
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <cuda_runtime.h>
static double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
int main() {
    size_t MAX = (size_t)1 << 30;
    char *h, *d;
    cudaHostAlloc(&h, 2 * MAX, cudaHostAllocPortable);
    cudaMalloc(&d, 2 * MAX);
    cudaStream_t s1, s2; cudaStreamCreate(&s1); cudaStreamCreate(&s2);
    for (size_t bytes = (size_t)1 << 20; bytes <= MAX; bytes *= 4) {
        double h2d_alone = 0;
        int reps = (int)(((size_t)8 << 30) / bytes / 8) + 3;
        for (int h2d = 1; h2d >= 0; h2d--) {
            auto one = [&](cudaStream_t s, int in, size_t off) {
                if (in) cudaMemcpyAsync(d + off, h + off, bytes, cudaMemcpyHostToDevice, s);
                else cudaMemcpyAsync(h + off, d + off, bytes, cudaMemcpyDeviceToHost, s);
                cudaStreamSynchronize(s);
            };
            auto timed = [&]() { double t0 = now(); for (int i = 0; i < reps; i++) one(s1, h2d, 0); return (now() - t0) / reps; };
            one(s1, h2d, 0); one(s2, !h2d, MAX);
            double alone = timed();
            if (h2d) h2d_alone = alone;
            std::atomic<int> stop{0};
            std::thread other([&]() { while (!stop.load()) one(s2, !h2d, MAX); });
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
            double both = timed();
            stop = 1; other.join();
            printf("%8.1f MiB %s: alone %.1f GB/s, beside the other way %.1f GB/s, sl %.3f\n", bytes / 1048576.0,
                   h2d ? "h2d" : "d2h", bytes / alone / 1e9, bytes / both / 1e9, both / alone);
        }
        // axpy's pattern: two copies in, one back, queued together
        double t0 = now();
        for (int i = 0; i < reps; i++) {
            cudaMemcpyAsync(d, h, bytes, cudaMemcpyHostToDevice, s1);
            cudaMemcpyAsync(d + bytes, h + bytes, bytes, cudaMemcpyHostToDevice, s1);
            cudaMemcpyAsync(h + MAX, d + MAX, bytes, cudaMemcpyDeviceToHost, s2);
        }
        cudaDeviceSynchronize();
        double per = (now() - t0) / reps;
        printf("%8.1f MiB axpy pattern: %.3f ms a tile, its 2 copies in alone %.3f ms (x%.3f)\n", bytes / 1048576.0,
               per * 1e3, 2 * h2d_alone * 1e3, per / (2 * h2d_alone));
    }
    printf("err %s\n", cudaGetErrorString(cudaGetLastError()));
}
