#include "tesscpp/run_log.h"

#include "tesscpp/internal/component/run_logger.h"

namespace tesscpp {
namespace {

// The logger of the call this thread runs (tesseract-core raises a
// RuntimeError where none is active).
Result<component::RunLogger*> Current() {
  component::RunLogger* logger = component::CurrentRunLogger();
  if (logger == nullptr) {
    return Status::InvalidArgument(
        "No active run: metrics, parameters and artifacts can be logged only from inside apply or a "
        "gradient endpoint, on the thread that runs it");
  }
  return logger;
}

}  // namespace

Status LogMetric(std::string_view key, double value, std::optional<int64_t> step) {
  TESS_ASSIGN_OR_RETURN(component::RunLogger * logger, Current());
  return logger->LogMetric(key, value, step);
}

Status LogParameter(std::string_view key, const Value& value) {
  TESS_ASSIGN_OR_RETURN(component::RunLogger * logger, Current());
  return logger->LogParameter(key, value);
}

Status LogArtifact(const std::string& local_path) {
  TESS_ASSIGN_OR_RETURN(component::RunLogger * logger, Current());
  return logger->LogArtifact(local_path);
}

const std::string& OutputDirectory() { return component::CurrentOutputDirectory(); }

}  // namespace tesscpp
