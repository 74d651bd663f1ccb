// metrics.h: the server's counters, shared by its worker processes, and
// their Prometheus text exposition (GET /metrics).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

#include "tesscpp/internal/core/endpoint_table.h"
#include "tesscpp/internal/platform/file.h"
#include "tesscpp/internal/runtime/runtime.h"

namespace tesscpp::http {

/// \brief Why a request was refused before it reached the runtime.
enum class Rejection : uint8_t { kInFlight, kBodyBudget, kUnauthorized, kCount };

/// \brief Request counts by endpoint and status, latency histograms by
/// endpoint, bytes in and out, requests in flight, rejections and each
/// worker's RSS. Lives in one shared mapping made before the workers start,
/// so every worker adds to the same lock-free atomics and any of them can
/// answer /metrics for all.
class ServerMetrics {
 public:
  static constexpr int kMaxWorkers = 1024;

  /// \brief Memory for the counters, zeroed: a memfd rather than an
  /// anonymous mapping, so that workers started by exec (handed the fd) map
  /// the same pages as forked ones. Null when it cannot be made.
  static ServerMetrics* Create(platform::Fd& fd);
  /// \brief Maps the counters of `fd` (Create's, in the supervisor).
  static ServerMetrics* Map(int fd);

  /// \brief One answered request. `endpoint` is the path without its query.
  void Record(std::string_view endpoint, int status, double seconds, int64_t bytes_in, int64_t bytes_out);
  void Reject(Rejection why);
  void AddInFlight(int delta) { in_flight_.fetch_add(delta, std::memory_order_relaxed); }
  /// \brief Samples this process's RSS into slot `worker`.
  void SampleMemory(int worker);
  /// \brief Samples this process's forward-reuse store into slot `worker`.
  void SampleResiduals(int worker, const runtime::ResidualStats& stats);
  /// \brief For a worker starting to serve, before its first call: moves the
  /// forward-reuse counters of the slot's previous worker (one it replaces)
  /// into the sums, so that they never step back.
  void RetireResiduals(int worker);

  /// \brief The text exposition format, version 0.0.4.
  std::string Render() const;

 private:
  // The routes are a fixed list (the endpoint table's and the server's own),
  // so the series are known and fit a fixed layout in shared memory;
  // anything else is "other", the last series.
  static constexpr std::array<std::string_view, 4> kOtherRoutes = {"/openapi.json", "/docs",
                                                                   "/check_gpu_transport", "/metrics"};
  static constexpr size_t kSeries = core::kEndpointCount + kOtherRoutes.size() + 1;
  static constexpr std::array<int, 12> kStatuses = {200, 400, 401, 404, 405, 406, 413, 422, 431, 500, 503, 0};
  static constexpr std::array<double, 16> kBuckets = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                                      0.25,   0.5,   1,      2.5,   5,    10,    30,   60};

  static size_t EndpointIndex(std::string_view endpoint);
  // The endpoint label of series `index` ("/apply", ..., "other").
  static std::string SeriesName(size_t index);
  static size_t StatusIndex(int status);
  void RenderResiduals(std::string& out) const;

  std::atomic<uint64_t> requests_[kSeries][kStatuses.size()];
  std::atomic<uint64_t> buckets_[kSeries][kBuckets.size()];
  std::atomic<uint64_t> count_[kSeries];
  std::atomic<uint64_t> micros_[kSeries];  // sum of durations, in microseconds
  std::atomic<uint64_t> bytes_in_;
  std::atomic<uint64_t> bytes_out_;
  std::atomic<int64_t> in_flight_;
  std::atomic<uint64_t> rejected_[static_cast<size_t>(Rejection::kCount)];
  std::atomic<int64_t> rss_[kMaxWorkers];
  // Per worker, the fields of runtime::ResidualStats in kResidualFields' order
  // (the first kResidualGauges are gauges, the rest counters).
  static constexpr size_t kResidualFields = 9;
  static constexpr size_t kResidualGauges = 3;
  std::atomic<int64_t> residuals_[kMaxWorkers][kResidualFields];
  // The counters of workers that were replaced, so that the sums never step back.
  std::atomic<int64_t> retired_residuals_[kResidualFields];
};

}  // namespace tesscpp::http
