// fd_passing.cc: an abstract Unix socket that answers a request line with
// descriptors (SCM_RIGHTS), and its client.
//
// The answer: 8 bytes (error length, descriptor count, uint32 each, native
// order: both ends run on one host), then the error text, or the descriptors
// in chunks of kChunk, each attached to as many bytes as it carries.
#include "platform/fd_passing.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace tesscpp::platform {
namespace {

constexpr size_t kChunk = 250;           // below the kernel's SCM_MAX_FD (253)
constexpr size_t kMaxRequest = 4 << 20;  // bytes of one request line
constexpr int kServerTimeoutMs = 5000;   // a peer that stalls holds the server this long at most

Status Errno(std::string_view what) { return Status::Unavailable(what, " failed: ", std::strerror(errno)); }

Result<std::pair<sockaddr_un, socklen_t>> AbstractAddress(std::string_view name) {
  sockaddr_un address{};
  if (name.empty() || name.size() + 1 > sizeof address.sun_path) {
    return Status::InvalidArgument("an abstract socket name has 1 to ", sizeof address.sun_path - 1,
                                   " bytes, got ", name.size());
  }
  address.sun_family = AF_UNIX;
  address.sun_path[0] = '\0';
  std::memcpy(address.sun_path + 1, name.data(), name.size());
  return std::make_pair(address, static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size()));
}

void SetTimeouts(int fd, int timeout_ms) {
  timeval timeout{timeout_ms / 1000, static_cast<suseconds_t>(timeout_ms % 1000) * 1000};
  (void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  (void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
}

Status SendAll(int fd, const void* data, size_t size) {
  const auto* bytes = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t sent = send(fd, bytes, size, MSG_NOSIGNAL);
    if (sent < 0 && errno == EINTR) continue;
    if (sent <= 0) return Errno("send");
    bytes += sent;
    size -= static_cast<size_t>(sent);
  }
  return Status::OK();
}

Status ReceiveAll(int fd, void* data, size_t size) {
  auto* bytes = static_cast<char*>(data);
  while (size > 0) {
    const ssize_t got = recv(fd, bytes, size, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got == 0) return Status::Unavailable("the peer closed the connection");
    if (got < 0) return Errno("recv");
    bytes += got;
    size -= static_cast<size_t>(got);
  }
  return Status::OK();
}

Status SendChunk(int fd, const int* fds, size_t count) {
  std::array<char, kChunk> bytes{};  // content unread: one byte per descriptor
  std::array<char, CMSG_SPACE(sizeof(int) * kChunk)> control{};
  iovec io{bytes.data(), count};
  msghdr message{};
  message.msg_iov = &io;
  message.msg_iovlen = 1;
  message.msg_control = control.data();
  message.msg_controllen = CMSG_SPACE(sizeof(int) * count);
  cmsghdr* header = CMSG_FIRSTHDR(&message);
  header->cmsg_level = SOL_SOCKET;
  header->cmsg_type = SCM_RIGHTS;
  header->cmsg_len = CMSG_LEN(sizeof(int) * count);
  std::memcpy(CMSG_DATA(header), fds, sizeof(int) * count);
  // The bytes carrying the descriptors go in one sendmsg; a short send would
  // leave the rest without them.
  ssize_t sent;
  do {
    sent = sendmsg(fd, &message, MSG_NOSIGNAL);
  } while (sent < 0 && errno == EINTR);
  if (sent < 0) return Errno("sendmsg");
  if (static_cast<size_t>(sent) != count) return Status::Unavailable("sendmsg sent part of a chunk");
  return Status::OK();
}

// Receives `count` descriptors, appending them to `fds`. A stream socket
// never merges bytes that carry descriptors with later ones into one read.
Status ReceiveFdsInto(int fd, size_t count, std::vector<Fd>& fds) {
  while (count > 0) {
    std::array<char, kChunk> bytes{};
    std::array<char, CMSG_SPACE(sizeof(int) * kChunk)> control{};
    iovec io{bytes.data(), std::min(count, kChunk)};
    msghdr message{};
    message.msg_iov = &io;
    message.msg_iovlen = 1;
    message.msg_control = control.data();
    message.msg_controllen = control.size();
    const ssize_t got = recvmsg(fd, &message, MSG_CMSG_CLOEXEC);
    if (got < 0 && errno == EINTR) continue;
    if (got == 0) return Status::Unavailable("the peer closed the connection");
    if (got < 0) return Errno("recvmsg");
    for (cmsghdr* h = CMSG_FIRSTHDR(&message); h != nullptr; h = CMSG_NXTHDR(&message, h)) {
      if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS) continue;
      const size_t n = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < n; ++i) {
        int received = -1;
        std::memcpy(&received, CMSG_DATA(h) + i * sizeof(int), sizeof(int));
        fds.emplace_back(received);
      }
    }
    if ((message.msg_flags & MSG_CTRUNC) != 0) return Status::Unavailable("descriptors were cut off");
    count -= static_cast<size_t>(got);
  }
  return Status::OK();
}

Result<Fd> Connect(std::string_view name, int timeout_ms) {
  TESS_ASSIGN_OR_RETURN(auto address, AbstractAddress(name));
  Fd socket_fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!socket_fd.valid()) return Errno("socket");
  SetTimeouts(socket_fd.get(), timeout_ms);
  if (connect(socket_fd.get(), reinterpret_cast<const sockaddr*>(&address.first), address.second) != 0) {
    return Status::Unavailable("nothing listens on the Unix socket @", name, ": ", std::strerror(errno));
  }
  return socket_fd;
}

}  // namespace

