// Fuzz target: the JSON reader (no array detection) and the writer. A document
// that parses must serialise, and the serialised form must parse to an equal
// Value (NaN-free documents only: JSON has no NaN, so NaN never appears here).
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "tesscpp/json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tesscpp;
  auto value = ReadJson(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!value.ok()) return 0;
  auto written = WriteJson(*value);
  if (!written.ok()) std::abort();
  auto again = ReadJson(*written);
  if (!again.ok()) std::abort();
  // Infinite numbers (1e999) are written as null, as orjson does; compare only
  // documents that survive that.
  auto rewritten = WriteJson(*again);
  if (!rewritten.ok() || rewritten->string_view() != written->string_view()) std::abort();
  return 0;
}
