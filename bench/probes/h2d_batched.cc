// h2d_batched.cc: many copies in one cudaMemcpyBatchAsync, from pinned and pageable
// sources, and packed staging slots (a probe, built and run as h2d_staging.cc).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>
#include "probe.h"

// Packed pipeline: T threads; each takes a "slot job" = consecutive pieces totalling <= C, copies them into
// its slot, one batch DMA.
double packed(std::vector<Copy>& copies, int T, size_t C, int K, cudaStream_t st, bool batch) {
  struct Piece {
    char* dst;
    const char* src;
    size_t n;
  };
  std::vector<std::vector<Piece>> jobs(1);
  size_t fill = 0;
  for (auto& c : copies)
    for (size_t at = 0; at < c.n; at += C) {
      size_t len = std::min(C, c.n - at);
      if (fill + len > C) {
        jobs.emplace_back();
        fill = 0;
      }
      jobs.back().push_back({c.dst + at, c.src + at, len});
      fill += len;
    }
  static std::vector<std::vector<char*>> slots;
  static std::vector<std::vector<cudaEvent_t>> ev;
  static size_t sC = 0;
  static int sK = 0;
  if ((int)slots.size() < T || sC != C || sK != K) {
    slots.assign(T, {});
    ev.assign(T, {});
    sC = C;
    sK = K;
    for (int t = 0; t < T; ++t)
      for (int k = 0; k < K; ++k) {
        char* p;
        CK(cudaHostAlloc((void**)&p, C, 0));
        memset(p, 0, C);
        slots[t].push_back(p);
        cudaEvent_t e;
        CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
        ev[t].push_back(e);
      }
  }
  std::atomic<size_t> next{0};
  CK(cudaDeviceSynchronize());
  auto t0 = Clock::now();
  std::vector<std::thread> th;
  for (int t = 0; t < T; ++t)
    th.emplace_back([&, t] {
      int k = 0;
      std::vector<void*> d;
      std::vector<const void*> s;
      std::vector<size_t> n;
      for (size_t j; (j = next.fetch_add(1)) < jobs.size();) {
        cudaEventSynchronize(ev[t][k]);
        char* slot = slots[t][k];
        size_t off = 0;
        d.clear();
        s.clear();
        n.clear();
        for (auto& p : jobs[j]) {
          memcpy(slot + off, p.src, p.n);
          d.push_back(p.dst);
          s.push_back(slot + off);
          n.push_back(p.n);
          off += p.n;
        }
        if (batch) {
          CK(Batch(d, s, n, cudaMemcpySrcAccessOrderStream, st));
        } else
          for (size_t i = 0; i < d.size(); ++i)
            CK(cudaMemcpyAsync(d[i], s[i], n[i], cudaMemcpyHostToDevice, st));
        CK(cudaEventRecord(ev[t][k], st));
        k = (k + 1) % K;
      }
    });
  for (auto& x : th) x.join();
  CK(cudaStreamSynchronize(st));
  double sec = std::chrono::duration<double>(Clock::now() - t0).count();
  size_t bytes = 0;
  for (auto& c : copies) bytes += c.n;
  return bytes / sec / 1e9;
}

int main() {
  setvbuf(stdout, nullptr, _IONBF, 0);
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  for (int shape = 0; shape < 2; ++shape) {
    size_t n = shape == 0 ? (64u << 20) : (64u << 10);
    int count = shape == 0 ? 16 : 1000;
    std::vector<Copy> copies = MakeCopies(count, n);
    printf("== %d x %zu KiB\n", count, n >> 10);
    char* pinned;
    CK(cudaHostAlloc((void**)&pinned, size_t(count) * n, 0));
    memset(pinned, 0, size_t(count) * n);
    std::vector<void*> d;
    std::vector<const void*> sp, sh;
    std::vector<size_t> sz;
    for (int i = 0; i < count; ++i) {
      d.push_back(copies[i].dst);
      sp.push_back(pinned + size_t(i) * n);
      sh.push_back(copies[i].src);
      sz.push_back(n);
    }
    auto timeit = [&](const char* name, auto f) {
      printf("%-60s %.1f GB/s\n", name, Rate(count * n, st, f));
    };
    timeit("pinned: one cudaMemcpyAsync each", [&] {
      for (int i = 0; i < count; ++i) CK(cudaMemcpyAsync(d[i], sp[i], n, cudaMemcpyHostToDevice, st));
    });
    timeit("pinned: one cudaMemcpyBatchAsync (order stream)",
           [&] { CK(Batch(d, sp, sz, cudaMemcpySrcAccessOrderStream, st)); });
    if (shape == 1)
      timeit("pageable: cudaMemcpyAsync each", [&] {
        for (int i = 0; i < count; ++i) CK(cudaMemcpyAsync(d[i], sh[i], n, cudaMemcpyHostToDevice, st));
      });
    if (shape == 1)
      timeit("pageable: cudaMemcpyBatchAsync (order any)",
             [&] { CK(Batch(d, sh, sz, cudaMemcpySrcAccessOrderAny, st)); });
    if (shape == 1)
      timeit("pageable: cudaMemcpyBatchAsync (order during call)",
             [&] { CK(Batch(d, sh, sz, cudaMemcpySrcAccessOrderDuringApiCall, st)); });
    for (size_t C : {size_t(2) << 20, size_t(4) << 20, size_t(8) << 20})
      for (int T : {8, 12, 16})
        for (int K : {2, 3})
          for (bool b : {false, true}) {
            std::vector<double> r;
            for (int i = 0; i < 6; ++i) r.push_back(packed(copies, T, C, K, st, b));
            r.erase(r.begin());
            printf("packed staging C=%zuMiB T=%d K=%d batch=%d: %.1f GB/s\n", C >> 20, T, K, b, median(r));
          }
    std::vector<char> back(n);
    CK(cudaMemcpy(back.data(), copies[count / 2].dst, n, cudaMemcpyDeviceToHost));
    printf("verify %s\n", memcmp(back.data(), copies[count / 2].src, n) == 0 ? "ok" : "BAD");
    for (int i = 0; i < count; ++i) {
      free(const_cast<char*>(copies[i].src));
      cudaFree(copies[i].dst);
    }
    cudaFreeHost(pinned);
  }
}
