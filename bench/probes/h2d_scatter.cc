// h2d_scatter.cc: small tensors as one contiguous DMA then a device-to-device batch
// scatter (a probe, built and run as h2d_staging.cc; it measured slower).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>
#include "probe.h"
int main() {
  setvbuf(stdout, nullptr, _IONBF, 0);
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  for (size_t n : {size_t(64) << 10, size_t(16) << 10, size_t(256) << 10}) {
    int count = int((size_t(64) << 20) / n);
    std::vector<Copy> copies = MakeCopies(count, n);
    char* staging;
    CK(cudaMalloc(&staging, size_t(count) * n));
    std::vector<void*> d;
    std::vector<const void*> s;
    std::vector<size_t> sz;
    for (int i = 0; i < count; ++i) {
      d.push_back(copies[i].dst);
      s.push_back(staging + size_t(i) * n);
      sz.push_back(n);
    }
    auto timeit = [&](const char* name, auto f) {
      printf("%zu KiB x %d: %-50s %.1f GB/s\n", n >> 10, count, name, Rate(count * n, st, f));
    };
    timeit("D2D scatter, one batch", [&] { CK(Batch(d, s, sz, cudaMemcpySrcAccessOrderStream, st)); });
    timeit("D2D scatter, cudaMemcpyAsync each", [&] {
      for (int i = 0; i < count; ++i) CK(cudaMemcpyAsync(d[i], s[i], n, cudaMemcpyDeviceToDevice, st));
    });
    // Full pipeline: T threads; job = C bytes of consecutive pieces; memcpy into pinned slot, one H2D into
    // device slot, one D2D batch scatter.
    for (int T : {8, 12})
      for (size_t C : {size_t(4) << 20, size_t(8) << 20}) {
        const int K = 2;
        std::vector<std::vector<char*>> hs(T), ds(T);
        std::vector<std::vector<cudaEvent_t>> ev(T);
        for (int t = 0; t < T; ++t)
          for (int k = 0; k < K; ++k) {
            char* p;
            CK(cudaHostAlloc((void**)&p, C, 0));
            memset(p, 0, C);
            hs[t].push_back(p);
            char* q;
            CK(cudaMalloc(&q, C));
            ds[t].push_back(q);
            cudaEvent_t e;
            CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
            ev[t].push_back(e);
          }
        int per = int(C / n);
        int jobs = (count + per - 1) / per;
        timeit(T == 8 && C == (size_t(4) << 20) ? "pipeline T=8 C=4MiB"
               : T == 8                         ? "pipeline T=8 C=8MiB"
               : C == (size_t(4) << 20)         ? "pipeline T=12 C=4MiB"
                                                : "pipeline T=12 C=8MiB",
               [&] {
                 std::atomic<int> next{0};
                 std::vector<std::thread> th;
                 for (int t = 0; t < T; ++t)
                   th.emplace_back([&, t] {
                     int k = 0;
                     std::vector<void*> dd;
                     std::vector<const void*> ss;
                     std::vector<size_t> nn;
                     for (int j; (j = next.fetch_add(1)) < jobs;) {
                       CK(cudaEventSynchronize(ev[t][k]));
                       dd.clear();
                       ss.clear();
                       nn.clear();
                       size_t off = 0;
                       for (int i = j * per; i < std::min(count, (j + 1) * per); ++i) {
                         memcpy(hs[t][k] + off, copies[i].src, n);
                         dd.push_back(copies[i].dst);
                         ss.push_back(ds[t][k] + off);
                         nn.push_back(n);
                         off += n;
                       }
                       CK(cudaMemcpyAsync(ds[t][k], hs[t][k], off, cudaMemcpyHostToDevice, st));
                       CK(Batch(dd, ss, nn, cudaMemcpySrcAccessOrderStream, st));
                       CK(cudaEventRecord(ev[t][k], st));
                       k = (k + 1) % K;
                     }
                   });
                 for (auto& x : th) x.join();
               });
        for (int t = 0; t < T; ++t)
          for (int k = 0; k < K; ++k) {
            cudaFreeHost(hs[t][k]);
            cudaFree(ds[t][k]);
            cudaEventDestroy(ev[t][k]);
          }
      }
    std::vector<char> back(n);
    CK(cudaMemcpy(back.data(), copies[count / 3].dst, n, cudaMemcpyDeviceToHost));
    printf("verify %s\n", memcmp(back.data(), copies[count / 3].src, n) == 0 ? "ok" : "BAD");
    for (int i = 0; i < count; ++i) {
      free(const_cast<char*>(copies[i].src));
      cudaFree(copies[i].dst);
    }
    cudaFree(staging);
  }
}
