// run_log.h: run tracking from inside an endpoint: the metrics, parameters
// and artifacts of the call being answered (tesseract-core's experimental
// log_metric, log_parameter and log_artifact).
//
// apply and the three gradient endpoints each run inside a run of their own.
// By default it is the call's run directory, `<output_path>/run_<id>/logs/`,
// written exactly as tesseract-runtime writes it (metrics.csv, parameters.json,
// artifacts/); with TESSERACT_MLFLOW_TRACKING_URI set, it is an MLflow run on
// that tracking server (docs/run-tracking.md). abstract_eval has no run, and
// neither has a thread the endpoint started: the functions then fail.
//
//   c.Apply([=](const tesscpp::ModelView& in, tesscpp::Record& out) -> tesscpp::Status {
//     TESS_RETURN_IF_ERROR(tesscpp::LogParameter("dt", in[dt]));
//     for (int64_t i = 0; i < n; ++i) TESS_RETURN_IF_ERROR(tesscpp::LogMetric("energy", e[i]));
//     ...
//   });
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "tesscpp/status.h"
#include "tesscpp/value.h"

namespace tesscpp {

/// \brief Logs `value` of metric `key` at `step`; without a step, the number
/// of values of `key` this run logged before (tesseract-runtime's count).
Status LogMetric(std::string_view key, double value, std::optional<int64_t> step = std::nullopt);

/// \brief Logs parameter `key`: a number, string, bool, null, or a list or
/// dict of those (kInvalidArgument for arrays: log those as artifacts).
/// Logging a key again replaces its value in the run directory; MLflow
/// refuses a changed value.
Status LogParameter(std::string_view key, const Value& value);

/// \brief Copies the file at `local_path` into the run's artifacts, under its
/// own name (kNotFound when there is no such file).
Status LogArtifact(const std::string& local_path);

/// \brief The output directory (TESSERACT_OUTPUT_PATH, made absolute) of the
/// call this thread runs, where an endpoint writes the files it answers as
/// OutputPath fields; empty outside apply and the gradient endpoints.
const std::string& OutputDirectory();

}  // namespace tesscpp
