// http_connection.h: one persistent HTTP/1.1 connection to a server, over a
// libcurl easy handle.
#pragma once

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
  Result<HttpResponse> Send(std::string_view method, std::string_view target,
                            const std::vector<std::string>& headers, const Buffer* body);

  const std::string& base_url() const { return base_url_; }

 private:
  HttpConnection() = default;
  struct Transfer;
  // An idle handle, or a new one; kResourceExhausted when libcurl has none.
  Result<void*> Acquire();
  void Release(void* curl);
  Result<HttpResponse> SendOnce(void* curl, std::string_view method, const std::string& url,
                                const std::vector<std::string>& headers, const Buffer* body,
                                bool* connection_failed);

  std::string base_url_;
  HttpTimeouts timeouts_;
  size_t pool_size_ = 10;
  std::vector<std::string> always_;
  std::mutex mutex_;
  std::vector<void*> idle_;  // CURL*, kept out of this header
};

/// \brief {"Authorization: Bearer <token>"}, or nothing for an empty token:
/// what every request of a client with ClientOptions::token carries.
std::vector<std::string> AuthorizationHeaders(const std::string& token);

/// \brief `url` with "http://" added when it names no scheme, query and
/// fragment dropped and no trailing slash (the SDK's _sanitize_url).
std::string SanitizeUrl(std::string_view url);

}  // namespace tesscpp::client
