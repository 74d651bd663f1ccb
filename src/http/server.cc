// The HTTP server: Beast parses request headers, bodies are read by hand into
// pooled buffers, the Runtime answers on a worker thread.
#include "tesscpp/internal/http_server.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "http/call_guard.h"
#include "http/http_head.h"
#include "http/metrics.h"
#include "http/worker_exec.h"
#include "tesscpp/internal/buffer_pool.h"
#include "tesscpp/internal/file.h"
#include "tesscpp/internal/json.h"
#include "tesscpp/internal/runtime.h"

namespace tesscpp::http {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace beast_http = beast::http;
using tcp = asio::ip::tcp;

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

// What the sessions of one server share.
struct ServerState {
  std::atomic<bool> draining{false};
  std::atomic<int> in_flight{0};
  std::atomic<int64_t> body_bytes{0};
  ServerMetrics* metrics = nullptr;  // shared with the other workers
  int access_log_fd = -1;            // a copy of stderr from before any capture; -1: off
  CallReporter* calls = nullptr;     // tells the supervisor of connections and calls; null: none
};

// One line of JSON per request (the access log): written with one write(2),
// so lines of concurrent requests and workers never interleave.
void LogAccess(int fd, std::string_view method, std::string_view target, int status, double seconds,
               int64_t bytes_in, int64_t bytes_out, const std::string& remote) {
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  const Value line = Value::Dict{{"time", Value(now)},
                                 {"remote", Value(remote)},
                                 {"method", Value(std::string(method))},
                                 {"target", Value(std::string(target))},
                                 {"status", Value(static_cast<int64_t>(status))},
                                 {"duration_ms", Value(seconds * 1e3)},
                                 {"bytes_in", Value(bytes_in)},
                                 {"bytes_out", Value(bytes_out)}};
  auto json = WriteJson(line);
  if (!json.ok()) return;
  std::string text(json->string_view());
  text += '\n';
  (void)!::write(fd, text.data(), text.size());
}

struct LargeTransfers {
  size_t total;
  size_t operator()(const boost::system::error_code& ec, size_t done) const {
    return ec || done >= total ? 0 : std::min(total - done, kMaxTransfer);
  }
};

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, const Runtime& runtime, const HttpServerOptions& options, ServerState& state)
      : socket_(std::move(socket)), runtime_(runtime), options_(options), state_(state) {
    buffer_.max_size(kHeaderLimit + (size_t{1} << 20));
  }

  void Start() {
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
  void CloseIfIdle() {
    asio::post(socket_.get_executor(), [self = shared_from_this()] {
      // The parser may already have taken the first lines of a header.
      if (self->idle_ && self->buffer_.size() == 0 && !self->parser_->got_some()) self->Close();
    });
  }

  /// Called by the sweeper: closes the connection (on its strand) if its
  /// current wait has outlived its deadline. Returns false once it is closed.
  bool CloseIfExpired(int64_t now_ns) {
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

struct HttpServer::Impl {
  Impl(const Runtime& r, const HttpServerOptions& o) : runtime(r), options(o), io(kThreads) {
    if (options.handoff) {
      metrics_fd = platform::Fd(options.handoff->metrics_fd);
      state.metrics = ServerMetrics::Map(metrics_fd.get());
      worker = options.handoff->slot;
      if (options.handoff->calls_fd >= 0) {
        const platform::Fd table_fd(options.handoff->calls_fd);  // the mapping outlives it
        if (CallTable* table = CallTable::Map(table_fd.get()); table != nullptr) {
          reporter = std::make_unique<CallReporter>(table, worker, platform::Fd(options.handoff->channel_fd));
          state.calls = reporter.get();
        }
      }
    } else {
      state.metrics = ServerMetrics::Create(metrics_fd);
    }
    if (options.access_log) state.access_log_fd = stderr_copy.get();
    if (options.body_budget_bytes < 0) {
      const int64_t memory = static_cast<int64_t>(::sysconf(_SC_PHYS_PAGES)) * ::sysconf(_SC_PAGESIZE);
      options.body_budget_bytes = memory > 0 ? memory / 4 : 0;
    }
  }
  // Two threads per process: with one inside a long endpoint, the other is
  // still free to answer /health and read other requests. More requests at
  // once take more processes (see server.h).
  static constexpr int kThreads = 2;

  const Runtime& runtime;
  HttpServerOptions options;
  // stderr as it was before any endpoint captured it into a run's log.
  platform::Fd stderr_copy{::fcntl(2, F_DUPFD_CLOEXEC, 3)};
  platform::Fd metrics_fd;  // the counters' memory, handed to exec'd workers
  ServerState state;
  asio::io_context io;
  tcp::acceptor acceptor{io};
  asio::signal_set signals{io, SIGINT, SIGTERM};
  asio::steady_timer sweep_timer{io};
  asio::steady_timer drain_timer{io};
  std::mutex sessions_mutex;
  std::vector<std::weak_ptr<Session>> sessions;
  std::atomic<bool> supervising{false};
  int worker = 0;                          // this process's slot in the metrics' per-worker gauges
  std::unique_ptr<CallGuard> guard;        // the supervisor's: its workers' connections
  std::unique_ptr<CallReporter> reporter;  // a worker's: what it tells the supervisor

  // Once a second: close connections whose wait outlived its deadline, forget
  // closed ones.
  void Sweep() {
    sweep_timer.expires_after(std::chrono::seconds(1));
    sweep_timer.async_wait([this](beast::error_code ec) {
      if (ec) return;
      const int64_t now = std::chrono::steady_clock::now().time_since_epoch().count();
      state.metrics->SampleMemory(worker);
      {
        std::lock_guard<std::mutex> lock(sessions_mutex);
        std::erase_if(sessions, [now](const std::weak_ptr<Session>& weak) {
          auto session = weak.lock();
          return !session || !session->CloseIfExpired(now);
        });
      }
      Sweep();
    });
  }

  void Accept() {
    // Each connection gets a strand: its handlers never run concurrently,
    // whichever thread picks them up.
    acceptor.async_accept(asio::make_strand(io), [this](beast::error_code ec, tcp::socket socket) {
      if (ec == asio::error::operation_aborted || !acceptor.is_open()) return;
      if (!ec) {
        socket.set_option(tcp::no_delay(true));
        auto session = std::make_shared<Session>(std::move(socket), runtime, options, state);
        {
          std::lock_guard<std::mutex> lock(sessions_mutex);
          sessions.push_back(session);
        }
        session->Start();
      }
      Accept();
    });
  }

  // Stops accepting, closes idle connections, lets the others answer what
  // they are handling (then close), and stops the loop when none is left or
  // the drain timeout passed.
  void Drain() {
    if (state.draining.exchange(true)) return;
    beast::error_code ignored;
    acceptor.close(ignored);
    signals.cancel(ignored);
    {
      std::lock_guard<std::mutex> lock(sessions_mutex);
      for (const auto& weak : sessions) {
        if (auto session = weak.lock()) session->CloseIfIdle();
      }
    }
    WaitForSessions(std::chrono::steady_clock::now() + options.drain_timeout);
  }

  void WaitForSessions(std::chrono::steady_clock::time_point deadline) {
    bool any = false;
    {
      std::lock_guard<std::mutex> lock(sessions_mutex);
      std::erase_if(sessions, [](const std::weak_ptr<Session>& weak) { return weak.expired(); });
      any = !sessions.empty();
    }
    if (any && std::chrono::steady_clock::now() >= deadline) AbandonRunningCalls();
    if (!any) {
      sweep_timer.cancel();
      io.stop();
      return;
    }
    drain_timer.expires_after(std::chrono::milliseconds(20));
    drain_timer.async_wait([this, deadline](beast::error_code ec) {
      if (!ec) WaitForSessions(deadline);
    });
  }

  // The drain timeout passed with calls still running. An endpoint cannot be
  // interrupted, and returning from Run() would leave it running on this
  // object as it is destroyed: the process ends here, as a drained one would
  // (status 0), and the callers' connections close unanswered.
  [[noreturn]] void AbandonRunningCalls() {
    const std::string line = "tesscpp: the drain timeout (" + std::to_string(options.drain_timeout.count()) +
                             " s) passed with calls still running; exiting without answering them\n";
    if (stderr_copy.valid()) (void)!::write(stderr_copy.get(), line.data(), line.size());
    std::_Exit(0);
  }

  // Serves in this process until drained.
  void Serve() {
    state.metrics->SampleMemory(worker);
    signals.async_wait([this](beast::error_code ec, int) {
      if (!ec) Drain();
    });
    Accept();
    Sweep();
    static_assert(kThreads == kCallThreads, "one cell of the call table per event-loop thread");
    std::vector<std::thread> threads;
    for (int i = 1; i < kThreads; ++i) {
      threads.emplace_back([this, i] {
        CallReporter::SetThreadCell(i);
        io.run();
      });
    }
    CallReporter::SetThreadCell(0);
    io.run();
    for (std::thread& t : threads) t.join();
  }

  struct Supervision;
  void Supervise(int processes);
  void WaitForEvents(Supervision& s);
  void ReapWorkers(Supervision& s);
  pid_t StartWorker(int slot, const sigset_t& worker_mask);
};

// How a supervisor hears SIGINT, SIGTERM and SIGCHLD: a handler writes the
// signal's number into a pipe it polls. Blocking the signals and reading
// them with sigtimedwait or a signalfd would not do: a process that hosts
// Python may have other threads (torch's pool) that do not block them, and a
// signal delivered to one of those would never reach the supervisor.
struct SupervisorSignals {
  static constexpr std::array<int, 3> kHandled = {SIGINT, SIGTERM, SIGCHLD};
  static inline int write_end = -1;

  static void Handle(int signal) {
    const int saved = errno;
    const auto number = static_cast<unsigned char>(signal);
    (void)!::write(write_end, &number, 1);
    errno = saved;
  }

  // Returns the pipe's read end (non-blocking).
  static platform::Fd Install() {
    int ends[2];
    if (::pipe2(ends, O_CLOEXEC | O_NONBLOCK) != 0) return platform::Fd();
    write_end = ends[1];
    struct sigaction action {};
    action.sa_handler = &Handle;
    action.sa_flags = SA_RESTART;
    sigemptyset(&action.sa_mask);
    for (const int signal : kHandled) ::sigaction(signal, &action, nullptr);
    return platform::Fd(ends[0]);
  }

  // Default dispositions again (a forked worker, or a supervisor done).
  static void Restore() {
    for (const int signal : kHandled) ::signal(signal, SIG_DFL);
    if (write_end >= 0) ::close(std::exchange(write_end, -1));
  }
};

// Starts a worker process: it serves until drained, then exits. With a
// guard, the worker tells the supervisor of its connections and calls.
pid_t HttpServer::Impl::StartWorker(int slot, const sigset_t& worker_mask) {
  platform::Fd channel;
  if (guard != nullptr) {
    auto opened = guard->Open(slot);
    if (opened.ok()) {
      channel = *std::move(opened);
    } else {
      std::cerr << "tesscpp: worker " << slot << " runs unguarded: " << opened.status().message() << "\n";
    }
  }
  if (!options.worker_command.empty()) {
    const WorkerExec exec(options.worker_command, acceptor.native_handle(), metrics_fd.get(), slot,
                          channel.valid() ? guard->table_fd() : -1, channel.get());
    return exec.Start(worker_mask);
  }
  const HttpServerOptions::ForkHooks& hooks = options.fork_hooks;
  if (hooks.before) hooks.before();
  io.notify_fork(asio::execution_context::fork_prepare);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    io.notify_fork(asio::execution_context::fork_child);
    if (hooks.child) hooks.child();
    // A worker does not outlive its supervisor.
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) std::_Exit(0);
    ::pthread_sigmask(SIG_SETMASK, &worker_mask, nullptr);
    // Its event loop drains on SIGINT and SIGTERM, as a single server's does.
    SupervisorSignals::Restore();
    beast::error_code ignored;
    signals.add(SIGINT, ignored);
    signals.add(SIGTERM, ignored);
    worker = slot;
    if (guard != nullptr) {
      guard->CloseInChild();
      if (channel.valid()) {
        reporter = std::make_unique<CallReporter>(guard->table(), slot, std::move(channel));
        state.calls = reporter.get();
      }
    }
    Serve();
    std::fflush(nullptr);
    std::_Exit(0);
  }
  io.notify_fork(asio::execution_context::fork_parent);
  if (hooks.parent) hooks.parent();
  return pid;
}

