// forward_reuse.h: state an apply keeps for the derivative calls at the same
// inputs, so that a VJP after an apply runs the reverse pass only
// (docs/forward-reuse.md): what a call asks (ForwardReuse) and what a
// component keeps and finds.
//
// A client asks an apply to keep (tesscpp's forward-reuse extension of the
// protocol) and refers its following VJP/JVP/jacobian calls to what was kept.
// The server stores the state, bounded in bytes and time, and hands it back
// only to a derivative call at inputs equal to the apply's (compared by
// content and type); otherwise, and whenever it is gone (evicted, released,
// another worker), the derivative endpoint gets nothing and recomputes. So an
// endpoint must always work without it.
//
//   c.Apply([=](const ModelView& in, Record& out) -> Status {
//     auto solution = Solve(in);                       // the expensive forward
//     if (tesscpp::KeepRequested()) {
//       tesscpp::KeepForDerivatives(std::make_shared<const Solution>(solution), solution.bytes());
//     }
//     ...
//   });
//   c.VectorJacobianProduct([=](const ModelView& in, ..., TensorMap& vjp) -> Status {
//     std::shared_ptr<const Solution> solution = tesscpp::Kept<Solution>();
//     if (solution == nullptr) solution = std::make_shared<const Solution>(Solve(in));
//     ...
//   });
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <typeinfo>
#include <vector>

namespace tesscpp {

/// \brief Forward reuse for one call (tesscpp's extension of the protocol,
/// docs/forward-reuse.md): an apply keeps what the derivative calls at its
/// inputs need, and those calls run the reverse pass only. A server without
/// the extension answers as it always does, with nothing kept. What a
/// client's call (Tesseract::Call, a Runtime's in-process call) says.
struct ForwardReuse {
  /// In, apply: ask the server to keep.
  bool keep = false;
  /// In, jacobian/JVP/VJP: the reference of what an apply at the same inputs
  /// kept. Out, apply with `keep`: that reference; empty when nothing was kept
  /// (a server without the extension, a component
  /// that keeps nothing, state beyond the server's budget).
  std::string residuals;
  /// Out, a derivative call that referred: "hit", or "recomputed: <why>"
  /// (the answer is the same either way); empty when the server did not say.
  std::string used;
  /// In, any call: references this client is done with; the server frees them.
  std::vector<std::string> release;
};

/// \brief In apply: whether the caller asked to keep state for the derivative
/// calls at these inputs. Without a request, keeping is skipped: do not
/// spend work on state nobody will read.
bool KeepRequested();

/// \brief In apply, when KeepRequested(): keeps `state` for the derivative
/// calls at the same inputs. `host_bytes` and `device_bytes` are what it
/// holds, counted against the server's budgets (state beyond a budget is not
/// kept). `type` names the state's type for Kept (typeid(T).name()). A second
/// call replaces the first; outside a kept apply it does nothing.
void KeepForDerivatives(std::shared_ptr<const void> state, std::string_view type, int64_t host_bytes,
                        int64_t device_bytes = 0);

template <typename T>
void KeepForDerivatives(std::shared_ptr<const T> state, int64_t host_bytes, int64_t device_bytes = 0) {
  KeepForDerivatives(std::static_pointer_cast<const void>(std::move(state)), typeid(T).name(), host_bytes,
                     device_bytes);
}

/// \brief In a derivative endpoint: the state an apply at these same inputs
/// kept as type `type`, or null (nothing kept, or not of that type).
std::shared_ptr<const void> KeptState(std::string_view type);

template <typename T>
std::shared_ptr<const T> Kept() {
  return std::static_pointer_cast<const T>(KeptState(typeid(T).name()));
}

}  // namespace tesscpp
