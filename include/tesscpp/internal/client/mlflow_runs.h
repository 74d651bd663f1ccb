// mlflow_runs.h: the runs of C++ endpoints on an MLflow tracking server
// (internal; docs/run-tracking.md §2).
#pragma once

#include "tesscpp/internal/component/run_logger.h"
#include "tesscpp/internal/runtime/runtime.h"
#include "tesscpp/result.h"

namespace tesscpp::client {

/// \brief For Runtime::Make: null when config.mlflow_tracking_uri is empty;
/// otherwise a factory of MLflow runs on that server, made as tesseract-runtime
/// makes them (one per call, its extra arguments, MLflow's environment
/// variables). kInvalidArgument for a URI whose scheme is not http(s),
/// credentials given by half, or extra arguments that do not parse or that
/// tesscpp cannot honour, naming them.
Result<component::RunLoggerFactory> MlflowRunLoggers(const RuntimeConfig& config);

}  // namespace tesscpp::client
