// h2d_staging.cc: staging strategies for pageable host-to-device copies: threads,
// slot sizes, non-temporal stores, per-thread or shared streams. A probe, run by
// hand on a GPU machine (it chose the constants of src/cuda/transfer.cc):
//   g++ -O2 -std=c++20 -I/usr/local/cuda/include bench/probes/h2d_staging.cc -L/usr/local/cuda/lib64 -lcudart
//   -lpthread -o /tmp/p && /tmp/p
#include <immintrin.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>
#include "probe.h"

__attribute__((target("avx2"))) static void nt_copy(char* d, const char* s, size_t n) {
  size_t i = 0;
  for (; i + 128 <= n; i += 128) {
    __m256i a = _mm256_loadu_si256((const __m256i*)(s + i)),
            b = _mm256_loadu_si256((const __m256i*)(s + i + 32));
    __m256i c = _mm256_loadu_si256((const __m256i*)(s + i + 64)),
            e = _mm256_loadu_si256((const __m256i*)(s + i + 96));
    _mm256_stream_si256((__m256i*)(d + i), a);
    _mm256_stream_si256((__m256i*)(d + i + 32), b);
    _mm256_stream_si256((__m256i*)(d + i + 64), c);
    _mm256_stream_si256((__m256i*)(d + i + 96), e);
  }
  if (i < n) memcpy(d + i, s + i, n - i);
  _mm_sfence();
}

struct Worker {
  std::vector<char*> slots;
  std::vector<cudaEvent_t> ev;
  cudaStream_t st;
  int next = 0;
};

double run(std::vector<Copy>& copies, int T, size_t C, int K, bool nt, bool shared_stream,
           cudaStream_t shared) {
  static std::vector<Worker> ws;
  static size_t wsC = 0;
  static int wsK = 0;
  if ((int)ws.size() < T || wsC != C || wsK != K) {
    for (auto& w : ws) {
      for (auto p : w.slots) cudaFreeHost(p);
      for (auto e : w.ev) cudaEventDestroy(e);
      cudaStreamDestroy(w.st);
    }
    ws.assign(T, {});
    wsC = C;
    wsK = K;
    for (auto& w : ws) {
      for (int k = 0; k < K; ++k) {
        char* p;
        CK(cudaHostAlloc((void**)&p, C, 0));
        memset(p, 0, C);
        w.slots.push_back(p);
        cudaEvent_t e;
        CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
        w.ev.push_back(e);
      }
      CK(cudaStreamCreateWithFlags(&w.st, cudaStreamNonBlocking));
    }
  }
  // chunks
  struct Chunk {
    char* dst;
    const char* src;
    size_t n;
  };
  std::vector<Chunk> chunks;
  for (auto& c : copies)
    for (size_t at = 0; at < c.n; at += C) chunks.push_back({c.dst + at, c.src + at, std::min(C, c.n - at)});
  std::atomic<size_t> next{0};
  CK(cudaDeviceSynchronize());
  auto t0 = Clock::now();
  std::vector<std::thread> th;
  for (int t = 0; t < T; ++t)
    th.emplace_back([&, t] {
      Worker& w = ws[t];
      cudaStream_t st = shared_stream ? shared : w.st;
      for (size_t i; (i = next.fetch_add(1)) < chunks.size();) {
        int k = w.next;
        w.next = (k + 1) % K;
        cudaEventSynchronize(w.ev[k]);
        if (nt)
          nt_copy(w.slots[k], chunks[i].src, chunks[i].n);
        else
          memcpy(w.slots[k], chunks[i].src, chunks[i].n);
        cudaMemcpyAsync(chunks[i].dst, w.slots[k], chunks[i].n, cudaMemcpyHostToDevice, st);
        cudaEventRecord(w.ev[k], st);
      }
    });
  for (auto& x : th) x.join();
  CK(cudaDeviceSynchronize());
  double s = std::chrono::duration<double>(Clock::now() - t0).count();
  size_t bytes = 0;
  for (auto& c : copies) bytes += c.n;
  return bytes / s / 1e9;
}