namespace {

// Where to listen: an IP address as written, or a host name resolved as
// uvicorn's socket.bind resolves it (getaddrinfo; its first IPv4 address, so
// "localhost" is 127.0.0.1 as there).
Result<tcp::endpoint> ListeningEndpoint(asio::io_context& io, const std::string& host, uint16_t port) {
  beast::error_code ec;
  const auto address = asio::ip::make_address(host, ec);
  if (!ec) return tcp::endpoint(address, port);
  tcp::resolver resolver(io);
  const auto found = resolver.resolve(host, std::to_string(port), tcp::resolver::passive, ec);
  if (ec || found.empty()) {
    return Status::InvalidArgument("cannot listen on host '", host,
                                   "': it is neither an IP address nor a name that resolves (",
                                   ec ? ec.message() : std::string("no address"), ")");
  }
  for (const auto& entry : found) {
    if (entry.endpoint().address().is_v4()) return entry.endpoint();
  }
  return found.begin()->endpoint();
}

}  // namespace

// The supervisor's state while it runs its workers.
struct HttpServer::Impl::Supervision {
  using Clock = std::chrono::steady_clock;
  struct Worker {
    Clock::time_point started;
    int slot;
  };
  sigset_t worker_mask;
  platform::Fd signals;  // the read end of SupervisorSignals' pipe
  std::map<pid_t, Worker> workers;
  std::set<int> hung_up;            // slots whose channel closed: not waited on until restarted
  Clock::time_point channels_read;  // when the workers' messages were last taken in
  bool stopping = false;
  Clock::time_point kill_at = Clock::time_point::max();
  int quick_deaths = 0;

