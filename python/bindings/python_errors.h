// python_errors.h: a failed Status raised as the Python exception a
// tesseract-core user expects (core/python_exception.h holds the table of
// exception names; this file adds pydantic-style validation failures and
// exception notes).
#pragma once

#include <nanobind/nanobind.h>

#include <utility>

#include "tesscpp/result.h"
#include "tesscpp/status.h"

namespace tesscpp::bindings {

/// \brief tesscpp._tesscpp.ValidationFailure(message, title, errors): a 422 or
/// a failed in-process validation. The Python layer turns it into pydantic's
/// ValidationError when pydantic is importable. Set when the module loads.
nanobind::object& ValidationFailureType();

/// \brief Raises `status` (not OK) as a Python exception.
[[noreturn]] void RaiseStatus(const Status& status);

/// \brief The value of `result`, or its error raised.
template <typename T>
T Unwrap(Result<T> result) {
  if (!result.ok()) RaiseStatus(result.status());
  return std::move(result).value();
}

/// \brief Raises `status` unless it is OK.
inline void Check(const Status& status) {
  if (!status.ok()) RaiseStatus(status);
}

}  // namespace tesscpp::bindings
