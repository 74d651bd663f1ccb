// path.h: Path, an address inside a Value tree in the protocol's grammar.
//
// Segments are joined with dots: `name` (a model field, an identifier), `[i]` (a
// list index), `{key}` (a dict key; `{`, `}` and `\` inside a key are escaped with
// a backslash, and a dot inside braces belongs to the key). Patterns, used by
// `differentiable_arrays`, may hold the wildcards `[]` and `{}`.
//
//   mesh.points      layers.[0].weight      cell_data.{temperature}      cell_data.{}
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tesscpp/result.h"
#include "tesscpp/value.h"

namespace tesscpp {

struct PathSegment {
  enum class Kind : uint8_t {
    kField,     ///< `name`
    kIndex,     ///< `[i]`
    kKey,       ///< `{key}`
    kAnyIndex,  ///< `[]` (patterns only)
    kAnyKey,    ///< `{}` (patterns only)
  };
  Kind kind;
  std::string name;   ///< field name or (unescaped) dict key
  int64_t index = 0;  ///< list index

  static PathSegment Field(std::string name) { return {Kind::kField, std::move(name), 0}; }
  static PathSegment Index(int64_t i) { return {Kind::kIndex, {}, i}; }
  static PathSegment Key(std::string key) { return {Kind::kKey, std::move(key), 0}; }

  friend bool operator==(const PathSegment&, const PathSegment&) = default;
};

class Path {
 public:
  Path() = default;  ///< the root (empty; prints as "")
  explicit Path(std::vector<PathSegment> segments) : segments_(std::move(segments)) {}

  /// \brief Parses the protocol grammar. kInvalidArgument naming the offending
  /// segment for an empty path or segment, a bad identifier, a malformed index or
  /// an unbalanced brace.
  static Result<Path> Parse(std::string_view text);

  const std::vector<PathSegment>& segments() const { return segments_; }
  bool empty() const { return segments_.empty(); }

  /// \brief A copy with one more segment.
  Path Child(PathSegment segment) const;

  /// \brief True when any segment is a wildcard.
  bool is_pattern() const;

  /// \brief True when this pattern (or concrete path) matches `concrete` segment
  /// by segment: `[]` matches any index, `{}` any key.
  bool Matches(const Path& concrete) const;

  /// \brief The value this concrete path addresses inside `root` (a field or
  /// key of a dict, an index of a list, negative from the end), or null where
  /// there is none or the path is a pattern.
  const Value* Find(const Value& root) const;
  Value* Find(Value& root) const;
  /// \brief The protocol spelling; Parse(p.ToString()) == p.
  std::string ToString() const;

  friend bool operator==(const Path&, const Path&) = default;

 private:
  std::vector<PathSegment> segments_;
};

}  // namespace tesscpp
