#include "runtime/run_dir.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

namespace tesscpp::runtime {

Status CreateRunDirectory(const std::string& dir) {
  std::error_code ec;
  const std::filesystem::path logs = std::filesystem::path(dir) / "logs";
  std::filesystem::create_directories(logs / "artifacts", ec);
  if (ec) return Status::IoError("cannot create run directory '", dir, "': ", ec.message());
  std::ofstream(logs / "tesseract.log", std::ios::trunc);
  std::ofstream metrics(logs / "metrics.csv", std::ios::trunc);
  metrics << "timestamp,key,value,step\r\n";  // Python's csv module ends rows with \r\n
  if (!metrics) return Status::IoError("cannot write '", (logs / "metrics.csv").string(), "'");
  return Status::OK();
}

namespace {
std::mutex& CaptureMutex() {
  static std::mutex mutex;
  return mutex;
}
}  // namespace

Result<std::unique_ptr<StdioCapture>> StdioCapture::Start(const std::string& log_file) {
  std::unique_ptr<StdioCapture> capture(new StdioCapture());
  capture->lock_ = std::unique_lock<std::mutex>(CaptureMutex());
  const int fd = ::open(log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return Status::IoError("cannot open log file '", log_file, "': ", std::strerror(errno));
  // Whatever the process buffered so far belongs to the terminal, not the run.
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  capture->saved_stdout_ = ::dup(1);
  capture->saved_stderr_ = ::dup(2);
  ::dup2(fd, 1);
  ::dup2(fd, 2);
  ::close(fd);
  // stdout into a file is fully buffered by default; line buffering lets a
  // client tailing the log (the SDK's stream_logs) see lines as they are printed.
  std::setvbuf(stdout, nullptr, _IOLBF, BUFSIZ);
  return capture;
}

StdioCapture::~StdioCapture() {
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  if (saved_stdout_ >= 0) {
    ::dup2(saved_stdout_, 1);
    ::close(saved_stdout_);
  }
  if (saved_stderr_ >= 0) {
    ::dup2(saved_stderr_, 2);
    ::close(saved_stderr_);
  }
}

}  // namespace tesscpp::runtime
