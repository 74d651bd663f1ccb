// Fuzz target: strict base64 decoding. Every input is decoded by the scalar
// reference and the AVX2 codec, which must agree exactly (result or error).
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "codec/base64.h"

using namespace tesscpp::codec;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto n = Base64DecodedSize(text);
  if (!n.ok()) return 0;
  std::vector<uint8_t> scalar(*n), avx2(*n);
  const auto a = ScalarBase64().decode(text, scalar.data());
  if (const Base64Codec* fast = Avx2Base64()) {
    const auto b = fast->decode(text, avx2.data());
    if (a.ok() != b.ok() || (a.ok() && scalar != avx2) || (!a.ok() && !(a == b))) std::abort();
  }
  if (a.ok()) {  // and what decodes re-encodes to the canonical form of the input
    std::vector<char> again(Base64EncodedSize(scalar.size()));
    ScalarBase64().encode(scalar, again.data());
    std::vector<uint8_t> twice(scalar.size());
    if (!ScalarBase64().decode({again.data(), again.size()}, twice.data()).ok() || twice != scalar)
      std::abort();
  }
  return 0;
}