  void SignalAll(int signal) const {
    for (const auto& [pid, started] : workers) ::kill(pid, signal);
  }
};

// Waits up to 200 ms for a signal or a worker's message; takes the messages in.
// The workers' messages are taken in at most every kChannelPause: a burst of
// new connections then costs the supervisor one wake-up, not two per
// connection (the socket pairs hold what arrives meanwhile).
void HttpServer::Impl::WaitForEvents(Supervision& s) {
  constexpr auto kChannelPause = std::chrono::milliseconds(10);
  std::vector<pollfd> waited{{s.signals.get(), POLLIN, 0}};
  std::vector<int> slots{-1};
  const auto now = Supervision::Clock::now();
  if (guard != nullptr && now >= s.channels_read + kChannelPause) {
    for (const auto& [fd, slot] : guard->Channels()) {
      if (s.hung_up.count(slot) != 0) continue;
      waited.push_back({fd, POLLIN, 0});
      slots.push_back(slot);
    }
  }
  const int timeout = waited.size() > 1 ? 200 : 10;
  if (::poll(waited.data(), waited.size(), timeout) <= 0) return;
  for (size_t i = 1; i < waited.size(); ++i) {
    if (waited[i].revents == 0) continue;
    s.channels_read = Supervision::Clock::now();
    guard->Read(slots[i]);
    if ((waited[i].revents & (POLLHUP | POLLERR)) != 0) s.hung_up.insert(slots[i]);
  }
  unsigned char signal = 0;
  while (::read(s.signals.get(), &signal, 1) == 1) {
    if ((signal == SIGINT || signal == SIGTERM) && !s.stopping) {
      s.stopping = true;
      // The listening socket stays open while any process holds it: ours
      // goes now, so new connections are refused rather than queued.
      beast::error_code ignored;
      acceptor.close(ignored);
      s.kill_at = Supervision::Clock::now() + options.drain_timeout + std::chrono::seconds(5);
      s.SignalAll(SIGTERM);
    }
  }
}