Result<std::unique_ptr<FdServer>> FdServer::Start(std::string name, Handler handler,
                                                  std::function<void()> tick, int tick_ms) {
  TESS_ASSIGN_OR_RETURN(auto address, AbstractAddress(name));
  Fd listener(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!listener.valid()) return Errno("socket");
  if (bind(listener.get(), reinterpret_cast<const sockaddr*>(&address.first), address.second) != 0) {
    return Status::Unavailable("binding the Unix socket @", name, " failed: ", std::strerror(errno));
  }
  if (listen(listener.get(), 64) != 0) return Errno("listen");
  Fd stop(eventfd(0, EFD_CLOEXEC));
  if (!stop.valid()) return Errno("eventfd");
  return std::unique_ptr<FdServer>(new FdServer(std::move(name), std::move(listener), std::move(stop),
                                                std::move(handler), std::move(tick), tick_ms));
}

FdServer::FdServer(std::string name, Fd listener, Fd stop, Handler handler, std::function<void()> tick,
                   int tick_ms)
    : name_(std::move(name)),
      listener_(std::move(listener)),
      stop_(std::move(stop)),
      handler_(std::move(handler)),
      tick_(std::move(tick)),
      tick_ms_(tick_ms),
      thread_([this] { Serve(); }) {}

FdServer::~FdServer() {
  const uint64_t one = 1;
  if (write(stop_.get(), &one, sizeof one) != sizeof one) std::perror("tesscpp: stopping an fd server");
  thread_.join();
}

void FdServer::Serve() {
  using Clock = std::chrono::steady_clock;
  auto next_tick = Clock::now() + std::chrono::milliseconds(tick_ms_);
  for (;;) {
    const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next_tick - Clock::now()).count();
    std::array<pollfd, 2> watched{pollfd{listener_.get(), POLLIN, 0}, pollfd{stop_.get(), POLLIN, 0}};
    const int ready = poll(watched.data(), watched.size(), static_cast<int>(std::max<int64_t>(wait, 0)));
    if (ready > 0 && (watched[1].revents & POLLIN) != 0) return;
    if (ready > 0 && (watched[0].revents & POLLIN) != 0) {
      Fd connection(accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
      if (connection.valid()) Answer(connection);
    }
    // On the clock only, never per connection: a tick may connect to peers,
    // whose servers would otherwise tick back at once, without end.
    if (tick_ && Clock::now() >= next_tick) {
      tick_();
      next_tick = Clock::now() + std::chrono::milliseconds(tick_ms_);
    }
  }
}

void FdServer::Answer(const Fd& connection) {
  // One deadline for the whole request: a peer sending a byte at a time
  // cannot hold the (single) server thread longer than that.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kServerTimeoutMs);
  std::string request;
  for (char buffer[4096];;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now())
            .count();
    if (left <= 0) return;
    SetTimeouts(connection.get(), static_cast<int>(left));
    const ssize_t got = recv(connection.get(), buffer, sizeof buffer, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return;  // a peer that only checked that we listen, or went away
    request.append(buffer, static_cast<size_t>(got));
    if (request.back() == '\n') break;
    if (request.size() > kMaxRequest) return;
  }
  request.pop_back();
  Result<std::vector<int>> fds = handler_(request);
  const std::string error = fds.ok() ? std::string() : fds.status().message();
  const uint32_t head[2] = {static_cast<uint32_t>(error.size()),
                            fds.ok() ? static_cast<uint32_t>(fds->size()) : 0U};
  if (!SendAll(connection.get(), head, sizeof head).ok()) return;
  if (!fds.ok()) {
    (void)SendAll(connection.get(), error.data(), error.size());
    return;
  }
  for (size_t sent = 0; sent < fds->size(); sent += kChunk) {
    if (!SendChunk(connection.get(), fds->data() + sent, std::min(kChunk, fds->size() - sent)).ok()) return;
  }
}

Result<std::vector<Fd>> RequestFds(std::string_view name, std::string_view request, size_t expected,
                                   int timeout_ms) {
  if (request.find('\n') != std::string_view::npos) return Status::InvalidArgument("a request is one line");
  TESS_ASSIGN_OR_RETURN(Fd connection, Connect(name, timeout_ms));
  std::string line(request);
  line += '\n';
  TESS_RETURN_IF_ERROR(
      SendAll(connection.get(), line.data(), line.size()).WithContext("@" + std::string(name)));
  uint32_t head[2] = {0, 0};
  TESS_RETURN_IF_ERROR(ReceiveAll(connection.get(), head, sizeof head).WithContext("@" + std::string(name)));
  if (head[0] > 0) {
    std::string error(std::min<uint32_t>(head[0], 1 << 16), '\0');
    TESS_RETURN_IF_ERROR(ReceiveAll(connection.get(), error.data(), error.size()));
    return Status::NotFound("@", name, " refused: ", error);
  }
  // The count comes from the peer: anything but what was asked for is refused
  // before a byte of it is read.
  if (head[1] != expected) {
    return Status::Unavailable("@", name, " answered ", head[1], " descriptors for ", expected, " asked");
  }
  std::vector<Fd> fds;
  fds.reserve(expected);
  TESS_RETURN_IF_ERROR(ReceiveFdsInto(connection.get(), head[1], fds).WithContext("@" + std::string(name)));
  return fds;
}

bool AbstractSocketListening(std::string_view name) { return Connect(name, 1000).ok(); }

}  // namespace tesscpp::platform
