#include "runtime/endpoint_failure.h"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>
#include <typeinfo>

#include "runtime/test_spec_runner.h"
#include "tesscpp/internal/runtime/failure_details.h"

namespace tesscpp::runtime {
namespace {

// The type name of the exception being handled, demangled.
std::string CurrentExceptionType() {
  const std::type_info* type = abi::__cxa_current_exception_type();
  if (type == nullptr) return "unknown exception";
  int status = 0;
  char* name = abi::__cxa_demangle(type->name(), nullptr, nullptr, &status);
  std::string out = status == 0 && name != nullptr ? name : type->name();
  std::free(name);  // NOLINT(cppcoreguidelines-no-malloc): __cxa_demangle allocates with malloc
  return out;
}

}  // namespace

Status CurrentExceptionStatus(std::string message) {
  const std::string type = CurrentExceptionType();
  return Status::Internal(std::move(message))
      .WithDetail(std::make_shared<ExceptionDetail>(type, PythonExceptionFor(type, StatusCode::kInternal)));
}

Result<Value> Guarded(const PreparedCall& call, const CallContext& context) {
  return Guarded([&] { return call(context); });
}

EndpointFailure FailureOf(const Status& status) {
  const ExceptionDetail* exception = GetExceptionDetail(status);
  if (exception == nullptr) return {"Error", status.message(), {}};
  return {exception->type(), status.message(), exception->traceback()};
}

Status OsError(const Status& status) {
  return status.WithDetail(std::make_shared<ExceptionDetail>("OSError", "OSError"));
}

}  // namespace tesscpp::runtime
