// log_streamer.h: following a run's tesseract.log while its endpoint runs.
// Logs are not part of the HTTP exchange: like tesseract-core's SDK, the
// client tails the file in the shared output directory.
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "tesscpp/client.h"

namespace tesscpp::client {

/// \brief While alive, a thread polls `path` (from 1 ms, doubling up to 100 ms
/// while nothing arrives) and hands every complete line to `sink`, in order. On
/// destruction it reads what is left and hands over the last line even
/// without its newline. A file that does not exist yet is waited for.
class LogStreamer {
 public:
  LogStreamer(std::string path, LogSink sink);
  ~LogStreamer();
  LogStreamer(const LogStreamer&) = delete;
  LogStreamer& operator=(const LogStreamer&) = delete;

 private:
  void Run();
  // Reads what was appended since the last poll; returns whether anything was.
  bool Poll();

  std::string path_;
  LogSink sink_;
  int fd_ = -1;
  std::string partial_;  // bytes after the last newline
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace tesscpp::client