// Reaps workers that ended: answers the calls they died in and starts
// others, unless stopping or workers keep dying as they start (which a
// restart would not fix; a worker that died in a call is the call's doing).
void HttpServer::Impl::ReapWorkers(Supervision& s) {
  int status = 0;
  for (pid_t pid; (pid = ::waitpid(-1, &status, WNOHANG)) > 0;) {
    auto it = s.workers.find(pid);
    if (it == s.workers.end()) continue;
    const bool quick = Supervision::Clock::now() - it->second.started < std::chrono::seconds(1);
    const int slot = it->second.slot;
    s.workers.erase(it);
    s.hung_up.erase(slot);
    const int answered = guard != nullptr ? guard->Settle(slot) : 0;
    if (s.stopping && answered == 0) continue;
    std::cerr << "tesscpp: worker " << pid << " died ("
              << (WIFSIGNALED(status) ? "signal " + std::to_string(WTERMSIG(status))
                                      : "status " + std::to_string(WEXITSTATUS(status)))
              << ")";
    if (answered > 0) std::cerr << " in " << answered << " call(s), answered 500";
    if (s.stopping) {
      std::cerr << std::endl;
      continue;
    }
    if (quick && answered == 0 && ++s.quick_deaths > 5) {
      std::cerr << "; workers die as they start, stopping\n";
      s.stopping = true;
      s.kill_at = Supervision::Clock::now() + options.drain_timeout;
      s.SignalAll(SIGTERM);
      continue;
    }
    std::cerr << "; starting another" << std::endl;
    const pid_t fresh = StartWorker(slot, s.worker_mask);
    if (fresh > 0) s.workers.emplace(fresh, Supervision::Worker{Supervision::Clock::now(), slot});
  }
}

