// process_identity.cc: pid + start time from /proc/<pid>/stat.
#include "platform/process_identity.h"

#include <unistd.h>

#include <charconv>
#include <fstream>
#include <sstream>
#include <string>

namespace tesscpp::platform {

namespace {

// Field 22 (starttime) of /proc/<pid>/stat, or nullopt. The second field is
// the command name in parentheses, which may itself hold spaces and ')': the
// fields are counted after its last ')'.
std::optional<uint64_t> StartTicks(int64_t pid) {
  std::ifstream file("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(file, stat)) return std::nullopt;
  const size_t name_end = stat.rfind(')');
  if (name_end == std::string::npos) return std::nullopt;
  std::istringstream fields(stat.substr(name_end + 1));
  std::string field;
  for (int index = 3; index <= 22; ++index) {  // field 3 (state) comes first
    if (!(fields >> field)) return std::nullopt;
  }
  uint64_t ticks = 0;
  const auto [end, error] = std::from_chars(field.data(), field.data() + field.size(), ticks);
  if (error != std::errc() || end != field.data() + field.size()) return std::nullopt;
  return ticks;
}

template <typename Int>
std::optional<Int> ParseDecimal(std::string_view text) {
  Int value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace

std::optional<ProcessIdentity> ProcessIdentity::Self() { return Of(getpid()); }

std::optional<ProcessIdentity> ProcessIdentity::Of(int64_t pid) {
  const std::optional<uint64_t> ticks = StartTicks(pid);
  if (!ticks) return std::nullopt;
  return ProcessIdentity{pid, *ticks};
}

std::optional<ProcessIdentity> ProcessIdentity::Parse(std::string_view text) {
  const size_t colon = text.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  const auto pid = ParseDecimal<int64_t>(text.substr(0, colon));
  const auto ticks = ParseDecimal<uint64_t>(text.substr(colon + 1));
  if (!pid || *pid <= 0 || !ticks) return std::nullopt;
  return ProcessIdentity{*pid, *ticks};
}

std::string ProcessIdentity::ToString() const {
  return std::to_string(pid) + ":" + std::to_string(start_ticks);
}

bool ProcessIdentity::Alive() const { return StartTicks(pid) == start_ticks; }

}  // namespace tesscpp::platform
