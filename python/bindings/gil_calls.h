// gil_calls.h: C++ work around the GIL. Calls into the client run with the
// GIL released; Python objects that C++ code holds are released with it taken.
#pragma once

#include <nanobind/nanobind.h>

#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

#include "python_errors.h"
#include "tesscpp/status.h"
#include "to_python.h"

namespace tesscpp::bindings {

// Holds a Python object from C++ code that may run without the GIL; the last
// reference is dropped with the GIL taken.
template <typename T>
std::shared_ptr<T> GilShared(T object) {
  return std::shared_ptr<T>(new T(std::move(object)), [](T* p) {
    nanobind::gil_scoped_acquire gil;
    delete p;
  });
}

/// \brief Takes the GIL, as nanobind::gil_scoped_acquire, on a thread that may
/// not be Python's (the server's), keeping the thread's Python state.
///
/// On a thread without one, PyGILState_Ensure creates a thread state and the
/// matching Release destroys it, with the frame stack CPython allocated for
/// it: twice per request for a Python module (validation, then the call).
/// The first acquisition on such a thread leaves the state's count at one, so
/// later releases only drop the GIL. The server's threads live as long as the
/// process; their states are freed when the interpreter finalizes, and in a
/// forked worker PyOS_AfterFork_Child drops those of threads left behind.
class ThreadGil {
 private:
  struct KeptState {
    KeptState() {
      thread_local bool kept = false;
      if (kept) return;
      kept = true;
      if (PyGILState_GetThisThreadState() != nullptr) return;  // Python's thread
      (void)PyGILState_Ensure();
      (void)PyEval_SaveThread();
    }
  };
  KeptState kept_;  // before gil_: members are made in this order
  nanobind::gil_scoped_acquire gil_;
};

/// \brief The numpy module, imported once.
inline nanobind::object& NumpyModule() {
  static auto* numpy = new nanobind::object(nanobind::module_::import_("numpy"));
  return *numpy;
}

// Runs `call` (returning a Result<T> or a Status) without the GIL, then
// returns the T (or nothing) with the GIL taken again, raising on an error.
template <typename Fn>
auto Released(Fn&& call) {
  using Outcome = decltype(call());
  std::optional<Outcome> outcome;
  {
    nanobind::gil_scoped_release release;
    outcome.emplace(call());
  }
  if constexpr (std::is_same_v<Outcome, Status>) {
    Check(*outcome);
  } else {
    return Unwrap(*std::move(outcome));
  }
}

// Runs `call` without the GIL and converts its answer (or raises).
template <typename Fn>
nanobind::object CallReleased(Fn&& call) {
  return ToPython(Released(std::forward<Fn>(call)));
}

}  // namespace tesscpp::bindings
