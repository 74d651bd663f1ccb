// file.h: RAII file descriptors and read-only memory maps (internal).
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "tesscpp/result.h"

namespace tesscpp::platform {

/// \brief An owned file descriptor, closed on destruction. Move-only.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd();
  Fd(Fd&& other) noexcept : fd_(other.release()) {}
  Fd& operator=(Fd&& other) noexcept;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;

  /// \brief open(2); kNotFound when the file does not exist, kIoError otherwise,
  /// both naming the path.
  static Result<Fd> Open(const std::string& path, int flags, int mode = 0644);

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

  /// \brief The file's size (fstat).
  Result<int64_t> Size() const;

  /// \brief Writes all of `bytes` at `offset` (pwrite, retrying short writes and EINTR).
  Status WriteAt(int64_t offset, std::span<const uint8_t> bytes) const;

  /// \brief Allocates bytes [offset, offset + length), growing the file to
  /// cover them (fallocate). On tmpfs this allocates the pages about twice as
  /// fast as writing into a new file does; where the filesystem cannot
  /// allocate, the file is only extended (sparse).
  Status Reserve(int64_t offset, int64_t length) const;

  /// \brief Sets the file's size (ftruncate).
  Status Truncate(int64_t size) const;

 private:
  int fd_ = -1;
};

/// \brief A private mapping of part of a file (read-only, or copy-on-write);
/// unmapped on destruction.
/// Reading from a mapping is ~2x faster than pread into a warm buffer
/// (measured on the development machine). The file must not shrink while
/// mapped (SIGBUS).
class MappedFile {
 public:
  MappedFile() = default;
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  /// \brief Maps bytes [offset, offset + length) of `fd`. Any offset is allowed
  /// (the mapping starts at the page below it). A zero length maps nothing.
  /// Read-only mappings are populated at once: on tmpfs, which maps no pages
  /// around a faulting one, copying out of a mapping is otherwise slower than
  /// pread (256 MiB into a warm buffer here: pread 86 ms, populated mapping +
  /// memcpy 61 ms). Copy-on-write mappings are not (populating one for
  /// writing would copy every page).
  enum Access : uint8_t { kReadOnly, kCopyOnWrite };
  static Result<MappedFile> Map(const Fd& fd, int64_t offset, int64_t length, Access access = kReadOnly);

  std::span<const uint8_t> bytes() const { return {data_, static_cast<size_t>(length_)}; }
  /// \brief The first byte, writable. Only for kCopyOnWrite mappings.
  uint8_t* writable_data() const { return const_cast<uint8_t*>(data_); }  // NOLINT: mapped PROT_WRITE

 private:
  void* base_ = nullptr;
  size_t base_length_ = 0;
  const uint8_t* data_ = nullptr;
  int64_t length_ = 0;
};

/// \brief Creates a new directory `$TMPDIR/<prefix>XXXXXX` (TMPDIR defaulting
/// to /tmp) and returns its path.
Result<std::string> MakeTempDir(const std::string& prefix);

/// \brief As MakeTempDir, but on /dev/shm (tmpfs) where TMPDIR is unset and
/// /dev/shm is a writable directory: for a served Tesseract's output and
/// input directories, where every call creates a run directory and binref
/// files. On the ext4 disk of the GPU machine a run directory took 1.6 ms
/// (growing with the directories made before), on its tmpfs 21 µs.
Result<std::string> MakeScratchDir(const std::string& prefix);

}  // namespace tesscpp::platform
