// file.cc: Fd and MappedFile.
#include "tesscpp/internal/platform/file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace tesscpp::platform {

Fd::~Fd() {
  if (fd_ >= 0) ::close(fd_);
}

Fd& Fd::operator=(Fd&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.release();
  }
  return *this;
}

Result<Fd> Fd::Open(const std::string& path, int flags, int mode) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC, mode);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) return Status::NotFound("file '", path, "' does not exist");
    return Status::IoError("cannot open '", path, "': ", std::strerror(err));
  }
  return Fd(fd);
}

Result<int64_t> Fd::Size() const {
  struct stat st {};
  if (::fstat(fd_, &st) != 0) return Status::IoError("fstat failed: ", std::strerror(errno));
  return static_cast<int64_t>(st.st_size);
}

Status Fd::WriteAt(int64_t offset, std::span<const uint8_t> bytes) const {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n =
        ::pwrite(fd_, bytes.data() + done, bytes.size() - done, offset + static_cast<off_t>(done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::IoError("write failed: ", std::strerror(errno));
    }
    done += static_cast<size_t>(n);
  }
  return Status::OK();
}

Status Fd::Reserve(int64_t offset, int64_t length) const {
  if (length <= 0) return Status::OK();
  // Not posix_fallocate: where the filesystem cannot allocate, glibc's
  // emulation writes every block, slower than writing the data itself.
  if (::fallocate(fd_, 0, offset, length) == 0) return Status::OK();
  if (errno != EOPNOTSUPP) return Status::IoError("fallocate failed: ", std::strerror(errno));
  TESS_ASSIGN_OR_RETURN(const int64_t size, Size());
  return size >= offset + length ? Status::OK() : Truncate(offset + length);
}

Status Fd::Truncate(int64_t size) const {
  if (::ftruncate(fd_, size) != 0) return Status::IoError("ftruncate failed: ", std::strerror(errno));
  return Status::OK();
}

MappedFile::~MappedFile() {
  if (base_ != nullptr) ::munmap(base_, base_length_);
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : base_(other.base_), base_length_(other.base_length_), data_(other.data_), length_(other.length_) {
  other.base_ = nullptr;
  other.data_ = nullptr;
  other.length_ = 0;
}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  MappedFile moved(std::move(other));
  std::swap(base_, moved.base_);
  std::swap(base_length_, moved.base_length_);
  std::swap(data_, moved.data_);
  std::swap(length_, moved.length_);
  return *this;  // `moved` now unmaps what this object held
}

Result<MappedFile> MappedFile::Map(const Fd& fd, int64_t offset, int64_t length, Access access) {
  MappedFile m;
  if (length == 0) return m;
  const int64_t page = ::sysconf(_SC_PAGESIZE);
  const int64_t start = offset / page * page;
  m.base_length_ = static_cast<size_t>(offset - start + length);
  const int protection = access == kCopyOnWrite ? PROT_READ | PROT_WRITE : PROT_READ;
  const int flags = access == kCopyOnWrite ? MAP_PRIVATE : MAP_PRIVATE | MAP_POPULATE;
  void* base = ::mmap(nullptr, m.base_length_, protection, flags, fd.get(), start);
  if (base == MAP_FAILED) return Status::IoError("mmap failed: ", std::strerror(errno));
  m.base_ = base;
  m.data_ = static_cast<const uint8_t*>(base) + (offset - start);
  m.length_ = length;
  return m;
}

namespace {

const char* TmpDir() {
  const char* tmp = std::getenv("TMPDIR");
  return tmp != nullptr && *tmp != '\0' ? tmp : nullptr;
}

Result<std::string> MakeTempDirIn(const std::string& parent, const std::string& prefix) {
  std::string pattern = parent + "/" + prefix + "XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) {
    return Status::IoError("cannot create a temporary directory '", pattern, "': ", std::strerror(errno));
  }
  return pattern;
}

}  // namespace

Result<std::string> MakeTempDir(const std::string& prefix) {
  const char* tmp = TmpDir();
  return MakeTempDirIn(tmp != nullptr ? tmp : "/tmp", prefix);
}

Result<std::string> MakeScratchDir(const std::string& prefix) {
  struct stat st {};
  if (TmpDir() == nullptr && ::stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) &&
      ::access("/dev/shm", W_OK) == 0) {
    auto made = MakeTempDirIn("/dev/shm", prefix);
    if (made.ok()) return made;
  }
  return MakeTempDir(prefix);
}

}  // namespace tesscpp::platform
