// cpp_component.h: a C++ Component (tesscpp/component.h) as the runtime
// serves it (internal): its request and output models derived as
// tesseract-core derives them from InputSchema/OutputSchema, its OpenAPI
// document generated (openapi.h), its calls validated on both sides.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "tesscpp/component.h"
#include "tesscpp/internal/runtime/served_component.h"

namespace tesscpp::cpp_kind {

/// \brief The author's docstring of each endpoint `component` implements
/// (may be empty), keyed by the table's id.
std::map<core::EndpointId, std::string> EndpointDocs(const Component& component);

class CppComponent final : public ServedComponent {
 public:
  /// \brief Derives every model of the endpoints `component` implements;
  /// InputPath and OutputPath fields resolve against `input_path` and
  /// `output_path` (TESSERACT_INPUT_PATH, TESSERACT_OUTPUT_PATH).
  static Result<std::shared_ptr<const CppComponent>> Make(std::shared_ptr<const Component> component,
                                                          std::string input_path = ".",
                                                          std::string output_path = ".");

  std::string name() const override { return component_->name(); }
  bool Implements(core::EndpointId endpoint) const override;
  Result<runtime::ServedDocuments> Documents(const runtime::DocumentSettings& settings) const override;
  /// A component that does not accept device arrays gets host copies of any
  /// CUDA tensors in the request when the call runs.
  Result<runtime::PreparedCall> Prepare(core::EndpointId endpoint, const Value& body,
                                        std::string_view text) const override;

  struct Models;  // the derived models, per endpoint
  CppComponent(std::shared_ptr<const Component> component, std::shared_ptr<const Models> models);

 private:
  std::shared_ptr<const Component> component_;
  std::shared_ptr<const Models> models_;
};

}  // namespace tesscpp::cpp_kind
