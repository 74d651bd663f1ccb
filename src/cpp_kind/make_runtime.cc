#include "tesscpp/internal/cpp_kind/cpp_kind.h"

#include <utility>

#include "cpp_kind/cpp_component.h"

namespace tesscpp::cpp_kind {

Result<std::unique_ptr<Runtime>> MakeRuntime(std::shared_ptr<const Component> component, RuntimeConfig config,
                                             component::RunLoggerFactory mlflow_runs) {
  TESS_ASSIGN_OR_RETURN(std::shared_ptr<const CppComponent> served,
                        CppComponent::Make(std::move(component), config.input_path, config.output_path));
  return Runtime::Make(std::shared_ptr<const ServedComponent>(std::move(served)), std::move(config),
                       std::move(mlflow_runs));
}

}  // namespace tesscpp::cpp_kind
