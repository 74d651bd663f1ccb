// Fuzz target: LZ4 frame decoding into a fixed-size destination. The first two
// bytes choose the expected size; the rest is the frame. Must never crash or
// write past the destination (ASan), whatever the frame says about itself.
#include <cstdint>
#include <vector>

#include "codec/lz4.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const size_t expected = (size_t{data[0]} << 8 | data[1]) * 4;
  std::vector<uint8_t> out(expected);
  (void)tesscpp::codec::Lz4FrameDecompress({data + 2, size - 2}, out);
  return 0;
}
