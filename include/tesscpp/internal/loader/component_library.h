// component_library.h: loading a component library (lib<name>.so).
#pragma once

#include <memory>
#include <string>

#include "tesscpp/result.h"

namespace tesscpp {

class Component;

/// \brief An opened component library and the Component it created. The
/// library stays loaded while this lives (and is closed after the component is
/// destroyed).
class ComponentLibrary {
 public:
  /// \brief dlopens `path`, checks the entry point's ABI version and build
  /// signature against this process's, and creates the component. kNotFound
  /// for a missing file or entry point, kInvalidArgument for an ABI mismatch,
  /// kInternal when the component's factory throws (with its message).
  static Result<std::shared_ptr<const ComponentLibrary>> Open(const std::string& path);

  ~ComponentLibrary();
  ComponentLibrary(const ComponentLibrary&) = delete;
  ComponentLibrary& operator=(const ComponentLibrary&) = delete;

  const Component& component() const { return *component_; }
  const std::string& path() const { return path_; }

 private:
  ComponentLibrary() = default;
  std::string path_;
  void* handle_ = nullptr;
  void (*destroy_)(void*) = nullptr;
  Component* component_ = nullptr;
};

}  // namespace tesscpp
