// http_connection.h: one persistent HTTP/1.1 connection to a server, over a
// libcurl easy handle.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tesscpp/buffer.h"
#include "tesscpp/result.h"

namespace tesscpp::client {

struct HttpResponse {
  int status = 0;
  std::string reason;  ///< the status line's reason phrase, as the server wrote it ("NOT FOUND")
  std::string content_type;
  std::vector<std::pair<std::string, std::string>> headers;  ///< names lowercased
  Buffer body;                                               ///< padded (simdjson parses it in place)

  /// \brief The first header named `name` (any case), if any.
  std::optional<std::string> Header(std::string_view name) const;
};

struct HttpTimeouts {
  double connect_s = 10;
  double read_s = 0;  ///< longest silence; 0: none
};

/// \brief Requests to one server over kept-alive connections. Send() may be
/// called from many threads at once: each request takes an idle connection
/// (a libcurl easy handle with its socket) or opens one, and gives it back
/// afterwards; at most `pool_size` idle ones are kept, as requests' pool.
class HttpConnection {
 public:
  /// \brief `base_url` as "scheme://host:port[/prefix]", no trailing slash.
  /// `always` ("Name: value") go with every request (e.g. Authorization).
  static Result<std::unique_ptr<HttpConnection>> Open(std::string base_url, HttpTimeouts timeouts,
                                                      int pool_size = 10,
                                                      std::vector<std::string> always = {});
  ~HttpConnection();
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;

  /// \brief Sends `method` to base_url + `target` with `headers` ("Name: value")
  /// and, when not null, `body` (sent from where it lies, with its length).
  /// A request that fails on a connection the server closed while idle is sent
  /// once more, as the SDK does. kUnavailable when the server cannot be
  /// reached, kDeadlineExceeded on a timeout.
  /// With `affinity`, the request goes on a chosen connection (Affinity).
  struct Affinity;
  Result<HttpResponse> Send(std::string_view method, std::string_view target,
                            const std::vector<std::string>& headers, const Buffer* body,
                            const Affinity* affinity = nullptr);

  const std::string& base_url() const { return base_url_; }

  /// \brief Forward reuse's routing (docs/forward-reuse.md): a kept-alive
  /// connection is served by one worker process, the one holding what an
  /// apply on it kept, so the derivative calls referring to it go on the
  /// same connection. Parked connections wait for their key instead of
  /// serving other requests (at most kMaxParked, the oldest pooled again).
  struct Affinity {
    std::string use;  ///< take the connection parked under this key, when it is there
    /// Afterwards, park the connection under the key this gives for the
    /// answer (empty, or a key with a connection parked already: pool it).
    std::function<std::string(const HttpResponse&)> park_as;
    std::vector<std::string> forget;  ///< keys whose connections go back to the pool
  };
  static constexpr size_t kMaxParked = 64;

 private:
  HttpConnection() = default;
  struct Transfer;
  // The handle parked under `use`, an idle handle, or a new one;
  // kResourceExhausted when libcurl has none.
  Result<void*> Acquire(std::string_view use = {});
  // Parks the handle under `park` (not empty), or pools it.
  void Release(void* curl, std::string park = {});
  void Forget(const std::vector<std::string>& keys);
  Result<HttpResponse> SendOnce(void* curl, std::string_view method, const std::string& url,
                                const std::vector<std::string>& headers, const Buffer* body,
                                bool* connection_failed);

  std::string base_url_;
  HttpTimeouts timeouts_;
  size_t pool_size_ = 10;
  std::vector<std::string> always_;
  std::mutex mutex_;
  std::vector<void*> idle_;                            // CURL*, kept out of this header
  std::vector<std::pair<std::string, void*>> parked_;  // oldest first
};

/// \brief {"Authorization: Bearer <token>"}, or nothing for an empty token:
/// what every request of a client with ClientOptions::token carries.
std::vector<std::string> AuthorizationHeaders(const std::string& token);

/// \brief `url` with "http://" added when it names no scheme, query and
/// fragment dropped and no trailing slash (the SDK's _sanitize_url).
std::string SanitizeUrl(std::string_view url);

}  // namespace tesscpp::client