// The supervisor: starts the workers, restarts one that dies, answers the
// calls a dead one was computing (CallGuard), and on SIGTERM/SIGINT (or
// Stop()) passes the signal on and waits for every worker to drain.
void HttpServer::Impl::Supervise(int processes) {
  Supervision s;
  ::pthread_sigmask(SIG_SETMASK, nullptr, &s.worker_mask);
  // The workers' event loops take SIGINT and SIGTERM (asio); this process
  // hears them through a pipe (below) instead.
  beast::error_code ignored;
  signals.clear(ignored);
  s.signals = SupervisorSignals::Install();
  supervising = true;
  auto made = CallGuard::Create();
  if (made.ok()) {
    guard = *std::move(made);
  } else {
    std::cerr << "tesscpp: workers run unguarded: " << made.status().message() << "\n";
  }
  for (int i = 0; i < processes; ++i) {
    const pid_t pid = StartWorker(i, s.worker_mask);
    if (pid > 0) s.workers.emplace(pid, Supervision::Worker{Supervision::Clock::now(), i});
  }
  while (!s.workers.empty()) {
    WaitForEvents(s);
    if (s.stopping && Supervision::Clock::now() >= s.kill_at) {
      s.SignalAll(SIGKILL);
    }
    ReapWorkers(s);
  }
  SupervisorSignals::Restore();
}

Result<std::unique_ptr<HttpServer>> HttpServer::Start(const Runtime& runtime,
                                                      const HttpServerOptions& options) {
  auto impl = std::make_unique<Impl>(runtime, options);
  if (impl->state.metrics == nullptr) {
    return Status::Unavailable("cannot map the server's metrics: ", std::strerror(errno));
  }
  if (options.handoff) return AdoptListener(std::move(impl), options.handoff->listen_fd);
  TESS_ASSIGN_OR_RETURN(const tcp::endpoint endpoint,
                        ListeningEndpoint(impl->io, options.host, options.port));
  beast::error_code ec;
  impl->acceptor.open(endpoint.protocol(), ec);
  if (!ec) impl->acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) impl->acceptor.bind(endpoint, ec);
  if (!ec) impl->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return Status::Unavailable("cannot listen on ", options.host, ":", options.port, ": ", ec.message());
  }
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

// A worker started by exec serves the socket its supervisor listens on.
Result<std::unique_ptr<HttpServer>> HttpServer::AdoptListener(std::unique_ptr<Impl> impl, int fd) {
  sockaddr_storage address{};
  socklen_t length = sizeof address;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    return Status::InvalidArgument("the handed listening socket (descriptor ", fd,
                                   ") is not a socket: ", std::strerror(errno));
  }
  beast::error_code ec;
  impl->acceptor.assign(address.ss_family == AF_INET6 ? tcp::v6() : tcp::v4(), fd, ec);
  if (ec) return Status::Unavailable("cannot serve the handed listening socket: ", ec.message());
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

// Run() has returned by now (or never ran): nothing is left to stop.
HttpServer::~HttpServer() = default;

uint16_t HttpServer::port() const { return impl_->acceptor.local_endpoint().port(); }

void HttpServer::Run() {
  if (impl_->options.num_workers > 1 || impl_->options.supervise) {
    return impl_->Supervise(impl_->options.num_workers);
  }
  impl_->Serve();
}

void HttpServer::Stop() {
  if (impl_->supervising) {
    ::kill(::getpid(), SIGTERM);  // the supervisor waits for it
    return;
  }
  asio::post(impl_->io, [this] { impl_->Drain(); });
}

}  // namespace tesscpp::http
