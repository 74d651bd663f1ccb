// binref.cc: the "binref" encoding, arrays as byte ranges of files.
//
// A buffer string "path[:offset[:compressed_size]]" names a file relative to a
// base directory (the server's input path, the client's view of the server's
// output path). Paths are confined to that directory: absolute paths, URLs and
// anything that resolves outside it (.., symlinks) are refused, so a request
// cannot make the server read arbitrary files.
#include <fcntl.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>

#include "codec/array_codec.h"
#include "codec/lz4.h"
#include "platform/uuid.h"
#include "tesscpp/internal/platform/file.h"

namespace tesscpp {
namespace {

namespace fs = std::filesystem;

// The reference's grammar: the path is the shortest prefix after which the rest
// is empty, ":<digits>" or ":<digits>:<digits>".
struct BinrefSpec {
  std::string_view path;
  std::string_view offset;           // empty: 0
  std::string_view compressed_size;  // empty: absent
};

bool AllDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

BinrefSpec ParseSpec(std::string_view spec) {
  BinrefSpec out{spec, {}, {}};
  const size_t last = spec.rfind(':');
  if (last == std::string_view::npos || last == 0 || !AllDigits(spec.substr(last + 1))) return out;
  const size_t before = spec.rfind(':', last - 1);
  if (before != std::string_view::npos && before > 0 &&
      AllDigits(spec.substr(before + 1, last - before - 1))) {
    return {spec.substr(0, before), spec.substr(before + 1, last - before - 1), spec.substr(last + 1)};
  }
  return {spec.substr(0, last), spec.substr(last + 1), {}};
}

Result<int64_t> ParseCount(std::string_view digits, std::string_view what) {
  if (digits.empty()) return int64_t{0};
  int64_t value = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc() || end != digits.data() + digits.size()) {
    return Status::ValidationError("binref ", what, " '", digits, "' is out of range");
  }
  return value;
}

// Resolves `relative` inside `base_dir`, following symlinks, and refuses
// anything that lands outside.
Result<std::string> ResolveInside(const std::string& base_dir, std::string_view relative) {
  if (base_dir.empty()) {
    return Status::InvalidArgument("binref path '", relative, "' cannot be read: no binref directory is set");
  }
  const std::string rel(relative);
  if (fs::path(rel).is_absolute()) {
    return Status::InvalidArgument("binref path '", relative, "' is absolute; it must be relative to the ",
                                   "binref directory");
  }
  const size_t scheme = rel.find("://");
  if (scheme != std::string::npos && scheme > 1) {
    return Status::InvalidArgument("binref path '", relative, "' is a URL; only local files are supported");
  }
  std::error_code ec;
  const fs::path base = fs::canonical(base_dir, ec);
  if (ec) return Status::NotFound("binref directory '", base_dir, "' does not exist");
  const fs::path target = fs::weakly_canonical(base / rel, ec);
  if (ec) return Status::IoError("cannot resolve binref path '", relative, "': ", ec.message());
  auto [base_end, target_it] = std::mismatch(base.begin(), base.end(), target.begin(), target.end());
  if (base_end != base.end() || target_it == target.end()) {
    return Status::InvalidArgument("binref path '", relative, "' escapes the binref directory");
  }
  return target.string();
}

}  // namespace

struct BinrefWriter::Impl {
  std::string base_dir;
  std::string subdir;
  int64_t max_file_size = 0;
  FileSource source;
  std::string current_name;  // relative to base_dir
  platform::Fd current;
  int64_t current_size = 0;
  bool current_prepared = false;  // may hold more bytes than written, until the first write
  std::vector<std::string> files;

  // A new file at `path`: a prepared one renamed into place when the source
  // has one, else created empty.
  Status Open(const std::string& path, int64_t first_size) {
    bool prepared = false;
    if (source && first_size >= kLargeArray) {
      if (std::optional<std::string> file = source(first_size)) {
        std::error_code ec;
        fs::rename(*file, path, ec);
        prepared = !ec;
        if (ec) fs::remove(*file, ec);  // e.g. on another filesystem: create one instead
      }
    }
    TESS_ASSIGN_OR_RETURN(current, platform::Fd::Open(path, prepared ? O_RDWR : O_RDWR | O_CREAT | O_TRUNC));
    current_size = 0;
    current_prepared = prepared;
    return Status::OK();
  }

  Status Write(std::span<const uint8_t> bytes) {
    const auto size = static_cast<int64_t>(bytes.size());
    // 256 MiB on tmpfs, measured in the server here: pwrite into a new file
    // ~120 ms, into a prepared one ~90 ms; a populated shared mapping + memcpy
    // was slower than either (page-table work per 4 KiB page).
    TESS_RETURN_IF_ERROR(current.WriteAt(current_size, bytes));
    current_size += size;
    // A prepared file larger than its contents is cut to them at once, so
    // that the file is whole whenever the response can be sent.
    if (current_prepared) {
      current_prepared = false;
      return current.Truncate(current_size);
    }
    return Status::OK();
  }
};

