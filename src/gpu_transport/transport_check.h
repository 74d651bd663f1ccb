// transport_check.h: POST /check_gpu_transport for cuda_ipc, both sides (internal).
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "gpu_transport/client_transport.h"

#include "tesscpp/result.h"
#include "tesscpp/value.h"

namespace tesscpp::gpu_transport {

/// \brief POST /check_gpu_transport (served only with a GPU transport enabled):
/// reads the client's 256 random bytes through the transport, checks them
/// against `expected`, and answers with them reversed, in a tensor on the same
/// GPU. The body is {"ok": true, "array": <CUDA tensor>} (to be written with
/// the transport, its exports kept as an acknowledging client's) or
/// {"ok": false, "reason": "..."}; always HTTP 200, as tesseract-core answers.
Value AnswerTransportCheck(const Value& request, const std::string& enabled_transport);

/// \brief The client's side: 256 random bytes on this thread's current device,
/// exported as any input is and posted with `post`; the server's reversed copy
/// read back and compared. `acknowledge` is given the answer's headers, whose
/// exports are acknowledged like any answer's.
Result<CheckOutcome> CheckFromClient(std::string_view peer, const CheckPost& post,
                                     const std::function<void(const HeaderLookup&)>& acknowledge);

}  // namespace tesscpp::gpu_transport
