// run_logger.h: where the run_log.h functions write (internal): the run of
// the endpoint call the current thread is running.
//
// The runtime makes a RunLogger for each call of apply and the gradient
// endpoints (a run directory's files, or an MLflow run) and installs it on the
// calling thread with ScopedRunLogger for as long as the endpoint runs; what
// LogMetric and the others reach is that thread's logger.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "tesscpp/result.h"
#include "tesscpp/value.h"

namespace tesscpp::component {

/// \brief One run's destination. Its methods may be called from the endpoint
/// only, on the thread that runs it.
class RunLogger {
 public:
  virtual ~RunLogger() = default;
  virtual Status LogMetric(std::string_view key, double value, std::optional<int64_t> step) = 0;
  virtual Status LogParameter(std::string_view key, const Value& value) = 0;
  virtual Status LogArtifact(const std::string& local_path) = 0;
  /// \brief Closes the run, whatever the endpoint's outcome (MLflow: FINISHED,
  /// as tesseract-runtime ends its runs).
  virtual Status End() = 0;
};

/// \brief A new run for the call whose run directory is `run_dir`.
using RunLoggerFactory = std::function<Result<std::unique_ptr<RunLogger>>(const std::string& run_dir)>;

/// \brief The current thread's logger, or null outside a run.
RunLogger* CurrentRunLogger();

/// \brief The output directory of the call the current thread runs (empty
/// outside one): what tesscpp::OutputDirectory() answers.
const std::string& CurrentOutputDirectory();

/// \brief While alive, the current thread logs to `logger` and writes its
/// files into `output_directory` (the previous ones come back after).
class ScopedRunLogger {
 public:
  ScopedRunLogger(RunLogger* logger, std::string output_directory);
  ~ScopedRunLogger();
  ScopedRunLogger(const ScopedRunLogger&) = delete;
  ScopedRunLogger& operator=(const ScopedRunLogger&) = delete;

 private:
  RunLogger* previous_;
  std::string previous_directory_;
};

}  // namespace tesscpp::component
