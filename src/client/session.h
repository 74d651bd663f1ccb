// session.h: what a Tesseract handle calls through — an HTTP connection
// (http_session.cc) or a component running in this process
// (library_session.cc). Views made by WithEncoding share one session.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "client/served_server.h"
#include "tesscpp/client.h"
#include "tesscpp/internal/loader/component_library.h"

namespace tesscpp {

class TesseractSession {
 public:
  virtual ~TesseractSession() = default;

  /// \brief Runs `endpoint` with `payload` (the request body; null for GET
  /// /health) and returns the answer, arrays decoded for apply and the
  /// gradient endpoints. `reuse` (may be null): the call's forward reuse, in
  /// and out (sessions without the extension leave its outputs empty).
  virtual Result<Value> Run(std::string_view endpoint, const Value* payload,
                            const std::optional<std::string>& run_id, const RequestedEncoding& encoding,
                            ForwardReuse* reuse) = 0;
  /// \brief The OpenAPI document, fetched (or built) once and shared.
  virtual Result<std::shared_ptr<const Value>> OpenApi() = 0;
  virtual Result<std::optional<ServerCapabilities>> Capabilities() = 0;
  /// \brief kInvalidArgument when `requested` cannot be served.
  virtual Status CheckRequestedEncoding(const RequestedEncoding& requested) = 0;
  virtual Status Teardown() {
    return Status::InvalidArgument(
        "only a Tesseract made by FromSource or FromImage serves (and tears down) its own server");
  }
  virtual Result<std::string> ServerLogs() {
    return Status::InvalidArgument("only a Tesseract made by FromSource or FromImage has server logs");
  }
  virtual Result<ContainerInfo> GetContainerInfo() {
    return Status::InvalidArgument("container_info is only available for a Tesseract made by from_image");
  }
  virtual std::string url() const { return ""; }
  /// \brief The check exchange for `transport` (already known to be offered).
  virtual Result<GpuTransportCheck> CheckGpuTransport(const std::string& transport) = 0;
  /// \brief The transport an in-process session was created with; nullopt
  /// for sessions that reach a server.
  virtual std::optional<std::string> InProcessTransport() const { return std::nullopt; }
};

namespace client {

/// \brief A session over HTTP; `server` (may be null) is the served process
/// and directories it owns (FromSource).
Result<std::shared_ptr<TesseractSession>> MakeHttpSession(const std::string& url, ClientOptions options,
                                                          std::unique_ptr<ServedServer> server);

/// \brief Starts the server for `path` (FromSource) and connects to it.
Result<std::shared_ptr<TesseractSession>> MakeServedSession(const std::string& path,
                                                            const SourceOptions& options);

/// \brief Runs `image` in a container (FromImage) and connects to it.
Result<std::shared_ptr<TesseractSession>> MakeImageSession(const std::string& image,
                                                           const ImageOptions& options);

Result<std::shared_ptr<TesseractSession>> MakeLibrarySession(const std::string& path,
                                                             const LibraryOptions& options);

/// \brief The run log that stream_logs follows: <output>/run_<id>/logs/tesseract.log.
std::string RunLogPath(const std::string& output_path, const std::string& run_id);

/// \brief Whether `endpoint` runs in a run directory and returns arrays
/// (apply and the three gradient endpoints).
bool IsWrappedEndpoint(std::string_view endpoint);

}  // namespace client
}  // namespace tesscpp
