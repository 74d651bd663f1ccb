#include "http/call_guard.h"

#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>
#include <string_view>

namespace tesscpp::http {
namespace {

static_assert(std::atomic<uint64_t>::is_always_lock_free, "the table is shared between processes");

// One message on a slot's channel (SOCK_SEQPACKET keeps them whole).
struct Message {
  enum Kind : uint32_t { kAccepted = 1, kClosed = 2 };
  uint32_t kind;
  uint32_t reserved;
  uint64_t id;
};

// What a dead worker's callers get: the runtime's plain 500.
constexpr std::string_view kAnswer =
    "HTTP/1.1 500 Internal Server Error\r\ncontent-type: text/plain; charset=utf-8\r\n"
    "content-length: 21\r\nconnection: close\r\n\r\nInternal Server Error";

thread_local int this_thread_cell = 0;

bool Send(int channel, const Message& message, int fd) {
  iovec part{const_cast<Message*>(&message), sizeof message};
  msghdr header{};
  header.msg_iov = &part;
  header.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  if (fd >= 0) {
    header.msg_control = control;
    header.msg_controllen = sizeof control;
    cmsghdr* item = CMSG_FIRSTHDR(&header);
    item->cmsg_level = SOL_SOCKET;
    item->cmsg_type = SCM_RIGHTS;
    item->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(item), &fd, sizeof fd);
  }
  // Never blocks a worker's event loop: a supervisor that fell behind costs
  // this connection its guard, nothing else.
  ssize_t sent;
  do {
    sent = ::sendmsg(channel, &header, MSG_DONTWAIT | MSG_NOSIGNAL);
  } while (sent < 0 && errno == EINTR);
  return sent == static_cast<ssize_t>(sizeof message);
}

// The next message of `channel` and the descriptor it carries (-1: none);
// false when nothing is waiting or the worker's end is gone.
bool Receive(int channel, Message& message, int& fd) {
  iovec part{&message, sizeof message};
  msghdr header{};
  header.msg_iov = &part;
  header.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  header.msg_control = control;
  header.msg_controllen = sizeof control;
  ssize_t got;
  do {
    got = ::recvmsg(channel, &header, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
  } while (got < 0 && errno == EINTR);
  if (got != static_cast<ssize_t>(sizeof message)) return false;
  fd = -1;
  for (cmsghdr* item = CMSG_FIRSTHDR(&header); item != nullptr; item = CMSG_NXTHDR(&header, item)) {
    if (item->cmsg_level == SOL_SOCKET && item->cmsg_type == SCM_RIGHTS) {
      std::memcpy(&fd, CMSG_DATA(item), sizeof fd);
    }
  }
  return true;
}

}  // namespace

CallTable* CallTable::Create(platform::Fd& fd) {
  fd = platform::Fd(::memfd_create("tesscpp-calls", MFD_CLOEXEC));
  if (!fd.valid() || ::ftruncate(fd.get(), sizeof(CallTable)) != 0) return nullptr;
  CallTable* table = Map(fd.get());
  return table == nullptr ? nullptr : new (table) CallTable();  // zeroed pages: zero atomics
}

CallTable* CallTable::Map(int fd) {
  void* memory = ::mmap(nullptr, sizeof(CallTable), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  return memory == MAP_FAILED ? nullptr : static_cast<CallTable*>(memory);
}

CallReporter::CallReporter(CallTable* table, int slot, platform::Fd channel)
    : table_(table), slot_(slot), channel_(std::move(channel)) {}

void CallReporter::SetThreadCell(int cell) { this_thread_cell = cell; }

uint64_t CallReporter::Accepted(int connection_fd) {
  const uint64_t id = next_id_.fetch_add(1, std::memory_order_relaxed);
  return Send(channel_.get(), Message{Message::kAccepted, 0, id}, connection_fd) ? id : 0;
}

void CallReporter::Closed(uint64_t id) {
  if (id != 0) (void)Send(channel_.get(), Message{Message::kClosed, 0, id}, -1);
}

// Release: the supervisor that finds the id after this worker died has the
// connection already (it was sent before the call could begin).
void CallReporter::Begin(uint64_t id) {
  table_->in_call[slot_][this_thread_cell].store(id, std::memory_order_release);
}

void CallReporter::End() { table_->in_call[slot_][this_thread_cell].store(0, std::memory_order_release); }

Result<std::unique_ptr<CallGuard>> CallGuard::Create() {
  platform::Fd fd;
  CallTable* table = CallTable::Create(fd);
  if (table == nullptr)
    return Status::ResourceExhausted("cannot map the workers' call table: ", std::strerror(errno));
  // The supervisor holds every worker's connections: let it hold as many
  // descriptors as the system allows this process.
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    (void)::setrlimit(RLIMIT_NOFILE, &limit);
  }
  return std::unique_ptr<CallGuard>(new CallGuard(table, std::move(fd)));
}

CallGuard::~CallGuard() { ::munmap(table_, sizeof(CallTable)); }

Result<platform::Fd> CallGuard::Open(int slot) {
  if (slot < 0 || slot >= CallTable::kMaxSlots) return Status::OutOfRange("worker slot ", slot);
  int ends[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ends) != 0) {
    return Status::IoError("cannot make a worker's call channel: ", std::strerror(errno));
  }
  Slot& state = slots_[slot];
  state.held.clear();
  state.channel = platform::Fd(ends[0]);
  for (auto& cell : table_->in_call[slot]) cell.store(0, std::memory_order_relaxed);
  return platform::Fd(ends[1]);
}

std::vector<std::pair<int, int>> CallGuard::Channels() const {
  std::vector<std::pair<int, int>> channels;
  for (const auto& [slot, state] : slots_) {
    if (state.channel.valid()) channels.emplace_back(state.channel.get(), slot);
  }
  return channels;
}

void CallGuard::Read(int slot) {
  auto it = slots_.find(slot);
  if (it == slots_.end() || !it->second.channel.valid()) return;
  Slot& state = it->second;
  Message message{};
  int fd = -1;
  while (Receive(state.channel.get(), message, fd)) {
    platform::Fd received(fd);
    if (message.kind == Message::kAccepted && received.valid()) {
      state.held[message.id] = std::move(received);
    } else if (message.kind == Message::kClosed) {
      state.held.erase(message.id);
    }
  }
}

int CallGuard::Settle(int slot) {
  Read(slot);
  auto it = slots_.find(slot);
  if (it == slots_.end()) return 0;
  int answered = 0;
  for (auto& cell : table_->in_call[slot]) {
    const uint64_t id = cell.exchange(0, std::memory_order_acquire);
    auto held = it->second.held.find(id);
    if (id == 0 || held == it->second.held.end()) continue;
    // The worker read the whole request and wrote nothing of its answer yet.
    if (::send(held->second.get(), kAnswer.data(), kAnswer.size(), MSG_DONTWAIT | MSG_NOSIGNAL) ==
        static_cast<ssize_t>(kAnswer.size())) {
      ++answered;
    }
    ::shutdown(held->second.get(), SHUT_WR);
  }
  slots_.erase(it);  // closes the channel and every connection the worker held
  return answered;
}

void CallGuard::CloseInChild() const {
  for (const auto& [slot, state] : slots_) {
    if (state.channel.valid()) ::close(state.channel.get());
    for (const auto& [id, fd] : state.held) ::close(fd.get());
  }
}

}  // namespace tesscpp::http
