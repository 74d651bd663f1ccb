#include "paths.h"

#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tesscpp/internal/core/path.h"

namespace nb = nanobind;

namespace tesscpp::bindings {
namespace {

using Kind = PathSegment::Kind;

// (kind, value) per segment: the name for fields and keys, the position for
// indices, "" for wildcards.
constexpr std::pair<Kind, std::string_view> kKindNames[] = {{Kind::kField, "field"},
                                                            {Kind::kKey, "key"},
                                                            {Kind::kIndex, "index"},
                                                            {Kind::kAnyKey, "any_key"},
                                                            {Kind::kAnyIndex, "any_index"}};

std::string_view KindName(Kind kind) {
  for (const auto& [k, name] : kKindNames) {
    if (k == kind) return name;
  }
  return "field";  // unreachable: every kind is named above
}

nb::list ParsePath(std::string_view text) {
  Result<Path> path = Path::Parse(text);
  if (!path.ok()) throw nb::value_error(path.status().message().c_str());
  nb::list segments;
  for (const PathSegment& segment : path->segments()) {
    const std::string_view kind = KindName(segment.kind);
    if (segment.kind == Kind::kIndex) {
      segments.append(nb::make_tuple(kind, segment.index));
    } else {
      segments.append(nb::make_tuple(kind, segment.name));
    }
  }
  return segments;
}

PathSegment ToSegment(const nb::handle& item) {
  const auto pair = nb::cast<nb::tuple>(item);
  if (pair.size() != 2) throw nb::value_error("a path segment is a (kind, value) pair");
  const auto kind = nb::cast<std::string_view>(pair[0]);
  if (kind == "index") return PathSegment::Index(nb::cast<int64_t>(pair[1]));
  if (kind == "field") return PathSegment::Field(nb::cast<std::string>(pair[1]));
  if (kind == "key") return PathSegment::Key(nb::cast<std::string>(pair[1]));
  if (kind == "any_index") return PathSegment{Kind::kAnyIndex, {}, 0};
  if (kind == "any_key") return PathSegment{Kind::kAnyKey, {}, 0};
  throw nb::value_error(("unknown path segment kind '" + std::string(kind) + "'").c_str());
}

std::string FormatPath(const nb::sequence& segments) {
  std::vector<PathSegment> parsed;
  for (nb::handle item : segments) parsed.push_back(ToSegment(item));
  return Path(std::move(parsed)).ToString();
}

}  // namespace

void BindPaths(nb::module_& m) {
  m.def("parse_path", &ParsePath, nb::arg("text"),
        "The segments of a protocol path or pattern as (kind, value) pairs; ValueError naming the bad "
        "segment.");
  m.def(
      "format_path", &FormatPath, nb::arg("segments"),
      "The protocol spelling of (kind, value) segments (keys escaped as tesseract-core 1.15 escapes them).");
}

}  // namespace tesscpp::bindings
