// phase_trace.h: where the time of one request goes (latency diagnosis).
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tesscpp::platform {

/// \brief Times the phases of one request (server) or call (client) on this
/// thread. With TESSCPP_PHASE_TRACE naming a file, each trace appends one JSON
/// line to it when it ends:
///
///   {"side":"server","what":"/apply","total_us":412.3,"us":{"read":20.1,"apply":301.7,...}}
///
/// Without the variable nothing is measured (one branch per mark). Code below
/// the trace's owner marks phases with PhaseTrace::Mark(name), which ends the
/// phase that ran since the trace began or since the previous mark; marks of
/// the same name add up. Traces nest (an in-process server inside a client
/// call): marks go to the innermost. One write(2) per line, O_APPEND, so
/// lines of threads and processes sharing the file do not interleave.
class PhaseTrace {
 public:
  PhaseTrace(std::string_view side, std::string_view what);
  ~PhaseTrace();
  PhaseTrace(const PhaseTrace&) = delete;
  PhaseTrace& operator=(const PhaseTrace&) = delete;

  static void Mark(std::string_view phase);

 private:
  using Clock = std::chrono::steady_clock;
  bool enabled_ = false;
  PhaseTrace* outer_ = nullptr;
  std::string side_;
  std::string what_;
  Clock::time_point start_;
  Clock::time_point last_;
  std::vector<std::pair<std::string, double>> phases_;  // microseconds
};

}  // namespace tesscpp::platform
