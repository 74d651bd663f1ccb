// runtime_post.h: a JSON POST handed to a Runtime directly, with extra
// headers, and a header of its answer (test support for the runtime-level
// forward-reuse tests).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "tesscpp/buffer.h"
#include "tesscpp/internal/runtime/runtime.h"

namespace tesscpp::testing {

inline RuntimeResponse PostJson(Runtime& runtime, const std::string& endpoint, const std::string& body,
                                std::vector<std::pair<std::string, std::string>> headers = {}) {
  RuntimeRequest request;
  request.method = "POST";
  request.target = "/" + endpoint;
  request.content_type = "application/json";
  request.accept = "application/json";
  request.body = Buffer::FromString(body);
  request.headers = std::move(headers);
  return runtime.Handle(request);
}

/// \brief The value of the answer's header `name`, or "".
inline std::string HeaderOf(const RuntimeResponse& response, const std::string& name) {
  for (const auto& [key, value] : response.headers) {
    if (key == name) return value;
  }
  return "";
}

}  // namespace tesscpp::testing
