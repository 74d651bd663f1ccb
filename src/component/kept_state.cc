// kept_state.cc: tesscpp/forward_reuse.h over the slots the runtime puts on
// the calling thread.
#include "tesscpp/internal/component/kept_state.h"

#include <string>
#include <utility>

#include "tesscpp/forward_reuse.h"

namespace tesscpp {
namespace component {
namespace {
// Per thread, as the run logger: concurrent calls each keep their own.
thread_local Residual* keep_slot = nullptr;
thread_local std::shared_ptr<const Residual> kept;
}  // namespace

ScopedKeep::ScopedKeep(Residual* slot) : previous_(keep_slot) { keep_slot = slot; }
ScopedKeep::~ScopedKeep() { keep_slot = previous_; }

ScopedKept::ScopedKept(std::shared_ptr<const Residual> found) : previous_(std::move(kept)) {
  kept = std::move(found);
}
ScopedKept::~ScopedKept() { kept = std::move(previous_); }

}  // namespace component

bool KeepRequested() { return component::keep_slot != nullptr; }

void KeepForDerivatives(std::shared_ptr<const void> state, std::string_view type, int64_t host_bytes,
                        int64_t device_bytes) {
  if (component::keep_slot == nullptr || state == nullptr) return;
  *component::keep_slot = component::Residual{std::move(state), std::string(type), host_bytes, device_bytes};
}

std::shared_ptr<const void> KeptState(std::string_view type) {
  if (component::kept == nullptr || component::kept->type != type) return nullptr;
  return component::kept->state;
}

}  // namespace tesscpp
