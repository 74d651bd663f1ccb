// path.cc: parsing and printing of protocol paths (`a.b.[0].{key}`).
#include "tesscpp/internal/core/path.h"

#include <charconv>

namespace tesscpp {
namespace {

bool IsIdentifierStart(unsigned char c) {
  // Non-ASCII bytes are accepted: Python identifiers may be Unicode.
  return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80;
}

bool IsIdentifierChar(unsigned char c) { return IsIdentifierStart(c) || (c >= '0' && c <= '9'); }

// Splits on dots outside braces; a backslash escapes the next character (kept).
Result<std::vector<std::string_view>> SplitSegments(std::string_view text) {
  std::vector<std::string_view> parts;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\\' && i + 1 < text.size()) {
      ++i;
    } else if (c == '{') {
      ++depth;
    } else if (c == '}') {
      --depth;
    } else if (c == '.' && depth == 0) {
      parts.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  if (depth != 0) return Status::InvalidArgument("path '", text, "' has unbalanced braces");
  parts.push_back(text.substr(start));
  return parts;
}

std::string UnescapeKey(std::string_view key) {
  std::string out;
  out.reserve(key.size());
  for (size_t i = 0; i < key.size(); ++i) {
    if (key[i] == '\\' && i + 1 < key.size()) ++i;
    out += key[i];
  }
  return out;
}

std::string EscapeKey(std::string_view key) {
  std::string out;
  out.reserve(key.size());
  for (char c : key) {
    if (c == '{' || c == '}' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

Result<PathSegment> ParseSegment(std::string_view seg, std::string_view whole) {
  auto bad = [&](std::string_view why) {
    return Status::InvalidArgument("path '", whole, "': segment '", seg, "' ", why);
  };
  if (seg.empty()) return bad("is empty");
  if (seg.front() == '[') {
    if (seg.back() != ']') return bad("opens '[' without closing it");
    const std::string_view digits = seg.substr(1, seg.size() - 2);
    if (digits.empty()) return PathSegment{PathSegment::Kind::kAnyIndex, {}, 0};
    int64_t index = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
    if (ec != std::errc() || end != digits.data() + digits.size() || digits.front() == '+') {
      return bad("is not an integer index");
    }
    return PathSegment::Index(index);
  }
  if (seg.front() == '{') {
    // The segment must end at the first unescaped '}' after the opening brace.
    size_t close = 1;
    while (close < seg.size() && seg[close] != '}') close += seg[close] == '\\' ? 2 : 1;
    if (close != seg.size() - 1) return bad("must be one '{key}'");
    const std::string_view key = seg.substr(1, seg.size() - 2);
    if (key.empty()) return PathSegment{PathSegment::Kind::kAnyKey, {}, 0};
    return PathSegment::Key(UnescapeKey(key));
  }
  if (!IsIdentifierStart(static_cast<unsigned char>(seg.front()))) return bad("is not an identifier");
  for (char c : seg) {
    if (!IsIdentifierChar(static_cast<unsigned char>(c))) return bad("is not an identifier");
  }
  return PathSegment::Field(std::string(seg));
}

}  // namespace

Result<Path> Path::Parse(std::string_view text) {
  if (text.empty()) return Status::InvalidArgument("path is empty");
  TESS_ASSIGN_OR_RETURN(std::vector<std::string_view> parts, SplitSegments(text));
  std::vector<PathSegment> segments;
  segments.reserve(parts.size());
  for (std::string_view part : parts) {
    TESS_ASSIGN_OR_RETURN(PathSegment segment, ParseSegment(part, text));
    segments.push_back(std::move(segment));
  }
  return Path(std::move(segments));
}

Path Path::Child(PathSegment segment) const {
  Path child = *this;
  child.segments_.push_back(std::move(segment));
  return child;
}

bool Path::is_pattern() const {
  for (const PathSegment& s : segments_) {
    if (s.kind == PathSegment::Kind::kAnyIndex || s.kind == PathSegment::Kind::kAnyKey) return true;
  }
  return false;
}

bool Path::Matches(const Path& concrete) const {
  if (segments_.size() != concrete.segments_.size()) return false;
  for (size_t i = 0; i < segments_.size(); ++i) {
    const PathSegment& p = segments_[i];
    const PathSegment& c = concrete.segments_[i];
    switch (p.kind) {
      case PathSegment::Kind::kAnyIndex:
        if (c.kind != PathSegment::Kind::kIndex) return false;
        break;
      case PathSegment::Kind::kAnyKey:
        if (c.kind != PathSegment::Kind::kKey) return false;
        break;
      default:
        if (!(p == c)) return false;
    }
  }
  return true;
}

std::string Path::ToString() const {
  std::string out;
  for (size_t i = 0; i < segments_.size(); ++i) {
    if (i > 0) out += '.';
    const PathSegment& s = segments_[i];
    switch (s.kind) {
      case PathSegment::Kind::kField: out += s.name; break;
      case PathSegment::Kind::kIndex: out += "[" + std::to_string(s.index) + "]"; break;
      case PathSegment::Kind::kKey: out += "{" + EscapeKey(s.name) + "}"; break;
      case PathSegment::Kind::kAnyIndex: out += "[]"; break;
      case PathSegment::Kind::kAnyKey: out += "{}"; break;
    }
  }
  return out;
}

Value* Path::Find(Value& root) const {
  Value* v = &root;
  for (const PathSegment& s : segments_) {
    if (s.kind == PathSegment::Kind::kIndex) {
      if (!v->is_list()) return nullptr;
      auto& list = v->as_list();
      const auto n = static_cast<int64_t>(list.size());
      const int64_t i = s.index < 0 ? s.index + n : s.index;
      if (i < 0 || i >= n) return nullptr;
      v = &list[static_cast<size_t>(i)];
    } else if (s.kind == PathSegment::Kind::kField || s.kind == PathSegment::Kind::kKey) {
      if (!v->is_dict()) return nullptr;
      v = v->as_dict().find(s.name);
      if (v == nullptr) return nullptr;
    } else {
      return nullptr;
    }
  }
  return v;
}

// The search never writes: the const overload shares the mutable one.
const Value* Path::Find(const Value& root) const { return Find(const_cast<Value&>(root)); }

}  // namespace tesscpp
