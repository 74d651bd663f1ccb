// The connections of the HTTP server: Beast parses request headers, bodies
// are read by hand into pooled buffers, the Runtime answers on the
// connection's strand. Boost.Beast is confined to this file.
#include "http/session.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cerrno>
#include <cstring>
#include <optional>

#include "http/access_log.h"
#include "http/http_head.h"
#include "tesscpp/internal/codec/json.h"
#include "tesscpp/internal/core/buffer_pool.h"

namespace tesscpp::http {
namespace {

namespace beast = boost::beast;
namespace beast_http = beast::http;

// Request headers beyond this are refused (431); Starlette's limit is similar.
constexpr uint32_t kHeaderLimit = 64 * 1024;
// asio caps every read_some/write_some of a composed operation at 64 KiB
// unless the completion condition says otherwise; this one lets one syscall
// move up to 16 MiB, so large bodies travel in few, large reads and writes.
constexpr size_t kMaxTransfer = size_t{16} << 20;

// A body's first bytes go into small pages; once this much of it arrived, the
// rest may use huge pages (a client that declares a large body and sends
// little commits little of our memory).
constexpr size_t kSmallPagePrefix = size_t{2} << 20;

struct LargeTransfers {
  size_t total;
  size_t operator()(const boost::system::error_code& ec, size_t done) const {
    return ec || done >= total ? 0 : std::min(total - done, kMaxTransfer);
  }
};

class Session final : public Connection, public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, const Runtime& runtime, const HttpServerOptions& options, ServerState& state)
      : socket_(std::move(socket)), runtime_(runtime), options_(options), state_(state) {
    buffer_.max_size(kHeaderLimit + (size_t{1} << 20));
  }

  void Start() override {
    if (state_.calls != nullptr) guard_id_ = state_.calls->Accepted(socket_.native_handle());
    ReadHeader();
  }

