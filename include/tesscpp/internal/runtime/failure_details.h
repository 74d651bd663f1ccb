// failure_details.h: what a component kind attaches to a failed call's Status
// for the runtime to answer as the kind's framework would (internal): the
// exception it raised (ExceptionDetail), or a 422 body its framework rendered
// (RenderedValidationDetail).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tesscpp/status.h"
#include "tesscpp/validation_issue.h"

namespace tesscpp::runtime {

/// \brief Validation issues whose 422 body the component's own framework
/// rendered (FastAPI's bytes for a Python module). The runtime answers with
/// `body()` as it is; everything else reads the issues, as of any
/// ValidationDetail (GetValidationDetail finds it).
class RenderedValidationDetail final : public ValidationDetail {
 public:
  RenderedValidationDetail(std::vector<ValidationIssue> issues, std::string body)
      : ValidationDetail(std::move(issues)), body_(std::move(body)) {}
  const std::string& body() const { return body_; }

 private:
  std::string body_;
};

/// \brief The exception that made a call fail: `type` as raised (a C++ type
/// "std::invalid_argument", a Python one "ValueError"), shown in debug-mode
/// tracebacks and in-process errors; `python_type` the Python class a
/// tesseract-core user sees for it, which /test matches against.
class ExceptionDetail : public StatusDetail {
 public:
  static constexpr std::string_view kTypeId = "tesscpp::runtime::ExceptionDetail";

  /// `traceback`: the whole report, where the kind has one (a Python
  /// traceback), which debug-mode 500s show as tesseract-runtime does.
  ExceptionDetail(std::string type, std::string python_type, std::string traceback = {})
      : type_(std::move(type)), python_type_(std::move(python_type)), traceback_(std::move(traceback)) {}
  std::string_view type_id() const override { return kTypeId; }
  std::string ToString() const override { return type_; }

  const std::string& type() const { return type_; }
  const std::string& python_type() const { return python_type_; }
  const std::string& traceback() const { return traceback_; }

 private:
  std::string type_;
  std::string python_type_;
  std::string traceback_;
};

/// \brief The ExceptionDetail `status` carries, or null.
inline const ExceptionDetail* GetExceptionDetail(const Status& status) {
  const auto& detail = status.detail();
  if (detail == nullptr || detail->type_id() != ExceptionDetail::kTypeId) return nullptr;
  return static_cast<const ExceptionDetail*>(detail.get());
}

}  // namespace tesscpp::runtime