double memcpy_only(std::vector<Copy>& copies, int T, bool nt, char* pinned, size_t pinned_n) {
  std::atomic<size_t> next{0};
  std::vector<Copy> chunks;
  size_t C = 8 << 20;
  for (auto& c : copies)
    for (size_t at = 0; at < c.n; at += C) chunks.push_back({nullptr, c.src + at, std::min(C, c.n - at)});
  auto t0 = Clock::now();
  std::vector<std::thread> th;
  for (int t = 0; t < T; ++t)
    th.emplace_back([&, t] {
      for (size_t i; (i = next.fetch_add(1)) < chunks.size();) {
        char* d = pinned + (t * C) % pinned_n;
        if (nt)
          nt_copy(d, chunks[i].src, chunks[i].n);
        else
          memcpy(d, chunks[i].src, chunks[i].n);
      }
    });
  for (auto& x : th) x.join();
  double s = std::chrono::duration<double>(Clock::now() - t0).count();
  size_t bytes = 0;
  for (auto& c : copies) bytes += c.n;
  return bytes / s / 1e9;
}

int main() {
  printf("hardware threads %u\n", std::thread::hardware_concurrency());
  for (int shape = 0; shape < 2; ++shape) {
    size_t n = shape == 0 ? (64u << 20) : (64u << 10);
    int count = shape == 0 ? 16 : 1000;
    std::vector<Copy> copies = MakeCopies(count, n);
    printf("== %d x %zu KiB pageable\n", count, n >> 10);
    char* pinned;
    size_t pn = 16 * (8u << 20);
    CK(cudaHostAlloc((void**)&pinned, pn, 0));
    memset(pinned, 0, pn);
    for (int T : {1, 4, 8, 12, 16})
      for (bool nt : {false, true}) {
        std::vector<double> r;
        for (int i = 0; i < 5; ++i) r.push_back(memcpy_only(copies, T, nt, pinned, pn));
        printf("memcpy only T=%d nt=%d: %.1f GB/s\n", T, nt, median(r));
      }
    {  // DMA only from pinned
      std::vector<double> r;
      for (int i = 0; i < 5; ++i) {
        CK(cudaDeviceSynchronize());
        auto t0 = Clock::now();
        for (auto& c : copies)
          for (size_t at = 0; at < c.n; at += (8u << 20))
            CK(cudaMemcpyAsync(c.dst + at, pinned + (at % pn), std::min((size_t)(8u << 20), c.n - at),
                               cudaMemcpyHostToDevice, 0));
        CK(cudaDeviceSynchronize());
        r.push_back(count * n / std::chrono::duration<double>(Clock::now() - t0).count() / 1e9);
      }
      printf("DMA only from pinned: %.1f GB/s\n", median(r));
    }
    cudaStream_t shared;
    CK(cudaStreamCreateWithFlags(&shared, cudaStreamNonBlocking));
    for (size_t C : {size_t(2) << 20, size_t(8) << 20, size_t(32) << 20})
      for (int K : {2, 4})
        for (int T : {4, 8, 16})
          for (bool nt : {false, true})
            for (bool sh : {false, true}) {
              if (shape == 1 && C != (size_t(2) << 20)) continue;
              std::vector<double> r;
              for (int i = 0; i < 6; ++i) r.push_back(run(copies, T, C, K, nt, sh, shared));
              r.erase(r.begin());
              printf("pipeline C=%zuMiB K=%d T=%d nt=%d shared_stream=%d: %.1f GB/s\n", C >> 20, K, T, nt, sh,
                     median(r));
            }
    // verify last
    std::vector<char> back(n);
    CK(cudaMemcpy(back.data(), copies[count - 1].dst, n, cudaMemcpyDeviceToHost));
    printf("verify %s\n", memcmp(back.data(), copies[count - 1].src, n) == 0 ? "ok" : "BAD");
    for (int i = 0; i < count; ++i) {
      free(const_cast<char*>(copies[i].src));
      cudaFree(copies[i].dst);
    }
    cudaFreeHost(pinned);
  }
}