 private:
  void ReadHeader() {
    // An answer begun before the drain promised keep-alive, and CloseIfIdle
    // found this connection busy writing it: nothing else would close it, and
    // the drain would wait for its timeout. A pipelined request already
    // buffered is still read and answered (then closed, by Write).
    if (state_.draining.load(std::memory_order_relaxed) && buffer_.size() == 0) return Close();
    idle_ = true;
    parser_.emplace();
    parser_->header_limit(kHeaderLimit);
    parser_->body_limit(boost::none);  // the body is read separately, checked against max_body_bytes
    SetDeadline(options_.keep_alive_timeout);
    beast_http::async_read_header(
        socket_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, size_t) { self->OnHeader(ec); });
  }

  void OnHeader(beast::error_code ec) {
    idle_ = false;
    if (ec == beast_http::error::end_of_stream || ec == beast::error::timeout || ec == asio::error::eof ||
        ec == asio::error::connection_reset || ec == asio::error::operation_aborted) {
      return Close();
    }
    // Before any answer: metrics and the access log read these, and a
    // rejected header must not be counted as the previous request again.
    started_ = std::chrono::steady_clock::now();
    request_ = RuntimeRequest();
    if (ec == beast_http::error::header_limit) return Reject(431, "Request Header Fields Too Large");
    if (ec) return Reject(400, "Bad Request");
    const auto& header = parser_->get();
    CopyHead(header);
    if (AnsweredFromHead(header)) return;
    StartBody(header);
  }

  // The request's method, target and headers into request_.
  void CopyHead(const beast_http::request<beast_http::empty_body>& header) {
    request_.method = std::string(header.method_string());
    request_.target = std::string(header.target());
    if (auto it = header.find(beast_http::field::accept); it != header.end())
      request_.accept = std::string(it->value());
    for (const auto& field : header) {
      if (!IsServerHeader(field.name_string())) {
        request_.headers.emplace_back(field.name_string(), field.value());
      }
    }
    if (auto it = header.find(beast_http::field::content_type); it != header.end()) {
      request_.content_type = std::string(it->value());
    }
    keep_alive_ = header.keep_alive();
    head_ = header.method() == beast_http::verb::head;
  }

  // What the server answers from the head alone: 401 without the token,
  // GET /metrics, a draining readiness probe, 503 past the in-flight cap
  // (which counts the request otherwise). True when an answer is on its way.
  bool AnsweredFromHead(const beast_http::request<beast_http::empty_body>& header) {
    const beast::string_view target = header.target();
    const beast::string_view path = target.substr(0, target.find('?'));
    const bool is_health = header.method() == beast_http::verb::get && path == "/health";
    if (!options_.token.empty() && !(is_health && options_.public_health) && !Authorized(header)) {
      RuntimeResponse r;
      r.status = 401;
      r.content_type = "application/json";
      r.body = Buffer::FromString(
          R"json({"detail":"Missing or wrong bearer token (Authorization: Bearer <token>)"})json");
      r.headers.emplace_back("www-authenticate", R"(Bearer realm="tesscpp")");
      keep_alive_ = false;  // the body, if any, is not read
      state_.metrics->Reject(Rejection::kUnauthorized);
      Write(std::move(r));
      return true;
    }
    if (header.method() == beast_http::verb::get && path == "/metrics") {
      RuntimeResponse r;
      r.status = 200;
      r.content_type = "text/plain; version=0.0.4; charset=utf-8";
      r.body = Buffer::FromString(state_.metrics->Render());
      Write(std::move(r));
      return true;
    }
    // Readiness: false while draining; /health itself keeps meaning "alive".
    if (is_health && path.size() < target.size() && target.substr(path.size() + 1) == "ready" &&
        state_.draining.load(std::memory_order_relaxed)) {
      Reject(503, R"({"status":"draining"})", "application/json");
      return true;
    }
    if (is_health) return false;
    const int before = state_.in_flight.fetch_add(1, std::memory_order_relaxed);
    counted_ = true;
    state_.metrics->AddInFlight(1);
    if (options_.max_in_flight > 0 && before >= options_.max_in_flight) {
      state_.metrics->Reject(Rejection::kInFlight);
      Reject(503,
             "Too many requests in flight (" + std::to_string(options_.max_in_flight) +
                 "); retry after a second",
             "text/plain; charset=utf-8", true);
      return true;
    }
    return false;
  }

  // Sizes the body against the limits and the budget, takes its buffer and
  // reads it (bytes past the header first), then dispatches.
  void StartBody(const beast_http::request<beast_http::empty_body>& header) {
    if (parser_->chunked()) return ReadChunkedBody();
    const uint64_t length = parser_->content_length().value_or(0);
    if (length > static_cast<uint64_t>(options_.max_body_bytes)) {
      return Reject(413, "Request body of " + std::to_string(length) + " bytes exceeds the limit of " +
                             std::to_string(options_.max_body_bytes) + " bytes");
    }
    if (length == 0) return Dispatch();
    if (!Reserve(static_cast<int64_t>(length))) {
      state_.metrics->Reject(Rejection::kBodyBudget);
      return Reject(503,
                    "The server holds too many request bodies to take one of " + std::to_string(length) +
                        " bytes now; retry after a second",
                    "text/plain; charset=utf-8", true);
    }
    // Committed as the bytes arrive: nothing is touched for bytes that never come.
    auto body = BufferPool::Default()->Allocate(static_cast<int64_t>(length), BufferPool::Commit::kAsWritten);
    if (!body.ok()) return Reject(413, "Cannot hold a request body of " + std::to_string(length) + " bytes");
    request_.body = *std::move(body);
    const size_t have = std::min<size_t>(buffer_.size(), length);
    asio::buffer_copy(asio::buffer(request_.body.data(), have), buffer_.data());
    buffer_.consume(have);
    if (have == length) return Dispatch();
    auto read_rest = [self = shared_from_this(), have] { self->ReadBody(have); };
    if (ExpectsContinue(header)) return WriteContinue(read_rest);
    read_rest();
  }

  // Reads the body from byte `have` on: the first kSmallPagePrefix bytes in
  // small pages, then (once a client has shown it sends) the rest in one
  // read that may use huge pages.
  void ReadBody(size_t have) {
    const size_t length = static_cast<size_t>(request_.body.size());
    const size_t stop = have < kSmallPagePrefix ? std::min(length, kSmallPagePrefix) : length;
    SetDeadline(options_.body_timeout);
    asio::async_read(
        socket_, asio::buffer(request_.body.data() + have, stop - have), LargeTransfers{stop - have},
        [self = shared_from_this(), stop, length](beast::error_code read_ec, size_t) {
          if (read_ec) return self->Close();
          if (stop == length) return self->Dispatch();
          BufferPool::Default()->AdviseHugePages(self->request_.body, static_cast<int64_t>(stop));
          self->ReadBody(stop);
        });
  }

  // Takes `bytes` from the server's body budget; false when it would pass it.
  bool Reserve(int64_t bytes) {
    if (options_.body_budget_bytes > 0) {
      if (state_.body_bytes.fetch_add(bytes, std::memory_order_relaxed) + bytes >
          options_.body_budget_bytes) {
        state_.body_bytes.fetch_sub(bytes, std::memory_order_relaxed);
        return false;
      }
      reserved_ = bytes;
    }
    return true;
  }

  // Gives back what this request holds of the server's caps.
  void Release() {
    if (reserved_ != 0) state_.body_bytes.fetch_sub(std::exchange(reserved_, 0), std::memory_order_relaxed);
    if (counted_) {
      state_.in_flight.fetch_sub(1, std::memory_order_relaxed);
      state_.metrics->AddInFlight(-1);
      counted_ = false;
    }
  }

  bool Authorized(const beast_http::request<beast_http::empty_body>& header) const {
    auto it = header.find(beast_http::field::authorization);
    return it != header.end() && BearerTokenMatches(it->value(), options_.token);
  }

  static bool ExpectsContinue(const beast_http::request<beast_http::empty_body>& header) {
    auto it = header.find(beast_http::field::expect);
    return it != header.end() && beast::iequals(it->value(), "100-continue");
  }

  template <typename Next>
  void WriteContinue(Next next) {
    static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
    asio::async_write(socket_, asio::buffer(kContinue.data(), kContinue.size()),
                      [self = shared_from_this(), next](beast::error_code ec, size_t) {
                        if (ec) return self->Close();
                        next();
                      });
  }

  // Chunked bodies (rare from Tesseract clients) go through Beast's parser,
  // then into a padded buffer.
  void ReadChunkedBody() {
    const bool expects_continue = ExpectsContinue(parser_->get());
    chunked_.emplace(std::move(*parser_));
    chunked_->body_limit(static_cast<uint64_t>(options_.max_body_bytes));
    auto read = [self = shared_from_this()] {
      self->SetDeadline(self->options_.body_timeout);
      beast_http::async_read(
          self->socket_, self->buffer_, *self->chunked_, [self](beast::error_code ec, size_t) {
            if (ec == beast_http::error::body_limit)
              return self->Reject(413, "Request body exceeds the limit");
            if (ec) return self->Close();
            const std::vector<char>& text = self->chunked_->get().body();
            if (!self->Reserve(static_cast<int64_t>(text.size()))) {
              return self->Reject(503, "The server holds too many request bodies; retry after a second",
                                  "text/plain; charset=utf-8", true);
            }
            auto body = BufferPool::Default()->Allocate(static_cast<int64_t>(text.size()));
            if (!body.ok()) return self->Reject(413, "Cannot hold the request body");
            std::copy(text.begin(), text.end(), body->data());
            self->request_.body = *std::move(body);
            self->chunked_.reset();
            self->Dispatch();
          });
    };
    if (expects_continue) return WriteContinue(read);
    read();
  }

  // The request runs right here, on the thread that read it: handing it to
  // another thread costs two wakeups per request (hundreds of microseconds on
  // a VM), and the other I/O threads keep serving every other connection
  // meanwhile (see HttpServer::Run).
  void Dispatch() {
    deadline_ns_ = 0;  // an endpoint may run for long
    if (state_.calls != nullptr && guard_id_ != 0) state_.calls->Begin(guard_id_);
    RuntimeResponse response = runtime_.Handle(request_);
    if (state_.calls != nullptr && guard_id_ != 0) state_.calls->End();
    Write(std::move(response));
  }

  // An answer without reading the body: the connection closes after it.
  void Reject(int status, const std::string& message, const char* content_type = "text/plain; charset=utf-8",
              bool retry_later = false) {
    keep_alive_ = false;
    RuntimeResponse r;
    r.status = status;
    r.content_type = content_type;
    r.body = Buffer::FromString(message);
    if (retry_later) r.headers.emplace_back("retry-after", "1");
    Write(std::move(r));
  }

  void Write(RuntimeResponse response) {
    response_ = std::move(response);
    Account();
    request_.body = Buffer();  // the request's memory goes back to the pool before the write
    Release();
    if (state_.draining.load(std::memory_order_relaxed)) keep_alive_ = false;
    WriteResponseHead(response_,
                      beast_http::obsolete_reason(static_cast<beast_http::status>(response_.status)),
                      keep_alive_, header_text_);
    const size_t body_size = head_ ? 0 : static_cast<size_t>(response_.body.size());
    const std::array<asio::const_buffer, 2> parts{asio::buffer(header_text_),
                                                  asio::buffer(response_.body.data(), body_size)};
    SetDeadline(options_.body_timeout);
    asio::async_write(socket_, parts, LargeTransfers{header_text_.size() + body_size},
                      [self = shared_from_this()](beast::error_code ec, size_t) {
                        self->response_ = RuntimeResponse();
                        if (ec || !self->keep_alive_) return self->Close();
                        self->ReadHeader();
                      });
  }

  // The answered request in the metrics and, when on, the access log.
  void Account() {
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
    const std::string_view target = request_.target;
    const std::string_view path = target.substr(0, target.find('?'));
    state_.metrics->Record(path, response_.status, seconds, request_.body.size(), response_.body.size());
    state_.metrics->SampleResiduals(state_.worker, runtime_.residual_stats());
    if (state_.access_log_fd >= 0) {
      beast::error_code ec;
      const auto remote = socket_.remote_endpoint(ec);
      LogAccess(state_.access_log_fd, request_.method, target, response_.status, seconds,
                request_.body.size(), response_.body.size(),
                ec ? std::string("?") : remote.address().to_string());
    }
  }

  void Close() {
    Release();
    request_.body = Buffer();
    beast::error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_send, ignored);
    socket_.close(ignored);
    // The supervisor's duplicate keeps the connection open until it hears.
    if (state_.calls != nullptr) state_.calls->Closed(std::exchange(guard_id_, 0));
  }

  // Deadlines are checked by the server's sweeper once a second rather than by
  // a timer per operation: re-arming timers cost three syscalls and a reactor
  // wakeup on every request.
  void SetDeadline(std::chrono::seconds timeout) {
    deadline_ns_ = (std::chrono::steady_clock::now() + timeout).time_since_epoch().count();
  }

 public:
  /// Called when the server drains: closes the connection (on its strand) if
  /// it waits for a request with none begun.
  void CloseIfIdle() override {
    asio::post(socket_.get_executor(), [self = shared_from_this()] {
      // The parser may already have taken the first lines of a header.
      if (self->idle_ && self->buffer_.size() == 0 && !self->parser_->got_some()) self->Close();
    });
  }

  /// Called by the sweeper: closes the connection (on its strand) if its
  /// current wait has outlived its deadline. Returns false once it is closed.
  bool CloseIfExpired(int64_t now_ns) override {
    const int64_t deadline = deadline_ns_;
    if (deadline == 0 || now_ns < deadline) return socket_.is_open();
    asio::post(socket_.get_executor(), [self = shared_from_this()] {
      const int64_t again = self->deadline_ns_;
      if (again != 0 && std::chrono::steady_clock::now().time_since_epoch().count() >= again) self->Close();
    });
    return true;
  }

 private:
  tcp::socket socket_;
  std::atomic<int64_t> deadline_ns_{0};
  const Runtime& runtime_;
  const HttpServerOptions& options_;
  ServerState& state_;
  bool idle_ = false;                              // waiting for a request's header
  bool counted_ = false;                           // counted in state_.in_flight
  int64_t reserved_ = 0;                           // bytes taken from the body budget
  std::chrono::steady_clock::time_point started_;  // the request header arrived
  beast::flat_buffer buffer_;
  std::optional<beast_http::request_parser<beast_http::empty_body>> parser_;
  std::optional<beast_http::request_parser<beast_http::vector_body<char>>> chunked_;
  RuntimeRequest request_;
  RuntimeResponse response_;
  std::string header_text_;
  bool keep_alive_ = true;
  bool head_ = false;
  uint64_t guard_id_ = 0;  // this connection's id with the supervisor (CallReporter); 0: unguarded
};

}  // namespace

std::shared_ptr<Connection> MakeSession(tcp::socket socket, const Runtime& runtime,
                                        const HttpServerOptions& options, ServerState& state) {
  return std::make_shared<Session>(std::move(socket), runtime, options, state);
}

}  // namespace tesscpp::http
