// from_python.h: Python objects as Value trees. Containers and scalars are
// converted; arrays (anything with __dlpack__, __array__ or
// __cuda_array_interface__: NumPy, torch, CuPy, ...) become Tensors that
// borrow the caller's memory where it is C-contiguous and native-endian,
// and are copied once through NumPy otherwise.
#pragma once

#include <nanobind/nanobind.h>

#include "tesscpp/value.h"

namespace tesscpp::bindings {

/// \brief `handle` as a Value; raises TypeError naming the path of a value
/// that cannot be sent.
Value ToValue(nanobind::handle handle);

/// \brief The same, passing a value of any other type to `fallback` (a
/// callable returning something convertible: pydantic's
/// to_jsonable_python for a dumped model's dates, paths, enums).
Value ToValue(nanobind::handle handle, nanobind::handle fallback);

/// \brief A value that is JSON already (an error detail FastAPI rendered),
/// with integers beyond 64 bits, which a request may carry and a Value
/// cannot, as the nearest double (±inf beyond the double range). For
/// messages and in-process reports; the rendered text keeps them exact.
Value JsonDetailToValue(nanobind::handle handle);

}  // namespace tesscpp::bindings
