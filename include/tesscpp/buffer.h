// buffer.h: Buffer, a shared handle on a contiguous range of bytes.
//
// A Buffer is {data, size, readable tail, owner}. Copies and slices share the
// owner, which keeps the memory alive (Arrow's parent-buffer idiom as a value
// type). Buffers from a BufferPool are 64-byte aligned and may be read up to 64
// bytes past their end, which SIMD codecs and simdjson rely on; every slice of
// such a buffer keeps that guarantee, because the bytes after a slice belong to
// its parent.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace tesscpp {

class BufferPool;

class Buffer {
 public:
  /// \brief Alignment of pooled buffers, and the readable tail they guarantee.
  static constexpr int64_t kAlignment = 64;
  static constexpr int64_t kPadding = 64;

  /// \brief An empty buffer (size 0, no owner).
  Buffer() = default;

  /// \brief Wraps memory owned by `owner`; the buffer keeps `owner` alive.
  /// \param readable_tail bytes after `data + size` that may be read (0 unless the
  ///        caller knows better).
  static Buffer Wrap(void* data, int64_t size, std::shared_ptr<void> owner, int64_t readable_tail = 0) {
    Buffer b;
    b.data_ = static_cast<uint8_t*>(data);
    b.size_ = size;
    b.readable_tail_ = readable_tail;
    b.owner_ = std::move(owner);
    return b;
  }

  /// \brief A buffer that owns `text` (no copy of its bytes).
  static Buffer FromString(std::string text);

  /// \brief Start of the bytes. Writable: a Buffer is a handle, not a const view;
  /// whoever shares it agrees on who writes.
  uint8_t* data() const { return data_; }
  int64_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  /// \brief Bytes after the end that may be read (never written).
  int64_t readable_tail() const { return readable_tail_; }
  /// \brief True when at least kPadding bytes after the end are readable.
  bool padded() const { return readable_tail_ >= kPadding; }

  /// \brief Bytes [offset, offset + length) sharing this buffer's owner.
  /// Precondition (checked, aborts): the range lies inside this buffer.
  Buffer Slice(int64_t offset, int64_t length) const;

  std::span<uint8_t> span() const { return {data_, static_cast<size_t>(size_)}; }
  std::string_view string_view() const {
    return {reinterpret_cast<const char*>(data_), static_cast<size_t>(size_)};
  }

  /// \brief Whatever keeps the memory alive (shared by copies and slices).
  const std::shared_ptr<void>& owner() const { return owner_; }

 private:
  uint8_t* data_ = nullptr;
  int64_t size_ = 0;
  int64_t readable_tail_ = 0;
  std::shared_ptr<void> owner_;
};

}  // namespace tesscpp
