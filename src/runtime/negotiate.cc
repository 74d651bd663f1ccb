#include "runtime/negotiate.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "runtime/py_text.h"

namespace tesscpp::runtime {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    const size_t end = s.find(sep, start);
    parts.push_back(s.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

struct MediaRange {
  std::string type;
  double q = 1.0;
  std::optional<std::string> gpu_transport;
  std::optional<std::string> compression;
};

// Python's float(): surrounding whitespace allowed, the whole text must parse.
double ParseQ(std::string_view text) {
  const std::string s(PyStrip(text));
  if (s.empty()) return 0.0;
  char* end = nullptr;
  const double q = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size() ? q : 0.0;
}

MediaRange ParseRange(std::string_view piece) {
  MediaRange range;
  const auto params = Split(piece, ';');
  range.type = Lower(PyStrip(params[0]));
  for (size_t i = 1; i < params.size(); ++i) {
    const size_t eq = params[i].find('=');
    if (eq == std::string_view::npos) continue;
    const std::string key = Lower(PyStrip(params[i].substr(0, eq)));
    std::string_view value = PyStrip(params[i].substr(eq + 1));
    // Python's strip('"'): every surrounding quote goes.
    while (!value.empty() && value.front() == '"') value.remove_prefix(1);
    while (!value.empty() && value.back() == '"') value.remove_suffix(1);
    if (key == "q") {
      range.q = ParseQ(value);
    } else if (key == "gpu_transport") {
      range.gpu_transport = std::string(value);
    } else if (key == "compression") {
      range.compression = std::string(value);
    }
  }
  return range;
}

template <typename T>
bool Contains(const std::vector<T>& list, T value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

template <typename T, typename Name>
std::vector<std::string> Names(const std::vector<T>& items, Name name) {
  std::vector<std::string> names;
  for (T item : items) names.emplace_back(name(item));
  return names;
}

Value StringList(const std::vector<std::string>& items) {
  Value::List list;
  for (const std::string& s : items) list.emplace_back(s);
  return Value(std::move(list));
}

}  // namespace

std::vector<std::string> Offer::FormatNames() const { return Names(formats, OutputFormatName); }
std::vector<std::string> Offer::CompressionNames() const { return Names(compressions, CompressionName); }

std::optional<Encoding> NegotiateEncoding(std::optional<std::string_view> accept, const Offer& offer) {
  if (!accept || accept->empty()) {  // Python's `if not accept`: "  " is a header with no ranges
    return Encoding{offer.default_format, "none", offer.default_compression};
  }
  std::vector<MediaRange> ranges;
  for (std::string_view piece : Split(*accept, ',')) {
    if (PyStrip(piece).empty()) continue;
    ranges.push_back(ParseRange(piece));
  }
  std::stable_sort(ranges.begin(), ranges.end(),
                   [](const MediaRange& a, const MediaRange& b) { return a.q > b.q; });
  // A range naming what is not offered (or not known at all) is passed over.
  for (const MediaRange& range : ranges) {
    Encoding e;
    if (range.type == "*/*" || range.type == "application/*") {
      e.format = offer.default_format;
    } else {
      const size_t slash = range.type.rfind('/');
      auto format =
          OutputFormatFromName(slash == std::string::npos ? std::string_view(range.type)
                                                          : std::string_view(range.type).substr(slash + 1));
      if (!format.ok()) continue;
      e.format = *format;
    }
    e.gpu_transport = range.gpu_transport.value_or("none");
    if (range.compression) {
      auto compression = CompressionFromName(*range.compression);
      if (!compression.ok()) continue;
      e.compression = *compression;
    } else {
      e.compression = offer.default_compression;
    }
    if (Contains(offer.formats, e.format) && Contains(offer.gpu_transports, e.gpu_transport)) return e;
  }
  return std::nullopt;
}

Value NotAcceptableBody(std::string_view accept, const Offer& offer) {
  Value::Dict detail{
      {"message", Value("Cannot produce any encoding accepted by " + PyRepr(accept))},
      {"available_formats", StringList(offer.FormatNames())},
      {"available_gpu_transports", StringList(offer.gpu_transports)},
      {"available_compressions", StringList(offer.CompressionNames())},
  };
  return Value::Dict{{"detail", Value(std::move(detail))}};
}

}  // namespace tesscpp::runtime
