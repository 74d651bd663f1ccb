// metrics.cc: shared counters and their exposition.
#include "http/metrics.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <new>

namespace tesscpp::http {
namespace {

// Lock-free atomics are plain memory, so they work across processes in a
// shared mapping; anything needing a lock would not.
static_assert(std::atomic<uint64_t>::is_always_lock_free && std::atomic<int64_t>::is_always_lock_free);

void AppendNumber(std::string& out, double value) {
  char text[32];
  const char* end = std::to_chars(text, text + sizeof text, value).ptr;
  out.append(text, static_cast<size_t>(end - text));
}

void AppendNumber(std::string& out, uint64_t value) {
  char text[24];
  const char* end = std::to_chars(text, text + sizeof text, value).ptr;
  out.append(text, static_cast<size_t>(end - text));
}

}  // namespace

ServerMetrics* ServerMetrics::Create(platform::Fd& fd) {
  fd = platform::Fd(::memfd_create("tesscpp-metrics", MFD_CLOEXEC));
  if (!fd.valid() || ::ftruncate(fd.get(), sizeof(ServerMetrics)) != 0) return nullptr;
  ServerMetrics* metrics = Map(fd.get());
  // Zeroed pages are zero atomics; the placement new makes them objects.
  return metrics == nullptr ? nullptr : new (metrics) ServerMetrics();
}

ServerMetrics* ServerMetrics::Map(int fd) {
  void* memory = ::mmap(nullptr, sizeof(ServerMetrics), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  return memory == MAP_FAILED ? nullptr : static_cast<ServerMetrics*>(memory);
}

size_t ServerMetrics::EndpointIndex(std::string_view endpoint) {
  if (endpoint.size() > 1 && endpoint[0] == '/') {
    if (const std::optional<core::EndpointId> id = core::FindEndpoint(endpoint.substr(1))) {
      return static_cast<size_t>(*id);
    }
  }
  for (size_t i = 0; i < kOtherRoutes.size(); ++i) {
    if (kOtherRoutes[i] == endpoint) return core::kEndpointCount + i;
  }
  return kSeries - 1;
}

std::string ServerMetrics::SeriesName(size_t index) {
  if (index < core::kEndpointCount) {
    return "/" + std::string(core::Endpoint(static_cast<core::EndpointId>(index)).name);
  }
  if (index < kSeries - 1) return std::string(kOtherRoutes[index - core::kEndpointCount]);
  return "other";
}

size_t ServerMetrics::StatusIndex(int status) {
  for (size_t i = 0; i + 1 < kStatuses.size(); ++i) {
    if (kStatuses[i] == status) return i;
  }
  return kStatuses.size() - 1;
}

void ServerMetrics::Record(std::string_view endpoint, int status, double seconds, int64_t bytes_in,
                           int64_t bytes_out) {
  const size_t e = EndpointIndex(endpoint);
  requests_[e][StatusIndex(status)].fetch_add(1, std::memory_order_relaxed);
  for (size_t b = 0; b < kBuckets.size(); ++b) {
    if (seconds <= kBuckets[b]) {
      buckets_[e][b].fetch_add(1, std::memory_order_relaxed);
      break;  // cumulative counts are summed when rendered
    }
  }
  count_[e].fetch_add(1, std::memory_order_relaxed);
  micros_[e].fetch_add(static_cast<uint64_t>(seconds * 1e6), std::memory_order_relaxed);
  bytes_in_.fetch_add(static_cast<uint64_t>(bytes_in), std::memory_order_relaxed);
  bytes_out_.fetch_add(static_cast<uint64_t>(bytes_out), std::memory_order_relaxed);
}

void ServerMetrics::Reject(Rejection why) {
  rejected_[static_cast<size_t>(why)].fetch_add(1, std::memory_order_relaxed);
}

void ServerMetrics::SampleMemory(int worker) {
  if (worker < 0 || worker >= kMaxWorkers) return;
  long pages = 0;
  if (std::FILE* statm = std::fopen("/proc/self/statm", "r")) {
    long size = 0;
    if (std::fscanf(statm, "%ld %ld", &size, &pages) != 2) pages = 0;
    std::fclose(statm);
  }
  rss_[worker].store(static_cast<int64_t>(pages) * ::sysconf(_SC_PAGESIZE), std::memory_order_relaxed);
}

// Forward reuse (docs/forward-reuse.md), summed over the workers: each keeps
// its own store. A replaced worker's counters start again in its slot; what
// its predecessor counted stays in the sums (RetireResiduals), so a counter
// never steps back, as Prometheus requires of one.
void ServerMetrics::RenderResiduals(std::string& out) const {
  std::array<int64_t, kResidualFields> sums{};
  for (const auto& worker : residuals_) {
    for (size_t f = 0; f < kResidualFields; ++f) sums[f] += worker[f].load(std::memory_order_relaxed);
  }
  for (size_t f = kResidualGauges; f < kResidualFields; ++f)
    sums[f] += retired_residuals_[f].load(std::memory_order_relaxed);
  auto line = [&out](std::string_view name, std::string_view labels, int64_t value) {
    out += name;
    out += labels;
    out += ' ';
    AppendNumber(out, static_cast<uint64_t>(std::max<int64_t>(value, 0)));
    out += '\n';
  };
  out += "# HELP tesscpp_residual_entries Forward states kept for derivative calls (forward reuse).\n";
  out += "# TYPE tesscpp_residual_entries gauge\n";
  line("tesscpp_residual_entries", "", sums[0]);
  out += "# HELP tesscpp_residual_bytes Bytes the kept forward states hold, by memory.\n";
  out += "# TYPE tesscpp_residual_bytes gauge\n";
  line("tesscpp_residual_bytes", "{memory=\"host\"}", sums[1]);
  line("tesscpp_residual_bytes", "{memory=\"device\"}", sums[2]);
  out += "# HELP tesscpp_residual_kept_total Forward states kept.\n";
  out += "# TYPE tesscpp_residual_kept_total counter\n";
  line("tesscpp_residual_kept_total", "", sums[3]);
  out +=
      "# HELP tesscpp_residual_lookups_total Derivative calls that referred to a kept state, by outcome.\n";
  out += "# TYPE tesscpp_residual_lookups_total counter\n";
  line("tesscpp_residual_lookups_total", "{outcome=\"hit\"}", sums[4]);
  line("tesscpp_residual_lookups_total", "{outcome=\"miss\"}", sums[5]);
  out += "# HELP tesscpp_residual_dropped_total Kept states dropped or never stored, by reason.\n";
  out += "# TYPE tesscpp_residual_dropped_total counter\n";
  line("tesscpp_residual_dropped_total", "{reason=\"evicted\"}", sums[6]);
  line("tesscpp_residual_dropped_total", "{reason=\"released\"}", sums[7]);
  line("tesscpp_residual_dropped_total", "{reason=\"over_budget\"}", sums[8]);
}

void ServerMetrics::SampleResiduals(int worker, const runtime::ResidualStats& stats) {
  if (worker < 0 || worker >= kMaxWorkers) return;
  const std::array<int64_t, kResidualFields> fields = {stats.entries,
                                                       stats.host_bytes,
                                                       stats.device_bytes,
                                                       static_cast<int64_t>(stats.kept),
                                                       static_cast<int64_t>(stats.hits),
                                                       static_cast<int64_t>(stats.misses),
                                                       static_cast<int64_t>(stats.evictions),
                                                       static_cast<int64_t>(stats.released),
                                                       static_cast<int64_t>(stats.refused)};
  for (size_t f = 0; f < kResidualFields; ++f)
    residuals_[worker][f].store(fields[f], std::memory_order_relaxed);
}

void ServerMetrics::RetireResiduals(int worker) {
  if (worker < 0 || worker >= kMaxWorkers) return;
  // Field by field, so that only a scrape within those few instructions can
  // miss a value; the supervisor renders while workers start.
  for (size_t f = 0; f < kResidualFields; ++f) {
    const int64_t before = residuals_[worker][f].exchange(0, std::memory_order_relaxed);
    if (f >= kResidualGauges) retired_residuals_[f].fetch_add(before, std::memory_order_relaxed);
  }
}

std::string ServerMetrics::Render() const {
  std::string out;
  out.reserve(16384);
  out += "# HELP tesscpp_requests_total Requests answered, by endpoint and HTTP status.\n";
  out += "# TYPE tesscpp_requests_total counter\n";
  for (size_t e = 0; e < kSeries; ++e) {
    for (size_t s = 0; s < kStatuses.size(); ++s) {
      const uint64_t n = requests_[e][s].load(std::memory_order_relaxed);
      if (n == 0) continue;
      out += "tesscpp_requests_total{endpoint=\"";
      out += SeriesName(e);
      out += "\",status=\"";
      if (kStatuses[s] == 0) {
        out += "other";
      } else {
        AppendNumber(out, static_cast<uint64_t>(kStatuses[s]));
      }
      out += "\"} ";
      AppendNumber(out, n);
      out += '\n';
    }
  }
  out += "# HELP tesscpp_request_duration_seconds Time from a request's header to its answer.\n";
  out += "# TYPE tesscpp_request_duration_seconds histogram\n";
  for (size_t e = 0; e < kSeries; ++e) {
    const uint64_t count = count_[e].load(std::memory_order_relaxed);
    if (count == 0) continue;
    uint64_t cumulative = 0;
    const std::string label = "endpoint=\"" + SeriesName(e) + "\"";
    for (size_t b = 0; b < kBuckets.size(); ++b) {
      cumulative += buckets_[e][b].load(std::memory_order_relaxed);
      out += "tesscpp_request_duration_seconds_bucket{" + label + ",le=\"";
      AppendNumber(out, kBuckets[b]);
      out += "\"} ";
      AppendNumber(out, cumulative);
      out += '\n';
    }
    out += "tesscpp_request_duration_seconds_bucket{" + label + ",le=\"+Inf\"} ";
    AppendNumber(out, count);
    out += "\ntesscpp_request_duration_seconds_sum{" + label + "} ";
    AppendNumber(out, static_cast<double>(micros_[e].load(std::memory_order_relaxed)) / 1e6);
    out += "\ntesscpp_request_duration_seconds_count{" + label + "} ";
    AppendNumber(out, count);
    out += '\n';
  }
  out += "# HELP tesscpp_request_bytes_total Request body bytes received.\n";
  out += "# TYPE tesscpp_request_bytes_total counter\ntesscpp_request_bytes_total ";
  AppendNumber(out, bytes_in_.load(std::memory_order_relaxed));
  out += "\n# HELP tesscpp_response_bytes_total Response body bytes sent.\n";
  out += "# TYPE tesscpp_response_bytes_total counter\ntesscpp_response_bytes_total ";
  AppendNumber(out, bytes_out_.load(std::memory_order_relaxed));
  out += "\n# HELP tesscpp_requests_in_flight Requests past their header and not yet answered.\n";
  out += "# TYPE tesscpp_requests_in_flight gauge\ntesscpp_requests_in_flight ";
  AppendNumber(out, static_cast<uint64_t>(std::max<int64_t>(0, in_flight_.load(std::memory_order_relaxed))));
  out += "\n# HELP tesscpp_rejected_total Requests refused before the runtime saw them, by reason.\n";
  out += "# TYPE tesscpp_rejected_total counter\n";
  static constexpr std::array<std::string_view, 3> kReasons = {"in_flight", "body_budget", "unauthorized"};
  for (size_t r = 0; r < kReasons.size(); ++r) {
    out += "tesscpp_rejected_total{reason=\"";
    out += kReasons[r];
    out += "\"} ";
    AppendNumber(out, rejected_[r].load(std::memory_order_relaxed));
    out += '\n';
  }
  out += "# HELP process_resident_memory_bytes Resident memory of the server's processes (all workers).\n";
  out += "# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes ";
  int64_t total = 0;
  for (const auto& rss : rss_) total += rss.load(std::memory_order_relaxed);
  AppendNumber(out, static_cast<uint64_t>(total));
  out += '\n';
  RenderResiduals(out);
  return out;
}

}  // namespace tesscpp::http
