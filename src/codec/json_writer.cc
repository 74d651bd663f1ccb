// json_writer.cc: compact JSON output with orjson's number and string spellings.
#include "codec/json_writer.h"

#include <charconv>
#include <cmath>
#include <cstring>

#include "codec/array_codec.h"
#include "codec/number_format.h"
#include "tesscpp/internal/codec/json.h"
#include "tesscpp/internal/core/buffer_pool.h"

namespace tesscpp::codec {

JsonWriter::JsonWriter(BufferPool* pool, int64_t initial_capacity)
    : pool_(pool != nullptr ? pool : BufferPool::Default()) {
  auto buffer = pool_->Allocate(initial_capacity);
  if (buffer.ok()) {
    buffer_ = std::move(*buffer);
  } else {
    status_ = buffer.status();
  }
}

void JsonWriter::Reserve(int64_t additional) {
  if (!status_.ok() || size_ + additional <= buffer_.size()) return;
  auto bigger = pool_->Allocate(std::max(size_ + additional, 2 * buffer_.size()));
  if (!bigger.ok()) {
    status_ = bigger.status();
    return;
  }
  std::memcpy(bigger->data(), buffer_.data(), static_cast<size_t>(size_));
  buffer_ = std::move(*bigger);
}

char* JsonWriter::Grow(size_t n) {
  Reserve(static_cast<int64_t>(n));
  if (!status_.ok()) return nullptr;
  char* out = reinterpret_cast<char*>(buffer_.data()) + size_;
  size_ += static_cast<int64_t>(n);
  return out;
}

void JsonWriter::Append(std::string_view s) {
  if (char* out = Grow(s.size())) std::memcpy(out, s.data(), s.size());
}

void JsonWriter::AppendChar(char c) {
  if (char* out = Grow(1)) *out = c;
}

void JsonWriter::BeforeValue() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!has_value_.empty()) {
    if (has_value_.back()) AppendChar(',');
    has_value_.back() = true;
  }
}

void JsonWriter::Open(char bracket) {
  BeforeValue();
  AppendChar(bracket);
  has_value_.push_back(false);
}

void JsonWriter::Close(char bracket) {
  has_value_.pop_back();
  AppendChar(bracket);
}

void JsonWriter::Key(std::string_view key) {
  String(key);
  AppendChar(':');
  after_key_ = true;
}

void JsonWriter::Null() {
  BeforeValue();
  Append("null");
}

void JsonWriter::Bool(bool b) {
  BeforeValue();
  Append(b ? "true" : "false");
}

void JsonWriter::Int(int64_t i) {
  BeforeValue();
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof(buf), i);
  Append({buf, static_cast<size_t>(r.ptr - buf)});
}

void JsonWriter::UInt(uint64_t u) {
  BeforeValue();
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof(buf), u);
  Append({buf, static_cast<size_t>(r.ptr - buf)});
}

void JsonWriter::Double(double d) {
  if (!std::isfinite(d)) {
    Null();
    return;
  }
  BeforeValue();
  char buf[kMaxJsonDoubleChars];
  Append({buf, FormatJsonDouble(d, buf)});
}

void JsonWriter::String(std::string_view s) {
  BeforeValue();
  AppendChar('"');
  size_t run = 0;  // start of the pending run of bytes that need no escape
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    Append(s.substr(run, i - run));
    run = i + 1;
    switch (c) {
      case '"': Append("\\\""); break;
      case '\\': Append("\\\\"); break;
      case '\b': Append("\\b"); break;
      case '\f': Append("\\f"); break;
      case '\n': Append("\\n"); break;
      case '\r': Append("\\r"); break;
      case '\t': Append("\\t"); break;
      default: {
        static constexpr char kHex[] = "0123456789abcdef";
        const char escaped[6] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 15]};
        Append({escaped, 6});
      }
    }
  }
  Append(s.substr(run));
  AppendChar('"');
}

char* JsonWriter::ReserveStringBody(size_t n) {
  BeforeValue();
  char* out = Grow(n + 2);
  if (out == nullptr) return nullptr;
  out[0] = '"';
  out[n + 1] = '"';
  return out + 1;
}

char* JsonWriter::BeginValues(size_t max_bytes) {
  BeforeValue();
  Reserve(static_cast<int64_t>(max_bytes));
  if (!status_.ok()) return nullptr;
  return reinterpret_cast<char*>(buffer_.data()) + size_;
}

void JsonWriter::CommitValues(const char* end) {
  if (status_.ok() && end != nullptr) size_ = end - reinterpret_cast<const char*>(buffer_.data());
}

Result<Buffer> JsonWriter::Finish() {
  if (!status_.ok()) return status_;
  if (!has_value_.empty() || after_key_ || size_ == 0) {
    return Status::Internal("JsonWriter finished with an incomplete document");
  }
  return buffer_.Slice(0, size_);
}

}  // namespace tesscpp::codec

namespace tesscpp {
namespace {

Status WriteValue(const Value& value, const ArrayEncodeOptions& arrays, codec::JsonWriter& w) {
  switch (value.kind()) {
    case Value::Kind::kNull: w.Null(); break;
    case Value::Kind::kBool: w.Bool(value.as_bool()); break;
    case Value::Kind::kInt:
      if (value.is_big_uint()) {
        w.UInt(value.as_uint());
      } else {
        w.Int(value.as_int());
      }
      break;
    case Value::Kind::kFloat: w.Double(value.as_number()); break;
    case Value::Kind::kString: w.String(value.as_string()); break;
    case Value::Kind::kList:
      w.BeginArray();
      for (const Value& item : value.as_list()) TESS_RETURN_IF_ERROR(WriteValue(item, arrays, w));
      w.EndArray();
      break;
    case Value::Kind::kDict:
      w.BeginObject();
      for (const auto& [key, item] : value.as_dict()) {
        w.Key(key);
        TESS_RETURN_IF_ERROR(WriteValue(item, arrays, w));
      }
      w.EndObject();
      break;
    case Value::Kind::kTensor: return codec::EncodeArray(value.as_tensor(), arrays, w);
  }
  return w.status();
}

}  // namespace

Result<Buffer> WriteJson(const Value& value, const JsonWriteOptions& options) {
  codec::JsonWriter writer(options.pool);
  TESS_RETURN_IF_ERROR(WriteValue(value, options.arrays, writer));
  return writer.Finish();
}

}  // namespace tesscpp
