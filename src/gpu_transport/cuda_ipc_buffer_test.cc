// The cuda_ipc buffer grammar: tesseract-core 1.15's spelling and pattern, and
// tesscpp's cuda_vmm extension of it.
#include "gpu_transport/cuda_ipc_buffer.h"

#include <gtest/gtest.h>

#include <string>

#include "core/status_matchers.h"

namespace tesscpp::gpu_transport {
namespace {

// docs/gpu-transport-protocol.md 8: what tesseract-core 1.15 writes for these values.
TEST(CudaIpcBuffer, MatchesTheReferenceSpelling) {
  cuda::IpcDescriptor d;
  d.device_uuid = "00010203-0405-0607-0809-0a0b0c0d0e0f";
  d.has_handle = true;
  d.handle.fill(0xAB);
  d.offset = 4096;
  d.allocation_size = 2097152;
  const std::string text = FormatCudaIpcBuffer(d);
  EXPECT_EQ(text,
            "00010203-0405-0607-0809-0a0b0c0d0e0f:"
            "q6urq6urq6urq6urq6urq6urq6urq6urq6urq6urq6urq6urq6urq6urq6urq6urq6urq6urq6urq6urq6urqw==:4096:"
            "2097152");
  auto parsed = ParseCudaIpcBuffer(text);
  ASSERT_OK(parsed);
  EXPECT_EQ(parsed->handle, d.handle);
  EXPECT_EQ(parsed->offset, 4096);
  EXPECT_EQ(parsed->allocation_size, 2097152);

  cuda::IpcDescriptor empty;
  empty.device_uuid = d.device_uuid;
  EXPECT_EQ(FormatCudaIpcBuffer(empty), "00010203-0405-0607-0809-0a0b0c0d0e0f::0:0");
  auto parsed_empty = ParseCudaIpcBuffer(FormatCudaIpcBuffer(empty));
  ASSERT_OK(parsed_empty);
  EXPECT_FALSE(parsed_empty->has_handle);
}

TEST(CudaIpcBuffer, RefusesWhatThePatternRefuses) {
  const std::string uuid = "00010203-0405-0607-0809-0a0b0c0d0e0f";
  for (const std::string& bad : {
           "GPU-" + uuid + "::0:0",                                   // NVML spelling
           std::string("00010203-0405-0607-0809-0A0B0C0D0E0F::0:0"),  // upper case
           std::string("0:q6ur:0:4"),                                 // 1.13's ordinal
           uuid + "::0",                                              // three fields
           uuid + "::0:0:0",                                          // five
           uuid + "::-1:0",                                           // sign
           uuid + "::0:99999999999999999999",                         // beyond 63 bits
           uuid + ":q6urqw==:0:4",                                    // a handle of 4 bytes
           uuid + ":q6u*:0:4",                                        // not base64
       }) {
    EXPECT_FALSE(ParseCudaIpcBuffer(bad).ok()) << bad;
  }
}

// tesscpp's cuda_vmm extension (docs/gpu-transport-protocol.md 13).
TEST(CudaIpcBuffer, CarriesVmmAllocations) {
  cuda::IpcDescriptor d;
  d.device_uuid = "00010203-0405-0607-0809-0a0b0c0d0e0f";
  d.vmm_exporter = "4242.0123456789abcdef";
  d.vmm_token = "00112233445566778899aabbccddeeff";
  d.vmm_pieces = {{907, 20971520}, {909, 2097152}};
  d.offset = 1000;
  const std::string text = FormatCudaIpcBuffer(d);
  EXPECT_EQ(text,
            "00010203-0405-0607-0809-0a0b0c0d0e0f:vmm.4242.0123456789abcdef.00112233445566778899aabbccddeeff:"
            "1000:907/20971520,909/2097152");
  auto parsed = ParseCudaIpcBuffer(text);
  ASSERT_OK(parsed);
  EXPECT_TRUE(parsed->is_vmm());
  EXPECT_FALSE(parsed->has_handle);
  EXPECT_EQ(parsed->vmm_exporter, d.vmm_exporter);
  EXPECT_EQ(parsed->vmm_token, d.vmm_token);
  EXPECT_EQ(parsed->vmm_pieces, d.vmm_pieces);
  EXPECT_EQ(parsed->offset, 1000);
  EXPECT_EQ(parsed->allocation_size, 20971520 + 2097152);

  const std::string head = d.device_uuid + ":vmm.4242.0123456789abcdef.00112233445566778899aabbccddeeff:0:";
  std::string too_many;
  for (int i = 0; i <= 65536; ++i) too_many += (i > 0 ? ",1/2097152" : "1/2097152");
  for (const std::string& bad : {
           head,                             // no allocation
           head + "1/0",                     // an empty one
           head + "1/2097152,",              // a trailing comma
           head + "1-2097152",               // no '/'
           head + "1/2/3",                   // three numbers
           head + "1/1125899906842624,2/1",  // beyond 2**50 in all
           head + too_many,                  // too many
           d.device_uuid + ":vmm.4242.0123456789ABCDEF.00112233445566778899aabbccddeeff:0:1/2",  // upper hex
           d.device_uuid + ":vmm.4242.0123456789abcdef:0:1/2",                                   // no token
           d.device_uuid + ":vmm.x.0123456789abcdef.00112233445566778899aabbccddeeff:0:1/2",     // pid
       }) {
    EXPECT_FALSE(ParseCudaIpcBuffer(bad).ok()) << bad.substr(0, 200);
  }
}

}  // namespace
}  // namespace tesscpp::gpu_transport
