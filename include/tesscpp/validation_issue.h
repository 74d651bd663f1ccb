// validation_issue.h: validation issues shaped like pydantic's, carried by a Status.
//
// A request that does not fit its schema fails with kValidationError and a
// ValidationDetail listing every problem as pydantic reports it: a type
// ("missing", "int_parsing", "array_shape_mismatch", ...), a location (field
// names, list indices, dict keys), a message, the offending input and a context.
// The runtime turns the list into FastAPI's 422 body; the Python SDK rebuilds a
// pydantic.ValidationError from it.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tesscpp/status.h"
#include "tesscpp/value.h"

namespace tesscpp {

/// \brief One problem, as one item of pydantic's ValidationError.errors().
struct ValidationIssue {
  std::string type;        ///< pydantic's error type, e.g. "missing"
  std::vector<Value> loc;  ///< path from the validated root: strings and ints
  std::string msg;         ///< human-readable message
  Value input;             ///< the offending input (null when unknown)
  Value ctx;               ///< a dict of details, or null for none
};

/// \brief The issues of a failed validation, attached to its Status.
class ValidationDetail : public StatusDetail {
 public:
  static constexpr std::string_view kTypeId = "tesscpp::ValidationDetail";

  explicit ValidationDetail(std::vector<ValidationIssue> issues) : issues_(std::move(issues)) {}
  std::string_view type_id() const override { return kTypeId; }
  /// \brief One line per issue: "loc.path: msg [type=...]".
  std::string ToString() const override;

  const std::vector<ValidationIssue>& issues() const { return issues_; }

 private:
  std::vector<ValidationIssue> issues_;
};

/// \brief A kValidationError whose message summarises `issues` and whose detail
/// holds them. `issues` must not be empty.
Status ValidationFailure(std::vector<ValidationIssue> issues);

/// \brief A kValidationError with a single issue.
Status ValidationFailure(std::string type, std::string msg, Value input = Value(), Value ctx = Value());

/// \brief The issues of `status`, or nullptr when it carries none.
const ValidationDetail* GetValidationDetail(const Status& status);

/// \brief The same failure with `prefix` prepended to every issue's loc, and as
/// context to the message. Statuses without issues get the message context only.
Status PrefixLocation(const Status& status, const std::vector<Value>& prefix);

/// \brief FastAPI's 422 body: {"detail": [{"type", "loc", "msg", "input", "ctx"?}]},
/// each loc prefixed with `loc_prefix` (FastAPI's is ["body"]).
Value ValidationIssuesToJson(const std::vector<ValidationIssue>& issues,
                             const std::vector<Value>& loc_prefix);

}  // namespace tesscpp
