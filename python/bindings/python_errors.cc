#include "python_errors.h"

#include <string>

#include "tesscpp/client.h"
#include "tesscpp/internal/core/python_exception.h"
#include "tesscpp/validation_issue.h"
#include "to_python.h"

namespace tesscpp::bindings {
namespace {

namespace nb = nanobind;

nb::object IssueToPython(const ValidationIssue& issue) {
  nb::list loc;
  for (const Value& part : issue.loc) loc.append(ToPython(part));
  nb::dict item;
  item["type"] = nb::str(issue.type.c_str());
  item["loc"] = nb::tuple(loc);
  item["msg"] = nb::str(issue.msg.c_str());
  item["input"] = ToPython(issue.input);
  item["ctx"] = ToPython(issue.ctx);
  return item;
}

// pydantic's title is what follows " for " on the first line of the summary
// ("2 validation errors for endpoint apply"); "" when the summary names none.
std::string ValidationTitle(const std::string& message) {
  const std::string first_line = message.substr(0, message.find('\n'));
  const size_t at = first_line.find(" for ");
  return at == std::string::npos ? std::string() : first_line.substr(at + 5);
}

}  // namespace

[[noreturn]] void RaiseStatus(const Status& status) {
  const std::string& message = status.message();
  if (const ValidationDetail* detail = GetValidationDetail(status); detail != nullptr) {
    nb::list errors;
    for (const ValidationIssue& issue : detail->issues()) errors.append(IssueToPython(issue));
    nb::tuple args =
        nb::make_tuple(nb::str(message.c_str()), nb::str(ValidationTitle(message).c_str()), errors);
    PyErr_SetObject(ValidationFailureType().ptr(), args.ptr());
    throw nb::python_error();
  }
  const core::PythonContext context =
      GetHttpErrorDetail(status) != nullptr ? core::PythonContext::kServerAnswer : core::PythonContext::kCall;
  const nb::object type =
      nb::module_::import_("builtins").attr(core::PythonExceptionName(status.code(), context));
  nb::object error = type(nb::str(message.c_str()));
  // Detail that is not part of the message, as an exception note (the
  // message stays what callers match on).
  if (const ServedEndpointsDetail* served = GetServedEndpointsDetail(status); served != nullptr) {
    error.attr("add_note")(nb::str(served->ToString().c_str()));
  }
  PyErr_SetObject(type.ptr(), error.ptr());
  throw nb::python_error();
}

nb::object& ValidationFailureType() {
  static auto* type = new nb::object();  // leaked: must outlive interpreter teardown order
  return *type;
}

}  // namespace tesscpp::bindings
