// file_run_logger.h: a run tracked in its run directory, in the files
// tesseract-runtime's file backend writes (docs/run-tracking.md §1).
#pragma once

#include <map>
#include <mutex>
#include <string>

#include "tesscpp/internal/component/run_logger.h"

namespace tesscpp::runtime {

/// \brief Writes into `<run_dir>/logs/` (made by CreateRunDirectory, which
/// writes metrics.csv's header): a metrics.csv row per metric, parameters.json
/// rewritten whole per parameter, artifacts copied into artifacts/.
class FileRunLogger final : public component::RunLogger {
 public:
  explicit FileRunLogger(const std::string& run_dir);

  Status LogMetric(std::string_view key, double value, std::optional<int64_t> step) override;
  Status LogParameter(std::string_view key, const Value& value) override;
  Status LogArtifact(const std::string& local_path) override;
  Status End() override { return Status::OK(); }

  /// \brief The factory the runtime uses without an MLflow server.
  static component::RunLoggerFactory Factory();

 private:
  std::string logs_;
  std::mutex mutex_;
  std::map<std::string, int64_t, std::less<>> counts_;  // metric values logged, per key
  ValueDict parameters_;                                // in first-logged order, as a Python dict
};

/// \brief One metrics.csv row as Python's csv module writes it: fields
/// quoted only where they must be, "\r\n" at the end.
std::string MetricsCsvRow(std::string_view timestamp, std::string_view key, double value, int64_t step);

/// \brief Whether `value` holds an array anywhere (parameters may not).
bool HoldsArray(const Value& value);

/// \brief datetime.now().isoformat(): local time, microseconds unless zero.
std::string LocalIsoTimestamp();

}  // namespace tesscpp::runtime
