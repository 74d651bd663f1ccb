// Fuzz target: the JSON reader (no array detection) and the writer. A document
// that parses must serialise, and the serialised form must parse back to an
// equal Value, except where JSON cannot say the number: an infinite float
// (1e999 reads as infinity) is written as null, as orjson does. NaN never
// appears (JSON has no NaN literal). Writing the re-read Value must then give
// the same bytes again.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "tesscpp/internal/codec/json.h"

namespace {

using tesscpp::Value;

// Whether `reread` is `original` written and read back.
bool SameAfterRoundTrip(const Value& original, const Value& reread) {
  if (original.is_float() && !std::isfinite(original.as_number())) return reread.is_null();
  if (original.kind() != reread.kind()) return false;
  if (original.is_list()) {
    const Value::List& a = original.as_list();
    const Value::List& b = reread.as_list();
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (!SameAfterRoundTrip(a[i], b[i])) return false;
    }
    return true;
  }
  if (original.is_dict()) {
    const Value::Dict& a = original.as_dict();
    const Value::Dict& b = reread.as_dict();
    if (a.size() != b.size()) return false;
    auto bi = b.begin();
    for (const auto& [key, value] : a) {  // the writer keeps insertion order
      if (bi->first != key || !SameAfterRoundTrip(value, bi->second)) return false;
      ++bi;
    }
    return true;
  }
  return original == reread;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tesscpp;
  auto value = ReadJson(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!value.ok()) return 0;
  auto written = WriteJson(*value);
  if (!written.ok()) std::abort();
  auto again = ReadJson(*written);
  if (!again.ok()) std::abort();
  if (!SameAfterRoundTrip(*value, *again)) std::abort();
  auto rewritten = WriteJson(*again);
  if (!rewritten.ok() || rewritten->string_view() != written->string_view()) std::abort();
  return 0;
}
