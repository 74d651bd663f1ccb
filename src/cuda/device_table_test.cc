// device_table_test.cc: naming GPUs across processes by UUID, with fake
// device tables (no GPU needed). Two processes that see the same GPU under
// different ordinals (CUDA_VISIBLE_DEVICES differs) must agree on it, and a
// process that cannot see it must say so (issue 21's remapping logic, which a
// one-GPU machine cannot exercise for real).
#include <gtest/gtest.h>

#include <cctype>
#include <string>
#include <vector>

#include "core/status_matchers.h"
#include "cuda/cuda_api.h"

namespace tesscpp::cuda::internal {
namespace {

CUuuid Bytes(unsigned char first) {
  CUuuid uuid{};
  for (int i = 0; i < 16; ++i) uuid.bytes[i] = static_cast<char>(first + i);
  return uuid;
}

TEST(DeviceTable, UuidsAreWrittenAsTesseractCoreWritesThem) {
  EXPECT_EQ(FormatUuid(Bytes(0x00)), "00010203-0405-0607-0809-0a0b0c0d0e0f");
  EXPECT_EQ(FormatUuid(Bytes(0xf0)), "f0f1f2f3-f4f5-f6f7-f8f9-fafbfcfdfeff");  // lower case, bytes unsigned
}

TEST(DeviceTable, OneGpuUnderDifferentOrdinalsIsTheSameGpu) {
  const std::string a = FormatUuid(Bytes(0x10)), b = FormatUuid(Bytes(0x20)), c = FormatUuid(Bytes(0x30));
  const std::vector<std::string> client = {a, b, c};  // CUDA_VISIBLE_DEVICES unset: all three
  const std::vector<std::string> server = {c, a};     // CUDA_VISIBLE_DEVICES=2,0
  // The client's tensor on its ordinal 2 is the server's ordinal 0, and back.
  EXPECT_EQ(*FindOrdinal(server, client[2]), 0);
  EXPECT_EQ(*FindOrdinal(client, server[0]), 2);
  EXPECT_EQ(*FindOrdinal(server, client[0]), 1);
  EXPECT_EQ(*FindOrdinal(client, server[1]), 0);
  // A GPU the server does not see: tesseract-core's message, naming the UUID.
  const Result<int> hidden = FindOrdinal(server, client[1]);
  EXPECT_STATUS(hidden.status(), StatusCode::kUnavailable);
  EXPECT_EQ(hidden.status().message(), "The array lives on the GPU with UUID " + b +
                                           ", which this process cannot see. Give both processes access to "
                                           "that GPU (e.g. via --gpus or CUDA_VISIBLE_DEVICES).");
  // No normalisation: NVML's "GPU-" spelling and upper case are other names.
  EXPECT_FALSE(FindOrdinal(server, "GPU-" + c).ok());
  std::string upper = c;
  for (char& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  EXPECT_FALSE(FindOrdinal(server, upper).ok());
  EXPECT_FALSE(FindOrdinal({}, a).ok());
}

}  // namespace
}  // namespace tesscpp::cuda::internal
