#include "runtime/json_error.h"

namespace tesscpp::runtime {
namespace {

// A recursive-descent scanner with Python's json.scanner rules and messages.
class Scanner {
 public:
  explicit Scanner(std::string_view text) : s_(text) {}

  std::optional<JsonSyntaxError> Run() {
    size_t i = SkipSpace(0);
    if (!Value(i, 0)) return error_;
    i = SkipSpace(i);
    if (i != s_.size()) return Fail("Extra data", i), error_;
    return std::nullopt;
  }

 private:
  static constexpr int kMaxDepth = 10000;  // beyond, Python raises RecursionError anyway

  bool Fail(const char* message, size_t at) {
    // Python counts characters: every byte that does not continue a UTF-8 sequence.
    int64_t chars = 0;
    for (size_t k = 0; k < at && k < s_.size(); ++k)
      chars += (static_cast<unsigned char>(s_[k]) & 0xC0) != 0x80;
    error_ = JsonSyntaxError{chars, message};
    return false;
  }

  size_t SkipSpace(size_t i) const {
    while (i < s_.size() && (s_[i] == ' ' || s_[i] == '\t' || s_[i] == '\n' || s_[i] == '\r')) ++i;
    return i;
  }

  bool Literal(size_t& i, std::string_view word) {
    if (s_.substr(i, word.size()) != word) return Fail("Expecting value", i);
    i += word.size();
    return true;
  }

  static bool Digit(char c) { return c >= '0' && c <= '9'; }

  bool Number(size_t& i) {
    size_t k = i;
    if (k < s_.size() && s_[k] == '-') ++k;
    if (k >= s_.size() || !Digit(s_[k])) return Fail("Expecting value", i);
    if (s_[k] == '0') {
      ++k;
    } else {
      while (k < s_.size() && Digit(s_[k])) ++k;
    }
    if (k + 1 < s_.size() && s_[k] == '.' && Digit(s_[k + 1])) {
      k += 2;
      while (k < s_.size() && Digit(s_[k])) ++k;
    }
    if (k < s_.size() && (s_[k] == 'e' || s_[k] == 'E')) {
      size_t e = k + 1;
      if (e < s_.size() && (s_[e] == '+' || s_[e] == '-')) ++e;
      if (e < s_.size() && Digit(s_[e])) {
        while (e < s_.size() && Digit(s_[e])) ++e;
        k = e;
      }
    }
    i = k;
    return true;
  }

  static bool Hex(char c) { return Digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

  // At the opening quote.
  bool String(size_t& i) {
    const size_t start = i++;
    while (i < s_.size()) {
      const auto c = static_cast<unsigned char>(s_[i]);
      if (c == '"') {
        ++i;
        return true;
      }
      if (c < 0x20) return Fail("Invalid control character at", i);
      if (c == '\\') {
        if (i + 1 >= s_.size()) break;
        const char e = s_[i + 1];
        if (e == 'u') {
          if (i + 6 > s_.size() || !Hex(s_[i + 2]) || !Hex(s_[i + 3]) || !Hex(s_[i + 4]) || !Hex(s_[i + 5])) {
            return Fail("Invalid \\uXXXX escape", i + 1);
          }
          i += 6;
          continue;
        }
        if (std::string_view("\"\\/bfnrt").find(e) == std::string_view::npos)
          return Fail("Invalid \\escape", i);
        i += 2;
        continue;
      }
      ++i;
    }
    return Fail("Unterminated string starting at", start);
  }

  bool Value(size_t& i, int depth) {
    if (depth > kMaxDepth) return Fail("maximum nesting depth exceeded", i);
    if (i >= s_.size()) return Fail("Expecting value", i);
    switch (s_[i]) {
      case '"': return String(i);
      case '{': return Object(i, depth);
      case '[': return Array(i, depth);
      case 'n': return Literal(i, "null");
      case 't': return Literal(i, "true");
      case 'f': return Literal(i, "false");
      case 'N': return Literal(i, "NaN");
      case 'I': return Literal(i, "Infinity");
      case '-':
        if (s_.substr(i, 9) == "-Infinity") {
          i += 9;
          return true;
        }
        return Number(i);
      default: return Number(i);
    }
  }

  bool Object(size_t& i, int depth) {
    i = SkipSpace(i + 1);
    if (i < s_.size() && s_[i] == '}') {
      ++i;
      return true;
    }
    while (true) {
      if (i >= s_.size() || s_[i] != '"') return Fail("Expecting property name enclosed in double quotes", i);
      if (!String(i)) return false;
      i = SkipSpace(i);
      if (i >= s_.size() || s_[i] != ':') return Fail("Expecting ':' delimiter", i);
      i = SkipSpace(i + 1);
      if (!Value(i, depth + 1)) return false;
      i = SkipSpace(i);
      if (i < s_.size() && s_[i] == '}') {
        ++i;
        return true;
      }
      if (i >= s_.size() || s_[i] != ',') return Fail("Expecting ',' delimiter", i);
      i = SkipSpace(i + 1);
    }
  }

  bool Array(size_t& i, int depth) {
    i = SkipSpace(i + 1);
    if (i < s_.size() && s_[i] == ']') {
      ++i;
      return true;
    }
    while (true) {
      if (!Value(i, depth + 1)) return false;
      i = SkipSpace(i);
      if (i < s_.size() && s_[i] == ']') {
        ++i;
        return true;
      }
      if (i >= s_.size() || s_[i] != ',') return Fail("Expecting ',' delimiter", i);
      i = SkipSpace(i + 1);
    }
  }

  std::string_view s_;
  std::optional<JsonSyntaxError> error_;
};

}  // namespace

namespace {

// The length of the UTF-8 sequence at `i`, or 0 where none starts there.
size_t Utf8SequenceLength(std::string_view text, size_t i) {
  const auto c = static_cast<unsigned char>(text[i]);
  if (c < 0x80) return 1;
  int extra = 0;
  uint32_t min = 0;
  if ((c & 0xE0) == 0xC0) {
    extra = 1;
    min = 0x80;
  } else if ((c & 0xF0) == 0xE0) {
    extra = 2;
    min = 0x800;
  } else if ((c & 0xF8) == 0xF0) {
    extra = 3;
    min = 0x10000;
  } else {
    return 0;
  }
  if (i + extra >= text.size()) return 0;
  uint32_t cp = c & (0x3F >> extra);
  for (int k = 1; k <= extra; ++k) {
    const auto cc = static_cast<unsigned char>(text[i + k]);
    if ((cc & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (cc & 0x3F);
  }
  // Overlong forms, surrogates and values past U+10FFFF are not UTF-8.
  if (cp < min || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) return 0;
  return static_cast<size_t>(extra) + 1;
}

}  // namespace

bool IsValidUtf8(std::string_view text) {
  for (size_t i = 0, n = 0; i < text.size(); i += n) {
    if ((n = Utf8SequenceLength(text, i)) == 0) return false;
  }
  return true;
}

std::string ReplaceInvalidUtf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const size_t n = Utf8SequenceLength(text, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD for the byte that starts no sequence
      ++i;
      continue;
    }
    out.append(text.substr(i, n));
    i += n;
  }
  return out;
}

std::optional<JsonSyntaxError> LocateJsonError(std::string_view text) { return Scanner(text).Run(); }

}  // namespace tesscpp::runtime
