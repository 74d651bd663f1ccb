// http_connection.cc: libcurl easy handle, kept alive between requests;
// responses read into one padded buffer sized from Content-Length.
#include "client/http_connection.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>

#include "platform/http_headers.h"
#include "tesscpp/internal/core/buffer_pool.h"

namespace tesscpp::client {
namespace {

void InitCurlOnce() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

std::string Lowercase(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n')) {
    s.remove_suffix(1);
  }
  return s;
}

// A curl header list freed on scope exit.
struct HeaderList {
  curl_slist* list = nullptr;
  ~HeaderList() { curl_slist_free_all(list); }
  void Add(const std::string& header) { list = curl_slist_append(list, header.c_str()); }
};

}  // namespace

std::optional<std::string> HttpResponse::Header(std::string_view name) const {
  const std::optional<std::string_view> value = platform::FindHeader(headers, name);
  return value ? std::optional<std::string>(*value) : std::nullopt;
}

std::vector<std::string> AuthorizationHeaders(const std::string& token) {
  if (token.empty()) return {};
  return {"Authorization: Bearer " + token};
}

std::string SanitizeUrl(std::string_view url) {
  std::string out(Trim(url));
  if (out.find("://") == std::string::npos) out = "http://" + out;
  const size_t authority = out.find("://") + 3;
  const size_t end = out.find_first_of("?#", authority);
  if (end != std::string::npos) out.resize(end);
  while (out.size() > authority && out.back() == '/') out.pop_back();
  return out;
}

// The state of one request, reached from curl's callbacks.
struct HttpConnection::Transfer {
  HttpResponse response;
  Buffer body;           // sized from Content-Length when the server sent one
  int64_t received = 0;  // bytes in `body`
  std::string overflow;  // bytes without (or beyond) a Content-Length
  Status failure;        // an allocation that failed inside a callback
  // The request body, handed to curl piece by piece.
  const char* upload = nullptr;
  size_t upload_size = 0;
  size_t uploaded = 0;  // bytes curl has taken

  static size_t OnHeader(char* data, size_t size, size_t count, void* self) {
    auto* t = static_cast<Transfer*>(self);
    const std::string_view line(data, size * count);
    if (line.rfind("HTTP/", 0) == 0) {  // a new response (after a 100 Continue, a retry)
      // "HTTP/1.1 404 NOT FOUND\r\n": what follows the code is the reason.
      const size_t code = line.find(' ');
      const size_t reason = code == std::string_view::npos ? code : line.find(' ', code + 1);
      t->response.reason =
          reason == std::string_view::npos ? std::string() : std::string(Trim(line.substr(reason + 1)));
      t->response.headers.clear();
      t->body = Buffer();
      t->received = 0;
      t->overflow.clear();
      return size * count;
    }
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) return size * count;
    std::string name = Lowercase(Trim(line.substr(0, colon)));
    std::string value(Trim(line.substr(colon + 1)));
    if (name == "content-length") {
      char* end = nullptr;
      const long long length = std::strtoll(value.c_str(), &end, 10);
      if (length > 0 && end != value.c_str()) {
        auto buffer = BufferPool::Default()->Allocate(length);
        if (!buffer.ok()) {
          t->failure = buffer.status();
          return 0;  // aborts the transfer
        }
        t->body = *std::move(buffer);
      }
    } else if (name == "content-type") {
      t->response.content_type = value;
    }
    t->response.headers.emplace_back(std::move(name), std::move(value));
    return size * count;
  }

  static size_t OnBody(char* data, size_t size, size_t count, void* self) {
    auto* t = static_cast<Transfer*>(self);
    const size_t n = size * count;
    const int64_t room = t->body.size() - t->received;
    if (t->overflow.empty() && static_cast<int64_t>(n) <= room) {
      std::memcpy(t->body.data() + t->received, data, n);
      t->received += static_cast<int64_t>(n);
    } else {
      t->overflow.append(data, n);
    }
    return n;
  }

  static size_t OnRead(char* data, size_t size, size_t count, void* self) {
    auto* t = static_cast<Transfer*>(self);
    const size_t n = std::min(size * count, t->upload_size - t->uploaded);
    if (n > 0) std::memcpy(data, t->upload + t->uploaded, n);
    t->uploaded += n;
    return n;
  }

  // curl rewinds the body to replay a request on a fresh connection when a
  // reused one dies before any response byte ("Connection died, retrying").
  // Once a byte has gone out the server may have run the call (a replica
  // killed mid-apply behind HAProxy looks exactly like that), and POST is not
  // idempotent: refusing the rewind makes curl fail with
  // CURLE_SEND_FAIL_REWIND instead of running the call a second time.
  static int OnSeek(void* self, curl_off_t offset, int origin) {
    auto* t = static_cast<Transfer*>(self);
    if (origin != SEEK_SET || offset != 0 || t->uploaded != 0) return CURL_SEEKFUNC_CANTSEEK;
    return CURL_SEEKFUNC_OK;
  }

  // The body as one padded buffer.
  Result<Buffer> TakeBody() {
    if (overflow.empty() && received == body.size()) return std::move(body);
    TESS_ASSIGN_OR_RETURN(Buffer all,
                          BufferPool::Default()->Allocate(received + static_cast<int64_t>(overflow.size())));
    if (received > 0) std::memcpy(all.data(), body.data(), static_cast<size_t>(received));
    if (!overflow.empty()) std::memcpy(all.data() + received, overflow.data(), overflow.size());
    return all;
  }
};

