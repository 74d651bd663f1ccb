// validation_issue.cc: ValidationDetail and the helpers that build, prefix and print it.
#include "tesscpp/validation_issue.h"

#include <sstream>

namespace tesscpp {
namespace {

std::string LocText(const std::vector<Value>& loc) {
  std::string out;
  for (const Value& part : loc) {
    if (!out.empty()) out += '.';
    out += part.is_string() ? part.as_string() : std::to_string(part.as_int());
  }
  return out;
}

std::string Summary(const std::vector<ValidationIssue>& issues) {
  std::ostringstream out;
  out << issues.size() << (issues.size() == 1 ? " validation error" : " validation errors");
  for (const ValidationIssue& issue : issues) {
    out << "\n  " << (issue.loc.empty() ? "(root)" : LocText(issue.loc)) << ": " << issue.msg
        << " [type=" << issue.type << "]";
  }
  return out.str();
}

}  // namespace

std::string ValidationDetail::ToString() const { return Summary(issues_); }

Status ValidationFailure(std::vector<ValidationIssue> issues) {
  std::string message = Summary(issues);
  return Status::ValidationError(std::move(message))
      .WithDetail(std::make_shared<const ValidationDetail>(std::move(issues)));
}

Status ValidationFailure(std::string type, std::string msg, Value input, Value ctx) {
  return ValidationFailure(
      {ValidationIssue{std::move(type), {}, std::move(msg), std::move(input), std::move(ctx)}});
}

const ValidationDetail* GetValidationDetail(const Status& status) {
  const auto& detail = status.detail();
  if (detail == nullptr || detail->type_id() != ValidationDetail::kTypeId) return nullptr;
  return static_cast<const ValidationDetail*>(detail.get());
}

Status PrefixLocation(const Status& status, const std::vector<Value>& prefix) {
  if (status.ok() || prefix.empty()) return status;
  const ValidationDetail* detail = GetValidationDetail(status);
  if (detail == nullptr) return status.WithContext(LocText(prefix));
  std::vector<ValidationIssue> issues = detail->issues();
  for (ValidationIssue& issue : issues) issue.loc.insert(issue.loc.begin(), prefix.begin(), prefix.end());
  return status.WithContext(LocText(prefix))
      .WithDetail(std::make_shared<const ValidationDetail>(std::move(issues)));
}

Value ValidationIssuesToJson(const std::vector<ValidationIssue>& issues,
                             const std::vector<Value>& loc_prefix) {
  Value::List items;
  for (const ValidationIssue& issue : issues) {
    Value::List loc(loc_prefix.begin(), loc_prefix.end());
    loc.insert(loc.end(), issue.loc.begin(), issue.loc.end());
    Value::Dict item{
        {"type", issue.type}, {"loc", Value(std::move(loc))}, {"msg", issue.msg}, {"input", issue.input}};
    if (!issue.ctx.is_null()) item.set("ctx", issue.ctx);
    items.push_back(Value(std::move(item)));
  }
  return Value::Dict{{"detail", Value(std::move(items))}};
}

}  // namespace tesscpp
