// binref_writer.h: where binref arrays' bytes go (internal).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tesscpp/result.h"

namespace tesscpp {

/// \brief Where binref arrays are written: Append stores bytes and returns the
/// buffer reference "path:offset" (relative to the directory the reader resolves
/// against).
class BinrefSink {
 public:
  virtual ~BinrefSink() = default;
  virtual Result<std::string> Append(std::span<const uint8_t> bytes) = 0;
};

/// \brief Appends binref arrays to files as the reference server does: every
/// array of one response goes into `<base_dir>/<subdir>/<uuid4>.bin`, one after
/// another, and a new file starts once the current one holds more than
/// `max_file_size` bytes (0: one file per non-empty array, as the SDK writes
/// request inputs). Buffer strings are relative to `base_dir`. Not
/// thread-safe; one writer per response.
class BinrefWriter final : public BinrefSink {
 public:
  static constexpr int64_t kDefaultMaxFileSize = int64_t{100} << 20;  // 100 MiB, as the reference

  explicit BinrefWriter(std::string base_dir, std::string subdir = "",
                        int64_t max_file_size = kDefaultMaxFileSize);
  ~BinrefWriter() override;
  BinrefWriter(BinrefWriter&&) noexcept;
  BinrefWriter& operator=(BinrefWriter&&) noexcept;

  /// \brief Appends `bytes` and returns "<subdir>/<uuid>.bin:<offset>".
  /// kIoError naming the file when it cannot be created or written.
  Result<std::string> Append(std::span<const uint8_t> bytes) override;

  /// \brief A file whose first array has at least this many bytes may be a
  /// prepared one (set_file_source).
  static constexpr int64_t kLargeArray = int64_t{1} << 20;

  /// \brief Gives the path of a prepared file with at least `size` bytes
  /// allocated, on the filesystem of `base_dir`, or nullopt. The writer
  /// renames it into place and cuts it to what it holds.
  using FileSource = std::function<std::optional<std::string>(int64_t size)>;

  /// \brief New files that start with a large array come from `source` when
  /// it has one (a server's pool of pre-faulted files, whose pages need not
  /// be allocated while the caller waits).
  void set_file_source(FileSource source);

  /// \brief The files created so far, as absolute paths.
  const std::vector<std::string>& files() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tesscpp