Result<std::unique_ptr<HttpConnection>> HttpConnection::Open(std::string base_url, HttpTimeouts timeouts,
                                                             int pool_size, std::vector<std::string> always) {
  InitCurlOnce();
  std::unique_ptr<HttpConnection> c(new HttpConnection());
  c->base_url_ = std::move(base_url);
  c->timeouts_ = timeouts;
  c->pool_size_ = static_cast<size_t>(std::max(1, pool_size));
  c->always_ = std::move(always);
  // One handle now: a broken libcurl shows at once, and the first call has
  // one waiting.
  TESS_ASSIGN_OR_RETURN(void* first, c->Acquire());
  c->Release(first);
  return c;
}

HttpConnection::~HttpConnection() {
  for (void* curl : idle_) curl_easy_cleanup(static_cast<CURL*>(curl));
  for (auto& [key, curl] : parked_) curl_easy_cleanup(static_cast<CURL*>(curl));
}

Result<void*> HttpConnection::Acquire(std::string_view use) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!use.empty()) {
      auto it = std::find_if(parked_.begin(), parked_.end(), [&](const auto& p) { return p.first == use; });
      if (it != parked_.end()) {
        void* curl = it->second;
        parked_.erase(it);
        return curl;
      }
    }
    if (!idle_.empty()) {
      void* curl = idle_.back();
      idle_.pop_back();
      return curl;
    }
  }
  CURL* curl = curl_easy_init();
  if (curl == nullptr) return Status::ResourceExhausted("curl_easy_init failed");
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);  // timeouts without SIGALRM: safe in threads
  curl_easy_setopt(curl, CURLOPT_TCP_NODELAY, 1L);
  curl_easy_setopt(curl, CURLOPT_BUFFERSIZE, 512L * 1024);
  curl_easy_setopt(curl, CURLOPT_UPLOAD_BUFFERSIZE, 2L * 1024 * 1024);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(std::ceil(timeouts_.connect_s * 1000)));
  if (timeouts_.read_s > 0) {
    // "Less than 1 byte per second for read_s seconds": the longest silence.
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME,
                     std::max(1L, static_cast<long>(std::ceil(timeouts_.read_s))));
  }
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, &Transfer::OnHeader);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, &Transfer::OnBody);
  curl_easy_setopt(curl, CURLOPT_READFUNCTION, &Transfer::OnRead);
  curl_easy_setopt(curl, CURLOPT_SEEKFUNCTION, &Transfer::OnSeek);
  return static_cast<void*>(curl);
}

void HttpConnection::Forget(const std::vector<std::string>& keys) {
  std::vector<void*> pooled;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = parked_.begin(); it != parked_.end();) {
      if (std::find(keys.begin(), keys.end(), it->first) == keys.end()) {
        ++it;
        continue;
      }
      pooled.push_back(it->second);
      it = parked_.erase(it);
    }
  }
  for (void* curl : pooled) Release(curl);
}

