// python_exception.h: which Python exception a failed Status becomes, in one
// table (internal). The C++ side only names the class; the bindings raise it.
#pragma once

#include "tesscpp/status.h"

namespace tesscpp::core {

/// \brief Where a Status meets Python code. The columns differ on purpose:
/// each follows the Python code its users compare us with.
enum class PythonContext {
  /// A call of the Python package failed in this process (bad arguments, a
  /// server out of reach, a missing endpoint): as tesseract-core's SDK raises.
  kCall,
  /// The server answered an error (not 422, which is pydantic's
  /// ValidationError): tesseract-core's SDK raises RuntimeError for every one.
  kServerAnswer,
  /// /test: the exception a C++ endpoint's failure stands for, named as
  /// Python code raising it would be (a missing key is a KeyError, ...).
  kTestEndpoint,
  /// The reason of a failed GPU transport check: tesseract-core's check
  /// tells bad input (ValueError) from everything else (RuntimeError).
  kTransportCheck,
};

/// \brief The name of a builtin exception class ("ValueError", ...).
const char* PythonExceptionName(StatusCode code, PythonContext context);

}  // namespace tesscpp::core
