#include "runtime/answers.h"

#include <utility>

#include "tesscpp/internal/codec/json.h"
#include "tesscpp/internal/runtime/failure_details.h"

namespace tesscpp::runtime {

RuntimeResponse JsonResponse(int status, const Value& body, std::string content_type) {
  RuntimeResponse r;
  r.status = status;
  r.content_type = std::move(content_type);
  auto bytes = WriteJson(body);
  r.body = bytes.ok() ? *std::move(bytes) : Buffer::FromString("{}");
  return r;
}

RuntimeResponse Detail(int status, std::string_view detail) {
  return JsonResponse(status, Value::Dict{{"detail", Value(detail)}});
}

RuntimeResponse Unprocessable(const std::vector<ValidationIssue>& issues) {
  return JsonResponse(422, ValidationIssuesToJson(issues, {Value("body")}));
}

RuntimeResponse Unprocessable(const Status& status) {
  if (const ValidationDetail* detail = GetValidationDetail(status)) {
    // A kind whose framework renders its own 422s (FastAPI's bytes) is answered with them.
    if (const auto* rendered = dynamic_cast<const RenderedValidationDetail*>(detail)) {
      RuntimeResponse r;
      r.status = 422;
      r.body = Buffer::FromString(rendered->body());
      return r;
    }
    return Unprocessable(detail->issues());
  }
  return Unprocessable(std::vector<ValidationIssue>{{"value_error",
                                                     {},
                                                     "Value error, " + status.message(),
                                                     Value(),
                                                     Value::Dict{{"error", Value::Dict{}}}}});
}

RuntimeResponse MissingBody() {
  return Unprocessable(std::vector<ValidationIssue>{{"missing", {}, "Field required", Value(), Value()}});
}

}  // namespace tesscpp::runtime
