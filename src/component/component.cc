// Component: the endpoints a C++ Tesseract implements.
#include "tesscpp/component.h"

namespace tesscpp {

Component::Component(std::string name, std::string version, std::string description)
    : name_(std::move(name)), version_(std::move(version)), description_(std::move(description)) {}

Component& Component::Apply(ApplyFn fn, std::string doc) {
  apply_ = {std::move(fn), std::move(doc)};
  return *this;
}
Component& Component::AbstractEval(AbstractEvalFn fn, std::string doc) {
  abstract_eval_ = {std::move(fn), std::move(doc)};
  return *this;
}
Component& Component::Jacobian(JacobianFn fn, std::string doc) {
  jacobian_ = {std::move(fn), std::move(doc)};
  return *this;
}
Component& Component::JacobianVectorProduct(JvpFn fn, std::string doc) {
  jvp_ = {std::move(fn), std::move(doc)};
  return *this;
}
Component& Component::VectorJacobianProduct(VjpFn fn, std::string doc) {
  vjp_ = {std::move(fn), std::move(doc)};
  return *this;
}
Component& Component::HessianVectorProduct(HvpFn fn, std::string doc) {
  hvp_ = {std::move(fn), std::move(doc)};
  return *this;
}

namespace internal {
void DestroyComponent(void* component) { delete static_cast<Component*>(component); }
}  // namespace internal

}  // namespace tesscpp
