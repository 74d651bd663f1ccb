// array_coercion.h: bringing an array to the shape and dtype its field asks for (internal).
#pragma once

#include <complex>

#include "tesscpp/internal/schema/array_cast.h"
#include "tesscpp/result.h"
#include "tesscpp/schema.h"
#include "tesscpp/tensor.h"
#include "tesscpp/value.h"

namespace tesscpp {
class BufferPool;
}

namespace tesscpp::schema {

/// \brief np.broadcast_to: size-1 dimensions repeat up to `shape` (a copy).
/// Precondition: same rank, and every dimension equal or 1.
Result<Tensor> BroadcastTo(const Tensor& t, const Shape& shape, BufferPool* pool);

/// \brief Element `i` (C order) of a CPU tensor of any dtype, as a complex
/// double (real dtypes have imaginary part 0). For comparisons, not for casts.
std::complex<double> ElementAt(const Tensor& t, int64_t i);

/// \brief Validates one array field value (a decoded Tensor, or a JSON number,
/// bool or nested list) against an array type, with the reference's issues.
Result<Value> CoerceArray(const SchemaType& type, const Value& input, BufferPool* pool);

}  // namespace tesscpp::schema
