// The HTTP server: Beast parses request headers, bodies are read by hand into
// pooled buffers, the Runtime answers on a worker thread.
#include "http/server.h"

#include <algorithm>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <iostream>
#include <mutex>
#include <optional>
#include <thread>

#include "tesscpp/buffer_pool.h"
#include "tesscpp/runtime.h"

namespace tesscpp {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

// Request headers beyond this are refused (431); Starlette's limit is similar.
constexpr uint32_t kHeaderLimit = 64 * 1024;
// asio caps every read_some/write_some of a composed operation at 64 KiB
// unless the completion condition says otherwise; this one lets one syscall
// move up to 16 MiB, so large bodies travel in few, large reads and writes.
constexpr size_t kMaxTransfer = size_t{16} << 20;

struct LargeTransfers {
  size_t total;
  size_t operator()(const boost::system::error_code& ec, size_t done) const {
    return ec || done >= total ? 0 : std::min(total - done, kMaxTransfer);
  }
};

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, const Runtime& runtime, const HttpServerOptions& options)
      : socket_(std::move(socket)), runtime_(runtime), options_(options) {
    buffer_.max_size(kHeaderLimit + (size_t{1} << 20));
  }

  void Start() { ReadHeader(); }

 private:
  void ReadHeader() {
    parser_.emplace();
    parser_->header_limit(kHeaderLimit);
    parser_->body_limit(boost::none);  // the body is read separately, checked against max_body_bytes
    SetDeadline(options_.keep_alive_timeout);
    http::async_read_header(
        socket_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, size_t) { self->OnHeader(ec); });
  }

  void OnHeader(beast::error_code ec) {
    if (ec == http::error::end_of_stream || ec == beast::error::timeout || ec == asio::error::eof ||
        ec == asio::error::connection_reset || ec == asio::error::operation_aborted) {
      return Close();
    }
    if (ec == http::error::header_limit) return Reject(431, "Request Header Fields Too Large");
    if (ec) return Reject(400, "Bad Request");
    const auto& header = parser_->get();
    request_ = RuntimeRequest();
    request_.method = std::string(header.method_string());
    request_.target = std::string(header.target());
    if (auto it = header.find(http::field::accept); it != header.end())
      request_.accept = std::string(it->value());
    if (auto it = header.find("Tesseract-Exports-Done"); it != header.end())
      request_.exports_done = std::string(it->value());
    if (auto it = header.find("Tesscpp-Borrower"); it != header.end())
      request_.borrower = std::string(it->value());
    if (auto it = header.find("Tesscpp-Ipc-Events"); it != header.end())
      request_.ipc_events = it->value() == "1";
    if (auto it = header.find("Tesscpp-Inputs-Event"); it != header.end())
      request_.inputs_event = std::string(it->value());
    if (auto it = header.find(http::field::content_type); it != header.end()) {
      request_.content_type = std::string(it->value());
    }
    keep_alive_ = header.keep_alive();
    head_ = header.method() == http::verb::head;

    if (parser_->chunked()) return ReadChunkedBody();
    const uint64_t length = parser_->content_length().value_or(0);
    if (length > static_cast<uint64_t>(options_.max_body_bytes)) {
      return Reject(413, "Request body of " + std::to_string(length) + " bytes exceeds the limit of " +
                             std::to_string(options_.max_body_bytes) + " bytes");
    }
    if (length == 0) return Dispatch();
    auto body = BufferPool::Default()->Allocate(static_cast<int64_t>(length));
    if (!body.ok()) return Reject(413, "Cannot hold a request body of " + std::to_string(length) + " bytes");
    request_.body = *std::move(body);
    // Bytes read past the header already belong to the body.
    const size_t have = std::min<size_t>(buffer_.size(), length);
    asio::buffer_copy(asio::buffer(request_.body.data(), have), buffer_.data());
    buffer_.consume(have);
    const size_t rest = length - have;
    if (rest == 0) return Dispatch();
    auto read_rest = [self = shared_from_this(), have, rest] {
      self->SetDeadline(self->options_.body_timeout);
      asio::async_read(self->socket_, asio::buffer(self->request_.body.data() + have, rest),
                       LargeTransfers{rest}, [self](beast::error_code read_ec, size_t) {
                         if (read_ec) return self->Close();
                         self->Dispatch();
                       });
    };
    if (ExpectsContinue(header)) return WriteContinue(read_rest);
    read_rest();
  }

  static bool ExpectsContinue(const http::request<http::empty_body>& header) {
    auto it = header.find(http::field::expect);
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
      http::async_read(self->socket_, self->buffer_, *self->chunked_, [self](beast::error_code ec, size_t) {
        if (ec == http::error::body_limit) return self->Reject(413, "Request body exceeds the limit");
        if (ec) return self->Close();
        const std::vector<char>& text = self->chunked_->get().body();
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
    Write(runtime_.Handle(request_));
  }

  void Reject(int status, const std::string& message) {
    keep_alive_ = false;
    RuntimeResponse r;
    r.status = status;
    r.content_type = "text/plain; charset=utf-8";
    r.body = Buffer::FromString(message);
    Write(std::move(r));
  }

  void Write(RuntimeResponse response) {
    response_ = std::move(response);
    request_.body = Buffer();  // the request's memory goes back to the pool before the write
    header_text_ = "HTTP/1.1 ";
    header_text_ += std::to_string(response_.status);
    header_text_ += ' ';
    header_text_ += http::obsolete_reason(static_cast<http::status>(response_.status));
    header_text_ += "\r\ncontent-type: ";
    header_text_ += response_.content_type;
    header_text_ += "\r\ncontent-length: ";
    header_text_ += std::to_string(response_.body.size());
    header_text_ += "\r\n";
    for (const auto& [name, value] : response_.headers) {
      header_text_ += name;
      header_text_ += ": ";
      header_text_ += value;
      header_text_ += "\r\n";
    }
    if (!keep_alive_) header_text_ += "connection: close\r\n";
    header_text_ += "\r\n";
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

  void Close() {
    beast::error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_send, ignored);
    socket_.close(ignored);
  }

  // Deadlines are checked by the server's sweeper once a second rather than by
  // a timer per operation: re-arming timers cost three syscalls and a reactor
  // wakeup on every request.
  void SetDeadline(std::chrono::seconds timeout) {
    deadline_ns_ = (std::chrono::steady_clock::now() + timeout).time_since_epoch().count();
  }

 public:
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
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::empty_body>> parser_;
  std::optional<http::request_parser<http::vector_body<char>>> chunked_;
  RuntimeRequest request_;
  RuntimeResponse response_;
  std::string header_text_;
  bool keep_alive_ = true;
  bool head_ = false;
};

}  // namespace

