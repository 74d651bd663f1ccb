// kept_inputs.h: the request inputs forward reuse keeps and compares
// (docs/forward-reuse.md §2): an entry's key, and the server's own copy of
// device inputs that a kept apply runs on.
#pragma once

#include "tesscpp/result.h"
#include "tesscpp/value.h"

namespace tesscpp::runtime {

/// \brief Whether two request inputs are the same: like Value equality, but
/// floats compare by their bits (-0.0 is not 0.0 to a function that reads
/// the sign, and NaN is itself). Tensors compare by dtype, shape, device and
/// bytes, so device inputs are compared as their KeyOf.
bool SameInputs(const Value& a, const Value& b);

/// \brief A host copy of `inputs` that shares no tensor memory with them:
/// what an entry keeps, safe from a component that changes its inputs in
/// place, and what a call's device inputs are compared as. Device bytes are
/// read in the order of their device's legacy default stream (where a GPU
/// transport's inputs are ready), never after a whole-device wait; refused
/// (kNotAcceptable) while TESSERACT_FORBID_DEVICE_HOST_COPY is set.
Result<Value> DetachedCopy(const Value& inputs);

/// \brief What device inputs are compared as: their DetachedCopy and the
/// devices that held them, so that the same bytes sent from the host or from
/// another device do not find state that lives on this one.
Result<Value> KeyOf(const Value& device_inputs);

/// \brief `inputs` with every CUDA tensor replaced by a copy in this
/// process's device memory (host tensors shared): what a kept apply runs on,
/// since a GPU transport's inputs are the client's memory, lent for one call,
/// while the state an apply keeps may hold them (a pullback saves its
/// inputs). The copies run on the legacy default stream, after the inputs'
/// writers, and are finished when this returns: the client's memory is read
/// by nothing after it, whatever the call's outcome.
Result<Value> OwnDeviceCopy(const Value& inputs);

}  // namespace tesscpp::runtime
