// probe.h: what the host-to-device probes share: a CUDA error check that
// stops the probe, the clock, a median, and a copy's description.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CK(x)                                           \
  do {                                                  \
    cudaError_t ck_e = (x);                             \
    if (ck_e != cudaSuccess) {                          \
      printf("%s: %s\n", #x, cudaGetErrorString(ck_e)); \
      exit(1);                                          \
    }                                                   \
  } while (0)

using Clock = std::chrono::steady_clock;

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Copy {
  char* dst;
  const char* src;
  size_t n;
};

// One cudaMemcpyBatchAsync of all copies with one source access order.
inline cudaError_t Batch(std::vector<void*>& d, std::vector<const void*>& s, std::vector<size_t>& n,
                         cudaMemcpySrcAccessOrder order, cudaStream_t st) {
  cudaMemcpyAttributes a{};
  a.srcAccessOrder = order;
  size_t idx = 0;
  return cudaMemcpyBatchAsync(d.data(), s.data(), n.data(), d.size(), &a, &idx, 1, st);
}

// GB/s of moving `bytes` with f() (median of 6 after one warm-up), timed from
// an idle device until `stream` is done.
template <typename F>
double Rate(size_t bytes, cudaStream_t stream, F f) {
  std::vector<double> r;
  for (int i = 0; i < 7; ++i) {
    CK(cudaDeviceSynchronize());
    auto t0 = Clock::now();
    f();
    CK(cudaStreamSynchronize(stream));
    if (i > 0) r.push_back(bytes / std::chrono::duration<double>(Clock::now() - t0).count() / 1e9);
  }
  return median(r);
}

// `count` pageable buffers of `n` bytes (each filled with its index + 1) and
// device buffers to copy them to.
inline std::vector<Copy> MakeCopies(int count, size_t n) {
  std::vector<Copy> copies;
  for (int i = 0; i < count; ++i) {
    auto* host = static_cast<char*>(malloc(n));
    memset(host, i + 1, n);
    char* dev = nullptr;
    CK(cudaMalloc(&dev, n));
    copies.push_back({dev, host, n});
  }
  return copies;
}
