// server_transport.h: the server's side of GPU transports (internal).
//
// The Runtime calls it at fixed points and knows nothing else of a
// transport: every request (acknowledgements), reading a request's device
// arrays, each endpoint call (waiting for the client's inputs, exporting
// outputs, settling device work, keeping exports, the answer's headers), and
// POST /check_gpu_transport. tesseract-core 1.15's cuda_ipc with tesscpp's
// extensions (docs/gpu-transport-protocol.md 11-13) is the built-in
// implementation (cuda_ipc_server.cc); a transport's registry entry
// (registry.h) makes its server. The client's side is client_transport.h.
#pragma once

#include <memory>
#include <utility>

#include "platform/http_headers.h"
#include "tesscpp/buffer.h"
#include "tesscpp/internal/codec/device_arrays.h"
#include "tesscpp/result.h"
#include "tesscpp/value.h"

namespace tesscpp::gpu_transport {

using Headers = platform::HttpHeaders;

/// \brief One endpoint call's part of the transport.
class ServerCall {
 public:
  virtual ~ServerCall() = default;
  /// \brief Where the device outputs it carries are exported, when the
  /// client asked for the transport.
  virtual DeviceArrayWriter* outputs() = 0;
  /// \brief After the outputs were written (`written`; null when the call
  /// or the writing failed, whose exports are then dropped): the device work
  /// on the inputs in `request_body` and on the outputs is over for the
  /// client when the answer arrives. Returns the answer's transport headers.
  virtual Result<Headers> Finish(const Value& request_body, const Value* written) = 0;
};

class ServerTransport {
 public:
  virtual ~ServerTransport() = default;

  /// \brief Every request, before routing (tesseract-core's middleware):
  /// e.g. releases the exports the client acknowledges.
  virtual void OnRequest(const Headers& request_headers) = 0;
  /// \brief Where one request body's device arrays are read while it is
  /// parsed: in place, since the client keeps them until the answer, which
  /// waits for the device work on them.
  virtual std::unique_ptr<DeviceArrayReader> RequestArrays() = 0;
  /// \brief Before an endpoint runs. kInvalidArgument naming the header for
  /// a transport header that is malformed or cannot be honoured (a 400).
  virtual Result<std::unique_ptr<ServerCall>> Begin(const Headers& request_headers) = 0;
  /// \brief The device work on the device tensors in `value` is over (for
  /// answers that export nothing, such as /test).
  virtual Status Settle(const Value& value) const = 0;
  /// \brief POST /check_gpu_transport's answer to a JSON object `request`:
  /// the body and its headers. Always HTTP 200, as tesseract-core answers.
  virtual std::pair<Buffer, Headers> AnswerCheck(const Value& request) = 0;
};

struct ServerTransportOptions {
  /// The share of device memory a transport's staging pool may keep, in [0, 1].
  double pool_fraction = 0.25;
};

}  // namespace tesscpp::gpu_transport
