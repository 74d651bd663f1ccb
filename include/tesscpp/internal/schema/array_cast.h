// array_cast.h: dtype casts that refuse to lose values, as the runtime applies
// them to arrays a field declares in another dtype (the tree's own API; the
// JAX bridge's custom call casts answers with it too).
#pragma once

#include "tesscpp/dtype.h"
#include "tesscpp/result.h"
#include "tesscpp/tensor.h"

namespace tesscpp {
class BufferPool;
}

namespace tesscpp::schema {

/// \brief The reference's `_castable`: NumPy's same_kind rule, plus integer to
/// integer in any direction (values are range-checked when cast).
bool Castable(Dtype from, Dtype to);

/// \brief Casts refusing to lose values, like the reference's `_astype_checked`:
/// fractional or non-finite floats into integers (array_expected_integer),
/// integers beyond the target's range and finite floats that overflow to inf
/// (array_value_out_of_range). Returns `t` itself when the dtype already matches.
/// `pool` null: BufferPool::Default().
Result<Tensor> CastChecked(const Tensor& t, Dtype to, BufferPool* pool);

}  // namespace tesscpp::schema
