// endpoint_failure.h: how a failing call becomes an answer. Any component
// kind's code may throw, in its calls and in its validation; none may reach
// the server's threads, where it would end the process, so calls run
// Guarded, and a failure carries the exception type a tesseract-core user
// would see (the /test endpoint matches it, debug tracebacks show it).
#pragma once

#include <string>
#include <utility>

#include "tesscpp/internal/runtime/failure_details.h"
#include "tesscpp/internal/runtime/served_component.h"
#include "tesscpp/result.h"
#include "tesscpp/status.h"
#include "tesscpp/value.h"

namespace tesscpp::runtime {

/// \brief The Status of the exception being handled (only in a catch
/// block): kInternal with an ExceptionDetail naming its demangled C++ type
/// and the Python class it stands for.
Status CurrentExceptionStatus(std::string message);

/// \brief Runs `fn` (returning a Result or a Status), turning a C++
/// exception out of it into CurrentExceptionStatus.
template <typename Fn>
auto Guarded(Fn&& fn) -> decltype(fn()) {
  try {
    return std::forward<Fn>(fn)();
  } catch (const std::exception& e) {
    return CurrentExceptionStatus(e.what());
  } catch (...) {
    return CurrentExceptionStatus("non-standard exception");
  }
}
/// \brief A prepared call, run Guarded.
Result<Value> Guarded(const PreparedCall& call, const CallContext& context = {});

/// \brief What an endpoint failure becomes: the reference's plain 500, or in
/// debug mode a traceback-shaped text with the failure's type and message.
struct EndpointFailure {
  std::string type;
  std::string message;
  std::string traceback;  // the kind's own report, when it has one
};
EndpointFailure FailureOf(const Status& status);

/// \brief A failure of the runtime's own around a call (the run directory,
/// the capture), reported as the Python runtime's OSError would be.
Status OsError(const Status& status);

}  // namespace tesscpp::runtime
