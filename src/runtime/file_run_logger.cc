#include "runtime/file_run_logger.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "codec/number_format.h"
#include "runtime/py_text.h"

namespace tesscpp::runtime {
namespace {

// A csv field, quoted as csv.QUOTE_MINIMAL quotes it (delimiter, quote or
// line break inside; quotes doubled).
void AppendCsvField(std::string_view field, std::string& out) {
  if (field.find_first_of(",\"\r\n") == std::string_view::npos) {
    out += field;
    return;
  }
  out += '"';
  for (const char c : field) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
}

}  // namespace

bool HoldsArray(const Value& value) {
  if (value.is_tensor()) return true;
  if (value.is_list()) {
    for (const Value& item : value.as_list()) {
      if (HoldsArray(item)) return true;
    }
  }
  if (value.is_dict()) {
    for (const auto& [key, item] : value.as_dict()) {
      if (HoldsArray(item)) return true;
    }
  }
  return false;
}

std::string LocalIsoTimestamp() {
  const auto now = std::chrono::system_clock::now();
  const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count();
  const time_t seconds = static_cast<time_t>(micros / 1000000);
  struct tm local {};
  localtime_r(&seconds, &local);
  char text[40];
  size_t n = std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &local);
  if (const auto fraction = static_cast<long>(micros % 1000000); fraction != 0) {
    n += static_cast<size_t>(std::snprintf(text + n, sizeof text - n, ".%06ld", fraction));
  }
  return std::string(text, n);
}

std::string MetricsCsvRow(std::string_view timestamp, std::string_view key, double value, int64_t step) {
  std::string row;
  AppendCsvField(timestamp, row);
  row += ',';
  AppendCsvField(key, row);
  row += ',';
  codec::AppendPythonFloat(value, row);
  row += ',';
  row += std::to_string(step);
  row += "\r\n";
  return row;
}

FileRunLogger::FileRunLogger(const std::string& run_dir) : logs_(run_dir + "/logs") {}

component::RunLoggerFactory FileRunLogger::Factory() {
  return [](const std::string& run_dir) -> Result<std::unique_ptr<component::RunLogger>> {
    return std::make_unique<FileRunLogger>(run_dir);
  };
}

Status FileRunLogger::LogMetric(std::string_view key, double value, std::optional<int64_t> step) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto count = counts_.find(key);
  if (count == counts_.end()) count = counts_.emplace(std::string(key), 0).first;
  const std::string row = MetricsCsvRow(LocalIsoTimestamp(), key, value, step.value_or(count->second));
  ++count->second;
  std::ofstream out(logs_ + "/metrics.csv", std::ios::binary | std::ios::app);
  out << row;
  out.flush();
  if (!out) return Status::IoError("cannot append to '", logs_, "/metrics.csv': ", std::strerror(errno));
  return Status::OK();
}

Status FileRunLogger::LogParameter(std::string_view key, const Value& value) {
  if (HoldsArray(value)) {
    return Status::InvalidArgument("parameter '", key, "' holds an array: log arrays as artifacts");
  }
  std::lock_guard<std::mutex> lock(mutex_);
  parameters_.set(std::string(key), value);
  const std::string path = logs_ + "/parameters.json";
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << PyJsonDumps(Value(parameters_), 2);
  out.flush();
  if (!out) return Status::IoError("cannot write '", path, "': ", std::strerror(errno));
  return Status::OK();
}

Status FileRunLogger::LogArtifact(const std::string& local_path) {
  // shutil.copy2: the bytes, then the permission bits and times.
  std::error_code ec;
  const std::filesystem::path source(local_path);
  if (!std::filesystem::exists(source, ec)) {
    return Status::NotFound("Artifact file not found: ", local_path);
  }
  const std::filesystem::path target = std::filesystem::path(logs_) / "artifacts" / source.filename();
  std::filesystem::copy_file(source, target, std::filesystem::copy_options::overwrite_existing, ec);
  if (ec)
    return Status::IoError("cannot copy artifact '", local_path, "' to '", target.string(),
                           "': ", ec.message());
  struct stat st {};
  if (::stat(local_path.c_str(), &st) == 0) {
    const struct timespec times[2] = {st.st_atim, st.st_mtim};
    ::utimensat(AT_FDCWD, target.c_str(), times, 0);
  }
  return Status::OK();
}

}  // namespace tesscpp::runtime