void HttpConnection::Release(void* curl, std::string park) {
  if (!park.empty()) {
    std::lock_guard<std::mutex> lock(mutex_);
    const bool taken =
        std::any_of(parked_.begin(), parked_.end(), [&](const auto& p) { return p.first == park; });
    if (!taken) {
      parked_.emplace_back(std::move(park), curl);
      if (parked_.size() <= kMaxParked) return;
      curl = parked_.front().second;  // the oldest goes back to the pool
      parked_.erase(parked_.begin());
    }
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (idle_.size() < pool_size_) {
      idle_.push_back(curl);
      return;
    }
  }
  // More threads than the pool keeps: this connection closes, as requests
  // discards a connection its full pool cannot take back.
  curl_easy_cleanup(static_cast<CURL*>(curl));
}

Result<HttpResponse> HttpConnection::Send(std::string_view method, std::string_view target,
                                          const std::vector<std::string>& headers, const Buffer* body,
                                          const Affinity* affinity) {
  if (affinity != nullptr && !affinity->forget.empty()) Forget(affinity->forget);
  TESS_ASSIGN_OR_RETURN(void* curl, Acquire(affinity != nullptr ? std::string_view(affinity->use) : ""));
  const std::string url = base_url_ + std::string(target);
  bool connection_failed = false;
  auto response = SendOnce(curl, method, url, headers, body, &connection_failed);
  // The server may close a kept-alive connection just as a request goes out
  // (its idle timeout). A GET is safe to send again; a call with a body is
  // not, since the server may have run it before the connection died
  // (docs/architecture.md §3, "Lost connections").
  if (!response.ok() && connection_failed && method == "GET")
    response = SendOnce(curl, method, url, headers, body, &connection_failed);
  std::string park;
  if (affinity != nullptr && affinity->park_as && response.ok()) park = affinity->park_as(*response);
  Release(curl, std::move(park));
  return response;
}

Result<HttpResponse> HttpConnection::SendOnce(void* handle, std::string_view method, const std::string& url,
                                              const std::vector<std::string>& headers, const Buffer* body,
                                              bool* connection_failed) {
  CURL* curl = static_cast<CURL*>(handle);
  Transfer transfer;
  HeaderList list;
  for (const std::string& h : always_) list.Add(h);
  for (const std::string& h : headers) list.Add(h);
  list.Add("Expect:");  // no 100-continue round trip: the body follows at once
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, list.list);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &transfer);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &transfer);
  curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, nullptr);
  if (method == "GET") {
    curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);
  } else {
    transfer.upload = body != nullptr ? reinterpret_cast<const char*>(body->data()) : "";
    transfer.upload_size = body != nullptr ? static_cast<size_t>(body->size()) : 0;
    curl_easy_setopt(curl, CURLOPT_POST, 1L);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, nullptr);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(transfer.upload_size));
    curl_easy_setopt(curl, CURLOPT_READDATA, &transfer);
    curl_easy_setopt(curl, CURLOPT_SEEKDATA, &transfer);
    if (method != "POST") curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, std::string(method).c_str());
  }
  const CURLcode code = curl_easy_perform(curl);
  if (!transfer.failure.ok()) return transfer.failure;
  if (code != CURLE_OK) {
    const std::string what = std::string(method) + " " + url + ": " + curl_easy_strerror(code);
    switch (code) {
      case CURLE_OPERATION_TIMEDOUT: return Status::DeadlineExceeded("timed out: ", what);
      case CURLE_GOT_NOTHING:
      case CURLE_SEND_ERROR:
      case CURLE_RECV_ERROR: *connection_failed = true; return Status::Unavailable("connection lost: ", what);
      case CURLE_SEND_FAIL_REWIND:
        return Status::Unavailable(
            "connection lost after the request was sent; not sent again, since the "
            "Tesseract may have run it: ",
            std::string(method) + " " + url);
      default: return Status::Unavailable("cannot reach the Tesseract: ", what);
    }
  }
  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  transfer.response.status = static_cast<int>(status);
  TESS_ASSIGN_OR_RETURN(transfer.response.body, transfer.TakeBody());
  return std::move(transfer.response);
}

}  // namespace tesscpp::client
