// callback_component.h: a component kind made of callbacks (test support,
// not part of the library). It shows that the runtime serves any kind
// through ServedComponent with no branch for it: the kind brings its exact
// OpenAPI document, as a Python module's would, and validates and runs its
// own requests.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <utility>

#include "tesscpp/internal/runtime/served_component.h"

namespace tesscpp::runtime {

class CallbackComponent final : public ServedComponent {
 public:
  /// Validates a request body into its call, as ServedComponent::Prepare.
  using Endpoint = std::function<Result<PreparedCall>(const Value& body)>;

  CallbackComponent(std::string name, Value document, std::map<core::EndpointId, Endpoint> endpoints)
      : name_(std::move(name)), document_(std::move(document)), endpoints_(std::move(endpoints)) {}

  std::string name() const override { return name_; }
  bool Implements(core::EndpointId endpoint) const override { return endpoints_.contains(endpoint); }
  // The document is the kind's own, whatever the runtime offers.
  Result<ServedDocuments> Documents(const DocumentSettings& /*settings*/) const override {
    return ServedDocuments{document_, std::nullopt, std::nullopt};
  }
  Result<PreparedCall> Prepare(core::EndpointId endpoint, const Value& body,
                               std::string_view /*text*/) const override {
    return endpoints_.at(endpoint)(body);
  }

 private:
  std::string name_;
  Value document_;
  std::map<core::EndpointId, Endpoint> endpoints_;
};

/// \brief vectoradd (s·a + b, and its jacobian) as callbacks, serving
/// `document` (tesseract-runtime's OpenAPI document of the Python twin,
/// tests/data/golden/runtime/vectoradd.openapi.json). Validates what it
/// reads (float32 vectors a and b of one length, a number s, a boolean
/// normalize is refused as unsupported), naming the field as pydantic would.
std::shared_ptr<const CallbackComponent> CallbackVectoradd(Value document);

}  // namespace tesscpp::runtime
