// SPDX-License-Identifier: BSD-3-Clause
// Session 56 experiment: grain's gemm tile pipeline, rebuilt with timed events, for 16384 x 16384 x 4096 at T = 1024
// with A and B on the device and C in page-locked memory (ggp): C tile in (h2d lane), kt kernels (run lane), C tile back
// (d2h lane), a C slot refilled once its last tile went back. Where does each op's time go: its own length, or the
// wait between a dependency met and the op starting? With 3 slots (grain's) and 6; and with one direction only.
#include <cstdio>
#include <vector>
#include <algorithm>
#include <cublas_v2.h>
#include <cuda_runtime.h>
int main() {
    const size_t M = 16384, N = 16384, K = 4096, T = 1024, mt = M / T, nt = N / T, kt = K / T, tiles = mt * nt;
    double *a, *b, *h, *slots;
    cudaMalloc(&a, M * K * 8); cudaMalloc(&b, K * N * 8); cudaMemset(a, 0, M * K * 8); cudaMemset(b, 0, K * N * 8);
    cudaHostAlloc(&h, M * N * 8, cudaHostAllocPortable);
    for (size_t i = 0; i < M * N; i++) h[i] = 0.0;
    cudaMalloc(&slots, 8 * T * T * 8);
    cublasHandle_t hd; cublasCreate(&hd);
    cudaStream_t sin, srun, sout; cudaStreamCreate(&sin); cudaStreamCreate(&srun); cudaStreamCreate(&sout);
    cublasSetStream(hd, srun);
    double one = 1.0;
    std::vector<cudaEvent_t> ev(tiles * 6 + 2);
    for (auto &e : ev) cudaEventCreate(&e);
    for (int mode = 0; mode < 4; mode++) { // 0: 3 slots, 1: 6 slots, 2: 3 slots, no copies back, 3: no copies in
        size_t S = mode == 1 ? 6 : 3;
        int in = mode != 3, out = mode != 2;
        for (int rep = 0; rep < 2; rep++) {
            cudaDeviceSynchronize();
            cudaEventRecord(ev[0], srun);
            cudaStreamWaitEvent(sin, ev[0]); cudaStreamWaitEvent(sout, ev[0]);
            for (size_t t = 0; t < tiles; t++) {
                size_t i = t % mt, j = t / mt, s = t % S;
                cudaEvent_t *e = &ev[1 + t * 6]; // in start, in end, run start, run end, out start, out end
                double *slot = slots + s * T * T, *hc = h + j * T * M + i * T;
                if (in) {
                    if (t >= S && out) cudaStreamWaitEvent(sin, ev[1 + (t - S) * 6 + 5]);
                    cudaEventRecord(e[0], sin);
                    cudaMemcpy2DAsync(slot, T * 8, hc, M * 8, T * 8, T, cudaMemcpyHostToDevice, sin);
                    cudaEventRecord(e[1], sin);
                    cudaStreamWaitEvent(srun, e[1]);
                } else if (t >= S && out)
                    cudaStreamWaitEvent(srun, ev[1 + (t - S) * 6 + 5]);
                cudaEventRecord(e[2], srun);
                for (size_t l = 0; l < kt; l++)
                    cublasDgemm(hd, CUBLAS_OP_N, CUBLAS_OP_N, T, T, T, &one, a + l * T * M + i * T, M,
                                b + j * T * K + l * T, K, &one, slot, T);
                cudaEventRecord(e[3], srun);
                if (out) {
                    cudaStreamWaitEvent(sout, e[3]);
                    cudaEventRecord(e[4], sout);
                    cudaMemcpy2DAsync(hc, M * 8, slot, T * 8, T * 8, T, cudaMemcpyDeviceToHost, sout);
                    cudaEventRecord(e[5], sout);
                }
            }
            cudaDeviceSynchronize();
            if (rep == 0) continue;
            auto at = [&](cudaEvent_t x) { float ms; cudaEventElapsedTime(&ms, ev[0], x); return ms * 1e3; };
            std::vector<double> lin, lrun, lout, gin, grun, gout;
            double end = 0;
            for (size_t t = 0; t < tiles; t++) {
                cudaEvent_t *e = &ev[1 + t * 6];
                if (in) lin.push_back(at(e[1]) - at(e[0]));
                lrun.push_back(at(e[3]) - at(e[2]));
                if (out) lout.push_back(at(e[5]) - at(e[4]));
                // the wait between what an op waited for and its start
                if (in) grun.push_back(at(e[2]) - std::max(at(e[1]), t ? at(ev[1 + (t - 1) * 6 + 3]) : 0.0));
                if (out) gout.push_back(at(e[4]) - std::max(at(e[3]), t ? at(ev[1 + (t - 1) * 6 + 5]) : 0.0));
                if (in && out && t >= S)
                    gin.push_back(at(e[0]) - std::max(at(ev[1 + (t - S) * 6 + 5]), at(ev[1 + (t - 1) * 6 + 1])));
                end = std::max(end, at(e[out ? 5 : 3]));
            }
            auto med = [](std::vector<double> v) { if (v.empty()) return 0.0; std::sort(v.begin(), v.end()); return v[v.size() / 2]; };
            auto mean = [](const std::vector<double> &v) { double s = 0; for (double x : v) s += x; return v.empty() ? 0 : s / v.size(); };
            printf("mode %d (%zu slots%s%s): total %.1f ms = %.1f us a tile; median us: in %.1f, kernels %.1f, out %.1f; "
                   "mean gap us before: kernels %.1f, out %.1f, in %.1f\n", mode, S, in ? "" : ", no copies in",
                   out ? "" : ", no copies back", end * 1e-3, end / tiles, med(lin), med(lrun), med(lout), mean(grun),
                   mean(gout), mean(gin));
            fflush(stdout);
        }
    }
    printf("err %s\n", cudaGetErrorString(cudaGetLastError()));
}
