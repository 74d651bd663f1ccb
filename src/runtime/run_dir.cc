#include "runtime/run_dir.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string_view>

namespace tesscpp::runtime {
namespace {

// mkdir(2) that accepts an existing directory (a run_id given twice).
Status MakeDirectory(const std::string& path) {
  if (::mkdir(path.c_str(), 0755) == 0 || errno == EEXIST) return Status::OK();
  return Status::IoError("cannot create run directory '", path, "': ", std::strerror(errno));
}

}  // namespace

Status PrepareOutputDirectory(const std::string& path) {
  auto refused = [&](const std::string& why) {
    return Status::InvalidArgument("the output path (TESSERACT_OUTPUT_PATH, --output-path) '", path,
                                   "' cannot hold run directories: ", why);
  };
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) return refused(ec.message());
  if (!std::filesystem::is_directory(path, ec)) return refused("it is not a directory");
  // access(2) says yes to root on a read-only mount: try what a call does.
  std::string probe = path + "/.tesscpp-write-probe-XXXXXX";
  const int fd = ::mkstemp(probe.data());
  if (fd < 0) return refused(std::strerror(errno));
  ::close(fd);
  ::unlink(probe.c_str());
  return Status::OK();
}

// Plain syscalls rather than std::filesystem: this runs on every call of a
// wrapped endpoint, and each saved stat or reopen is latency a client sees.
Result<platform::Fd> CreateRunDirectory(const std::string& dir, bool tracked_in_files) {
  const std::string logs = dir + "/logs";
  TESS_RETURN_IF_ERROR(MakeDirectory(dir));
  TESS_RETURN_IF_ERROR(MakeDirectory(logs));
  if (tracked_in_files) {
    TESS_RETURN_IF_ERROR(MakeDirectory(logs + "/artifacts"));
    TESS_ASSIGN_OR_RETURN(platform::Fd metrics, platform::Fd::Open(logs + "/metrics.csv",
                                                                   O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC));
    // Python's csv module ends rows with \r\n.
    static constexpr std::string_view kHeader = "timestamp,key,value,step\r\n";
    TESS_RETURN_IF_ERROR(
        metrics.WriteAt(0, {reinterpret_cast<const uint8_t*>(kHeader.data()), kHeader.size()}));
  }
  return platform::Fd::Open(logs + "/tesseract.log", O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC);
}

namespace {
std::mutex& CaptureMutex() {
  static std::mutex mutex;
  return mutex;
}
}  // namespace

Result<std::unique_ptr<StdioCapture>> StdioCapture::Start(platform::Fd log) {
  std::unique_ptr<StdioCapture> capture(new StdioCapture());
  capture->lock_ = std::unique_lock<std::mutex>(CaptureMutex());
  // Whatever the process buffered so far belongs to the terminal, not the run.
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  capture->saved_stdout_ = ::dup(1);
  capture->saved_stderr_ = ::dup(2);
  ::dup2(log.get(), 1);
  ::dup2(log.get(), 2);
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