BinrefWriter::BinrefWriter(std::string base_dir, std::string subdir, int64_t max_file_size)
    : impl_(std::make_unique<Impl>()) {
  impl_->base_dir = std::move(base_dir);
  impl_->subdir = std::move(subdir);
  impl_->max_file_size = max_file_size;
}

BinrefWriter::~BinrefWriter() = default;
BinrefWriter::BinrefWriter(BinrefWriter&&) noexcept = default;
BinrefWriter& BinrefWriter::operator=(BinrefWriter&&) noexcept = default;

void BinrefWriter::set_file_source(FileSource source) { impl_->source = std::move(source); }

Result<std::string> BinrefWriter::Append(std::span<const uint8_t> bytes) {
  Impl& w = *impl_;
  // Like the reference: a file that already exceeds the limit is closed, so one
  // file holds at most one array past the limit.
  if (!w.current.valid() || w.current_size > w.max_file_size) {
    const std::string name = platform::NewUuid4() + ".bin";
    w.current_name = w.subdir.empty() ? name : w.subdir + "/" + name;
    const fs::path dir = fs::path(w.base_dir) / w.subdir;
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) return Status::IoError("cannot create binref directory '", dir.string(), "': ", ec.message());
    Status opened = w.Open((dir / name).string(), static_cast<int64_t>(bytes.size()));
    if (!opened.ok()) return opened.WithContext("binref file '" + w.current_name + "'");
    w.files.push_back((dir / name).string());
  }
  const int64_t offset = w.current_size;
  Status written = w.Write(bytes);
  if (!written.ok()) return written.WithContext("binref file '" + w.current_name + "'");
  return w.current_name + ":" + std::to_string(offset);
}

const std::vector<std::string>& BinrefWriter::files() const { return impl_->files; }

namespace codec {

Result<Tensor> ReadBinref(std::string_view spec_text, Compression compression, const std::string& binref_dir,
                          Dtype dtype, Shape shape, BufferPool* pool,
                          std::vector<std::string>* borrowed_files) {
  const BinrefSpec spec = ParseSpec(spec_text);
  TESS_ASSIGN_OR_RETURN(int64_t offset, ParseCount(spec.offset, "offset"));
  const int64_t nbytes = shape.num_elements() * ItemSize(dtype);
  int64_t length = nbytes;
  if (compression == Compression::kLz4) {
    if (spec.compressed_size.empty()) {
      return Status::ValidationError("binref buffer '", spec_text,
                                     "' is compressed but names no compressed size "
                                     "(expected '<path>:<offset>:<compressed_size>')");
    }
    TESS_ASSIGN_OR_RETURN(length, ParseCount(spec.compressed_size, "compressed size"));
  }
  TESS_ASSIGN_OR_RETURN(std::string path, ResolveInside(binref_dir, spec.path));
  TESS_ASSIGN_OR_RETURN(platform::Fd fd, platform::Fd::Open(path, O_RDONLY));
  TESS_ASSIGN_OR_RETURN(int64_t file_size, fd.Size());
  if (offset > file_size || length > file_size - offset) {
    return Status::DecodeError("binref file '", spec.path, "' holds ", file_size, " bytes; ", length,
                               " bytes at offset ", offset, " are out of range");
  }
  if (compression == Compression::kLz4) {
    // lz4 decodes from the mapping straight into the tensor.
    TESS_ASSIGN_OR_RETURN(platform::MappedFile mapped, platform::MappedFile::Map(fd, offset, length));
    TESS_RETURN_IF_ERROR(Lz4CheckContentSize(mapped.bytes(), nbytes));
    TESS_ASSIGN_OR_RETURN(Tensor tensor, Tensor::Allocate(dtype, std::move(shape), pool));
    TESS_RETURN_IF_ERROR(Lz4FrameDecompress(mapped.bytes(), tensor.bytes()));
    return tensor;
  }
  if (borrowed_files != nullptr && nbytes > 0 && offset % ItemSize(dtype) == 0) {
    TESS_ASSIGN_OR_RETURN(platform::MappedFile mapped,
                          platform::MappedFile::Map(fd, offset, length, platform::MappedFile::kCopyOnWrite));
    auto owner = std::make_shared<platform::MappedFile>(std::move(mapped));
    uint8_t* data = owner->writable_data();
    borrowed_files->push_back(path);
    return Tensor::Make(dtype, std::move(shape), Buffer::Wrap(data, nbytes, std::move(owner)));
  }
  TESS_ASSIGN_OR_RETURN(Tensor tensor, Tensor::Allocate(dtype, std::move(shape), pool));
  if (nbytes == 0) return tensor;
  // 256 MiB, hot cache, measured here: on ext4 mmap + memcpy runs at 10-12 GB/s
  // and pread at 6-7; on tmpfs a populated mapping + memcpy at 5.0 and pread at 3.2.
  TESS_ASSIGN_OR_RETURN(platform::MappedFile mapped, platform::MappedFile::Map(fd, offset, length));
  std::memcpy(tensor.data(), mapped.bytes().data(), static_cast<size_t>(nbytes));
  return tensor;
}

}  // namespace codec
}  // namespace tesscpp
