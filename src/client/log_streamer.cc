// log_streamer.cc: polling reader of a growing log file.
#include "client/log_streamer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

namespace tesscpp::client {

LogStreamer::LogStreamer(std::string path, LogSink sink)
    : path_(std::move(path)), sink_(std::move(sink)), thread_([this] { Run(); }) {}

LogStreamer::~LogStreamer() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
  Poll();  // what the endpoint wrote last
  if (!partial_.empty()) sink_(partial_);
  if (fd_ >= 0) ::close(fd_);
}

void LogStreamer::Run() {
  auto delay = std::chrono::milliseconds(1);
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    lock.unlock();
    const bool got = Poll();
    lock.lock();
    delay = got ? std::chrono::milliseconds(1) : std::min(delay * 2, std::chrono::milliseconds(100));
    wake_.wait_for(lock, delay, [this] { return stopping_; });
  }
}

bool LogStreamer::Poll() {
  if (fd_ < 0) {
    fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) return false;
  }
  bool got = false;
  char chunk[64 * 1024];
  for (;;) {
    const ssize_t n = ::read(fd_, chunk, sizeof chunk);
    if (n <= 0) break;
    got = true;
    partial_.append(chunk, static_cast<size_t>(n));
  }
  size_t start = 0;
  for (size_t newline = partial_.find('\n'); newline != std::string::npos;
       newline = partial_.find('\n', start)) {
    sink_(std::string_view(partial_).substr(start, newline - start));
    start = newline + 1;
  }
  partial_.erase(0, start);
  return got;
}

}  // namespace tesscpp::client
