// server_transport.h: the server's side of the GPU transport (internal).
//
// The Runtime calls it at fixed points and knows nothing else of the
// transport: every request (acknowledgements), each endpoint call (waiting
// for the client's inputs, exporting outputs, settling device work, keeping
// exports, the answer's headers), and POST /check_gpu_transport.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpu_transport/export_registry.h"
#include "gpu_transport/ipc_arrays.h"
#include "platform/http_headers.h"
#include "tesscpp/buffer.h"
#include "tesscpp/value.h"

namespace tesscpp::gpu_transport {

using Headers = platform::HttpHeaders;

class ServerTransport {
 public:
  /// \brief `name`: the enabled transport ("cuda_ipc").
  explicit ServerTransport(std::string name) : name_(std::move(name)) {}

  /// \brief Every request, before routing (tesseract-core's middleware):
  /// releases the exports Tesseract-Exports-Done names, and expired ones.
  void OnRequest(const Headers& request_headers);

  /// \brief One endpoint call's part of the transport.
  class Call {
   public:
    /// \brief Where the request's cuda_ipc inputs are borrowed: the client
    /// keeps them until the answer, which waits for the device work on them.
    CudaIpcArrays* inputs() { return &inputs_; }
    /// \brief Where CUDA outputs are exported, when the client asked for
    /// the transport.
    CudaIpcArrays* outputs() { return &outputs_; }

    /// \brief After the outputs were written (`written`; null when the call
    /// or the writing failed, whose exports are then dropped): the device
    /// work on the inputs in `request_body` and on the outputs is over for the
    /// client when the answer arrives, by an IPC event it waits for or by
    /// synchronising here. Returns the answer's transport headers.
    Result<Headers> Finish(const Value& request_body, const Value* written);

   private:
    friend class ServerTransport;
    Call(ServerTransport& transport, const Headers& request_headers);

    ServerTransport* transport_;
    bool acknowledged_ = false;
    bool ipc_events_ = false;
    bool vmm_ = false;  // the client offered cuda_vmm and this server can reach it
    std::optional<std::string> borrower_;
    IpcArrays inputs_ = IpcArrays::Borrowing();
    IpcArrays outputs_ = IpcArrays::Exporting();
  };

  /// \brief Before an endpoint runs: releases what a client that does not
  /// acknowledge left, and has the device wait for the client's inputs
  /// (Tesscpp-Inputs-Event). kInvalidArgument naming the header for a value
  /// that is malformed or cannot be waited for (a 400).
  Result<Call> Begin(const Headers& request_headers);

  /// \brief The device work on the CUDA tensors in `value` is over (for
  /// answers that export nothing, such as /test).
  Status Settle(const Value& value) const;

  /// \brief POST /check_gpu_transport's answer to a JSON object `request`:
  /// the body and its headers. Always HTTP 200, as tesseract-core answers.
  std::pair<Buffer, Headers> AnswerCheck(const Value& request);

 private:
  const std::string name_;
  ExportRegistry exports_;
};

}  // namespace tesscpp::gpu_transport
