// test_spec_runner.h: what the debug-mode /test endpoint does — run one
// endpoint on a TestSpec's payload and compare with its expected outputs or
// expected exception, answering {"status", "message", "endpoint"}.
//
// TestSpecs name Python exception classes. A C++ component raises none, so
// every failure is given the Python class a tesseract-core user would see for
// it (an invalid payload is a pydantic.ValidationError, an endpoint's
// kInvalidArgument or std::invalid_argument a ValueError, ...) and matched
// against the spec with Python's class hierarchy.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tesscpp/result.h"
#include "tesscpp/value.h"

namespace tesscpp::runtime {

/// \brief What running an endpoint on a payload gave.
struct EndpointOutcome {
  /// Set when the endpoint produced validated outputs.
  std::optional<Value> outputs;
  /// Otherwise the Python exception class it stands for ("ValueError",
  /// "pydantic.ValidationError", ...) and its message.
  std::string exception;
  std::string message;
  /// True when the failure was the payload's validation.
  bool invalid_payload = false;
};

using EndpointRunner = std::function<EndpointOutcome(const std::string& endpoint, const Value& payload)>;

/// \brief The Python exception class for a C++ exception type name or a
/// Status code name, as documented above.
std::string PythonExceptionFor(const std::string& cpp_exception_type, StatusCode code);

/// \brief Answers a /test body. kValidationError (issues for a 422) when the
/// body is not a TestSpec: missing fields, both or neither of
/// expected_outputs / expected_exception, an unknown exception name.
Result<Value> RunTestSpec(const Value& body, const std::vector<std::string>& endpoints,
                          const EndpointRunner& run);

}  // namespace tesscpp::runtime
