// json_writer.h: JsonWriter, a streaming JSON writer into a pooled buffer (internal).
//
// Writes compact JSON (no spaces, as orjson does) into one growing Buffer from a
// BufferPool. Commas are inserted automatically. Large payloads (base64) are
// encoded straight into the output through ReserveStringBody(), so a response is
// built with no intermediate copies. Numbers use orjson's spelling; NaN and
// infinities become null, as orjson writes them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tesscpp/buffer.h"
#include "tesscpp/result.h"

namespace tesscpp {
class BufferPool;
}

namespace tesscpp::codec {

class JsonWriter {
 public:
  explicit JsonWriter(BufferPool* pool = nullptr, int64_t initial_capacity = 4096);

  void BeginObject() { Open('{'); }
  void EndObject() { Close('}'); }
  void BeginArray() { Open('['); }
  void EndArray() { Close(']'); }
  /// \brief An object key; the next call writes its value.
  void Key(std::string_view key);

  void Null();
  void Bool(bool b);
  void Int(int64_t i);
  void UInt(uint64_t u);
  /// \brief A double in orjson's spelling; NaN and +-Inf are written as null.
  void Double(double d);
  void String(std::string_view s);
  /// \brief Writes `"` + n uninitialised bytes + `"` and returns the n bytes for
  /// the caller to fill (valid until the next call). The caller guarantees the
  /// bytes need no escaping (base64, file paths it checked).
  char* ReserveStringBody(size_t n);
  /// \brief Makes room for `additional` more bytes at once, so a large payload
  /// written next does not grow the buffer (and copy it) on the way.
  void Reserve(int64_t additional);
  /// \brief Bulk output for number rows: returns room for `max_bytes` of values
  /// that the caller formats itself (separating them with its own commas), in
  /// place of one value at the current position. CommitValues(end) must follow
  /// before any other call. nullptr after an error (see status()).
  char* BeginValues(size_t max_bytes);
  void CommitValues(const char* end);

  /// \brief The first error met (memory), or OK.
  const Status& status() const { return status_; }

  /// \brief The document. The writer must be at top level with one value written.
  Result<Buffer> Finish();

 private:
  void BeforeValue();
  void Open(char bracket);
  void Close(char bracket);
  char* Grow(size_t n);  // room for n more bytes, or nullptr after an error
  void Append(std::string_view s);
  void AppendChar(char c);

  BufferPool* pool_;
  Buffer buffer_;
  int64_t size_ = 0;
  Status status_;
  // One entry per open container: whether a value has been written in it yet.
  std::vector<bool> has_value_;
  bool after_key_ = false;
};

}  // namespace tesscpp::codec
