// kept_state.h: the state of tesscpp/forward_reuse.h as the layers above see
// it (internal). The runtime puts a KeepSlot on the thread that runs an apply
// a client asked to keep (ScopedKeep), and the state it found for a derivative
// call (ScopedKept); the component's code reaches them through the public
// functions, as run tracking reaches its logger.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace tesscpp::component {

/// \brief What an apply kept, with the bytes it holds.
struct Residual {
  std::shared_ptr<const void> state;
  std::string type;  ///< typeid(T).name() of what `state` points to
  int64_t host_bytes = 0;
  int64_t device_bytes = 0;
};

/// \brief While alive, KeepRequested() is true on this thread and
/// KeepForDerivatives fills `slot` (nothing nests across threads: state kept
/// by threads the apply started is not seen).
class ScopedKeep {
 public:
  explicit ScopedKeep(Residual* slot);
  ~ScopedKeep();
  ScopedKeep(const ScopedKeep&) = delete;
  ScopedKeep& operator=(const ScopedKeep&) = delete;

 private:
  Residual* previous_;
};

/// \brief While alive, Kept() on this thread reads `found` (null: none).
class ScopedKept {
 public:
  explicit ScopedKept(std::shared_ptr<const Residual> found);
  ~ScopedKept();
  ScopedKept(const ScopedKept&) = delete;
  ScopedKept& operator=(const ScopedKept&) = delete;

 private:
  std::shared_ptr<const Residual> previous_;
};

}  // namespace tesscpp::component
