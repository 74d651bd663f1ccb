// cpp_kind.h: the C++ component kind served (internal): a Component
// (tesscpp/component.h), from a component library or linked in, behind the
// runtime that serves every kind. Its models, validation and FastAPI-identical
// OpenAPI document live in src/cpp_kind/; the Python module kind is its peer
// (python/bindings/python_component.cc).
#pragma once

#include <memory>

#include "tesscpp/component.h"
#include "tesscpp/internal/component/run_logger.h"
#include "tesscpp/internal/runtime/runtime.h"
#include "tesscpp/result.h"

namespace tesscpp::cpp_kind {

/// \brief Prepares every endpoint of `component` (models, OpenAPI document)
/// and the runtime that serves it. kInvalidArgument for a config that does
/// not validate. `mlflow_runs` makes the runs of its endpoints when
/// config.mlflow_tracking_uri is set (the client layer's MlflowRunLoggers;
/// kInvalidArgument when it is set and none is given).
Result<std::unique_ptr<Runtime>> MakeRuntime(std::shared_ptr<const Component> component, RuntimeConfig config,
                                             component::RunLoggerFactory mlflow_runs = nullptr);

}  // namespace tesscpp::cpp_kind