struct HttpServer::Impl {
  Impl(const Runtime& r, const HttpServerOptions& o) : runtime(r), options(o), io(Threads()) {}
  // One thread more than workers: with every worker inside a long endpoint,
  // one is still free to answer /health and read other requests.
  int Threads() const { return std::max(1, options.num_workers) + 1; }

  const Runtime& runtime;
  HttpServerOptions options;
  asio::io_context io;
  tcp::acceptor acceptor{io};
  asio::signal_set signals{io, SIGINT, SIGTERM};
  asio::steady_timer sweep_timer{io};
  std::mutex sessions_mutex;
  std::vector<std::weak_ptr<Session>> sessions;

  // Once a second: close connections whose wait outlived its deadline, forget
  // closed ones.
  void Sweep() {
    sweep_timer.expires_after(std::chrono::seconds(1));
    sweep_timer.async_wait([this](beast::error_code ec) {
      if (ec) return;
      const int64_t now = std::chrono::steady_clock::now().time_since_epoch().count();
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
      if (ec == asio::error::operation_aborted) return;
      if (!ec) {
        socket.set_option(tcp::no_delay(true));
        auto session = std::make_shared<Session>(std::move(socket), runtime, options);
        {
          std::lock_guard<std::mutex> lock(sessions_mutex);
          sessions.push_back(session);
        }
        session->Start();
      }
      Accept();
    });
  }
};

Result<std::unique_ptr<HttpServer>> HttpServer::Start(const Runtime& runtime,
                                                      const HttpServerOptions& options) {
  auto impl = std::make_unique<Impl>(runtime, options);
  beast::error_code ec;
  const auto address = asio::ip::make_address(options.host, ec);
  if (ec) return Status::InvalidArgument("'", options.host, "' is not an IP address: ", ec.message());
  const tcp::endpoint endpoint(address, options.port);
  impl->acceptor.open(endpoint.protocol(), ec);
  if (!ec) impl->acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) impl->acceptor.bind(endpoint, ec);
  if (!ec) impl->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return Status::Unavailable("cannot listen on ", options.host, ":", options.port, ": ", ec.message());
  }
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

// Run() has returned by now (or never ran): nothing is left to stop.
HttpServer::~HttpServer() = default;

uint16_t HttpServer::port() const { return impl_->acceptor.local_endpoint().port(); }

void HttpServer::Run() {
  impl_->signals.async_wait([this](beast::error_code ec, int) {
    if (!ec) Stop();
  });
  impl_->Accept();
  impl_->Sweep();
  std::vector<std::thread> threads;
  for (int i = 1; i < impl_->Threads(); ++i) threads.emplace_back([this] { impl_->io.run(); });
  impl_->io.run();
  // Requests being handled finish; their connections close with the server.
  for (std::thread& t : threads) t.join();
}

void HttpServer::Stop() {
  asio::post(impl_->io, [this] {
    beast::error_code ignored;
    impl_->acceptor.close(ignored);
    impl_->signals.cancel(ignored);
    impl_->sweep_timer.cancel();
    impl_->io.stop();
  });
}

}  // namespace tesscpp
