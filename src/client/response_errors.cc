// response_errors.cc: non-2xx answers as Statuses — FastAPI's 422 detail list
// as validation issues printed like pydantic, the 406 detail naming what the
// server offers, anything else with its status and body.
#include "client/response_errors.h"

#include <memory>

#include "core/http_status.h"
#include "tesscpp/internal/codec/json.h"
#include "tesscpp/validation_issue.h"

namespace tesscpp::client {
namespace {

// "a.b.0.c", as pydantic prints a location.
std::string JoinLoc(const std::vector<Value>& loc) {
  std::string out;
  for (const Value& part : loc) {
    if (!out.empty()) out += '.';
    if (part.is_string()) {
      out += part.as_string();
    } else if (part.is_int()) {
      out += std::to_string(part.as_int());
    } else {
      out += "?";
    }
  }
  return out;
}

// A 422 body's detail list as a validation failure printed like pydantic's
// ValidationError ("2 validation errors for endpoint apply\nbody.inputs.a\n  msg [type=...]").
std::optional<Status> ValidationErrorFrom(const Value& body, std::string_view endpoint) {
  const Value* detail = body.is_dict() ? body.as_dict().find("detail") : nullptr;
  if (detail == nullptr || !detail->is_list()) return std::nullopt;
  std::vector<ValidationIssue> issues;
  for (const Value& item : detail->as_list()) {
    if (!item.is_dict()) return std::nullopt;
    const Value::Dict& d = item.as_dict();
    const Value* type = d.find("type");
    const Value* loc = d.find("loc");
    if (type == nullptr || !type->is_string() || loc == nullptr || !loc->is_list()) return std::nullopt;
    const Value* msg = d.find("msg");
    const Value* input = d.find("input");
    const Value* ctx = d.find("ctx");
    issues.push_back({type->as_string(), loc->as_list(),
                      msg != nullptr && msg->is_string() ? msg->as_string() : "",
                      input != nullptr ? *input : Value(), ctx != nullptr ? *ctx : Value()});
  }
  if (issues.empty()) return std::nullopt;
  std::string text = std::to_string(issues.size()) +
                     (issues.size() == 1 ? " validation error" : " validation errors") + " for endpoint " +
                     std::string(endpoint);
  for (const ValidationIssue& issue : issues)
    text += "\n" + JoinLoc(issue.loc) + "\n  " + issue.msg + " [type=" + issue.type + "]";
  Status failure = ValidationFailure(std::move(issues));
  return Status(StatusCode::kValidationError, text).WithDetail(failure.detail());
}

std::string ListOf(const Value::Dict& detail, std::string_view key) {
  const Value* values = detail.find(key);
  if (values == nullptr || !values->is_list()) return "?";
  std::string out;
  for (const Value& v : values->as_list())
    out += (out.empty() ? "" : ", ") + (v.is_string() ? v.as_string() : "?");
  return "[" + out + "]";
}

}  // namespace

Status ErrorFromResponse(const HttpResponse& response, std::string_view endpoint,
                         const std::optional<std::string>& accept) {
  const std::string text(response.body.string_view());
  auto http = std::make_shared<HttpErrorDetail>(response.status, text);
  if (response.status == 422 || response.status == 406) {
    auto body = ReadJson(response.body);
    if (body.ok() && response.status == 422) {
      if (auto failure = ValidationErrorFrom(*body, endpoint)) return *failure;
    }
    const Value* detail = body.ok() && body->is_dict() ? body->as_dict().find("detail") : nullptr;
    if (response.status == 406 && detail != nullptr && detail->is_dict()) {
      const Value::Dict& d = detail->as_dict();
      const Value* message = d.find("message");
      return Status::NotAcceptable(
                 "The Tesseract cannot answer ", endpoint, " with Accept '", accept.value_or(""), "'",
                 message != nullptr && message->is_string() ? ": " + message->as_string() : "",
                 ". It offers output formats ", ListOf(d, "available_formats"), ", gpu transports ",
                 ListOf(d, "available_gpu_transports"), ", compressions ",
                 ListOf(d, "available_compressions"))
          .WithDetail(http);
    }
  }
  return Status(core::StatusCodeForHttp(response.status), http->ToString()).WithDetail(http);
}

}  // namespace tesscpp::client
