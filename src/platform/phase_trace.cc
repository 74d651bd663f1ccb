// phase_trace.cc: PhaseTrace.
#include "platform/phase_trace.h"

#include <fcntl.h>
#include <unistd.h>

#include <charconv>
#include <cstdlib>

namespace tesscpp::platform {
namespace {

// The trace file, opened once; -1 when tracing is off.
int TraceFd() {
  static const int kFd = [] {
    const char* path = std::getenv("TESSCPP_PHASE_TRACE");
    if (path == nullptr || *path == '\0') return -1;
    return ::open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  }();
  return kFd;
}

thread_local PhaseTrace* active = nullptr;

// Names and `what` are code's own words or request paths; quotes and
// backslashes are dropped rather than escaped, control characters too.
void AppendPlain(std::string& out, std::string_view text) {
  for (char c : text) {
    if (c != '"' && c != '\\' && static_cast<unsigned char>(c) >= 0x20) out += c;
  }
}

void AppendMicros(std::string& out, double micros) {
  char number[32];
  const auto written = std::to_chars(number, number + sizeof(number), micros, std::chars_format::fixed, 1);
  out.append(number, written.ptr);
}

}  // namespace

PhaseTrace::PhaseTrace(std::string_view side, std::string_view what) : enabled_(TraceFd() >= 0) {
  if (!enabled_) return;
  side_ = side;
  what_ = what;
  start_ = last_ = Clock::now();
  outer_ = active;
  active = this;
}

PhaseTrace::~PhaseTrace() {
  if (!enabled_) return;
  active = outer_;
  const double total = std::chrono::duration<double, std::micro>(Clock::now() - start_).count();
  std::string line = "{\"side\":\"";
  AppendPlain(line, side_);
  line += "\",\"what\":\"";
  AppendPlain(line, what_);
  line += "\",\"total_us\":";
  AppendMicros(line, total);
  line += ",\"us\":{";
  for (size_t i = 0; i < phases_.size(); ++i) {
    if (i > 0) line += ',';
    line += '"';
    AppendPlain(line, phases_[i].first);
    line += "\":";
    AppendMicros(line, phases_[i].second);
  }
  line += "}}\n";
  // A lost line is a lost measurement, nothing more.
  [[maybe_unused]] const ssize_t written = ::write(TraceFd(), line.data(), line.size());
}

void PhaseTrace::Mark(std::string_view phase) {
  PhaseTrace* trace = active;
  if (trace == nullptr) return;
  const Clock::time_point now = Clock::now();
  const double micros = std::chrono::duration<double, std::micro>(now - trace->last_).count();
  trace->last_ = now;
  for (auto& [name, total] : trace->phases_) {
    if (name == phase) {
      total += micros;
      return;
    }
  }
  trace->phases_.emplace_back(std::string(phase), micros);
}

}  // namespace tesscpp::platform
