// answers.h: the runtime's own JSON answers, shaped as FastAPI shapes them:
// a {"detail": ...} body, and 422s whose issues sit under "body" (or, for a
// component kind whose framework renders its own 422s, that framework's bytes).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "tesscpp/internal/runtime/runtime.h"
#include "tesscpp/status.h"
#include "tesscpp/validation_issue.h"
#include "tesscpp/value.h"

namespace tesscpp::runtime {

/// \brief `body` written as JSON (an unwritable body as "{}").
RuntimeResponse JsonResponse(int status, const Value& body, std::string content_type = "application/json");
/// \brief {"detail": detail}.
RuntimeResponse Detail(int status, std::string_view detail);
/// \brief A 422 listing `issues`, located under the request body.
RuntimeResponse Unprocessable(const std::vector<ValidationIssue>& issues);
/// \brief A 422 for `status`: its validation issues, a kind's own rendered
/// 422, or for a request-level problem with no issues of its own (an
/// unreadable body) one value_error at the body.
RuntimeResponse Unprocessable(const Status& status);
/// \brief The 422 of a POST without a body ("Field required").
RuntimeResponse MissingBody();

}  // namespace tesscpp::runtime
