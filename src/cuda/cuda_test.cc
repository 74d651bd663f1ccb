// cuda_test.cc: the cuda module without a GPU (every build) and with one.
#include <gtest/gtest.h>

#include <regex>

#include "core/status_matchers.h"
#include "tesscpp/cuda.h"
#include "tesscpp/internal/cuda/cuda_ipc.h"
#include "tesscpp/internal/cuda/cuda_transfer.h"

namespace tesscpp::cuda {
namespace {

bool HaveDevice() { return CheckAvailable().ok(); }

TEST(CudaWithoutDevice, EveryEntryPointSaysWhy) {
  if (HaveDevice()) GTEST_SKIP() << "a CUDA device is visible";
  const Status status = CheckAvailable();
  EXPECT_EQ(status.code(), BuiltWithCuda() ? StatusCode::kUnavailable : StatusCode::kUnimplemented);
  EXPECT_FALSE(status.message().empty());
  EXPECT_EQ(DeviceCount().status(), status);
  EXPECT_EQ(DeviceUuid(0).status(), status);
  // An array's GPU is named, with why none is usable here.
  const Status ordinal = OrdinalOfUuid("00010203-0405-0607-0809-0a0b0c0d0e0f").status();
  if (BuiltWithCuda()) {
    EXPECT_EQ(ordinal.code(), StatusCode::kUnavailable);
    EXPECT_NE(
        ordinal.message().find("the GPU with UUID 00010203-0405-0607-0809-0a0b0c0d0e0f, but this process "
                               "can use no GPU (" +
                               status.message() + ")"),
        std::string::npos)
        << ordinal;
  } else {
    EXPECT_EQ(ordinal, status);
  }
  EXPECT_EQ(AllocateDevice(Dtype::kFloat32, *Shape::Make({4}), 0).status().code(), status.code());

  IpcDescriptor descriptor;
  descriptor.device_uuid = "00010203-0405-0607-0809-0a0b0c0d0e0f";
  EXPECT_EQ(ImportIpc(descriptor, Dtype::kFloat32, *Shape::Make({0})).status().code(), status.code());
  EXPECT_EQ(BorrowIpc(descriptor, Dtype::kFloat32, *Shape::Make({0})).status().code(), status.code());
  EXPECT_EQ(CopyHostToDevice({}, 0, 0).status().code(), status.code());
  EXPECT_EQ(OrderAfterStream(1, 0), status);
  int32_t word = 0;
  EXPECT_EQ(CopyOnDeviceAsync(&word, &word, 4, 0, 1).code(), status.code());
  EXPECT_EQ(CopyToHostAfterStream(&word, &word, 4, 0, 1).code(), status.code());
  EXPECT_EQ(CopyToDeviceOnStream(&word, &word, 4, 0, 1).code(), status.code());
}

TEST(CudaWithoutDevice, HostTensorsAreNotDeviceTensors) {
  Tensor host = *Tensor::Allocate(Dtype::kFloat64, *Shape::Make({3}));
  // A host tensor needs no device to be "copied" to the host...
  auto same = host.ViewOrCopyToHost();
  ASSERT_OK(same);
  EXPECT_EQ(same->data(), host.data());
  // ...and is refused by the export, with or without a device.
  std::vector<std::shared_ptr<void>> pins;
  const Status refused = ExportIpc(host, pins).status();
  EXPECT_FALSE(refused.ok());
  EXPECT_TRUE(pins.empty());
}

class CudaDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!HaveDevice()) GTEST_SKIP() << CheckAvailable();
  }
};

TEST_F(CudaDevice, UuidsAreCanonicalAndMapBack) {
  const int count = *DeviceCount();
  for (int i = 0; i < count; ++i) {
    const std::string uuid = *DeviceUuid(i);
    EXPECT_TRUE(
        std::regex_match(uuid, std::regex("^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")))
        << uuid;
    EXPECT_EQ(*OrdinalOfUuid(uuid), i);
  }
  const Status unknown = OrdinalOfUuid("ffffffff-ffff-ffff-ffff-ffffffffffff").status();
  EXPECT_NE(unknown.message().find("which this process cannot see"), std::string::npos) << unknown;
}

TEST_F(CudaDevice, CopiesRoundTrip) {
  Tensor host = *Tensor::Allocate(Dtype::kInt32, *Shape::Make({1000}));
  for (int i = 0; i < 1000; ++i) host.data_as<int32_t>()[i] = i * 7 - 3;
  auto device = CopyToDevice(host, 0);
  ASSERT_OK(device);
  EXPECT_EQ(device->device(), Device::CUDA(0));
  auto back = device->ViewOrCopyToHost();
  ASSERT_OK(back);
  EXPECT_TRUE(back->Equals(host));
}

// The copies of a stream's user (tesscpp.jax's custom call on XLA's stream):
// host -> device -> device -> host on the legacy default stream.
TEST_F(CudaDevice, CopiesOnAStream) {
  constexpr uintptr_t kLegacy = 1;
  std::vector<int32_t> values(4099), back(4099, 0);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<int32_t>(i * 5 + 1);
  const int64_t nbytes = static_cast<int64_t>(values.size() * sizeof(int32_t));
  Tensor first = *AllocateDevice(Dtype::kInt32, *Shape::Make({4099}), 0);
  Tensor second = *AllocateDevice(Dtype::kInt32, *Shape::Make({4099}), 0);
  ASSERT_OK(CopyToDeviceOnStream(first.data(), values.data(), nbytes, 0, kLegacy));
  ASSERT_OK(CopyOnDeviceAsync(second.data(), first.data(), nbytes, 0, kLegacy));
  ASSERT_OK(CopyToHostAfterStream(back.data(), second.data(), nbytes, 0, kLegacy));
  EXPECT_EQ(back, values);
}

TEST_F(CudaDevice, ExportNamesTheAllocationBaseAndOffset) {
  Tensor whole = *AllocateDevice(Dtype::kUInt8, *Shape::Make({1 << 20}), 0);
  // A tensor 4096 bytes into the allocation, as a caching allocator hands out.
  Tensor inner =
      *Tensor::Make(Dtype::kFloat32, *Shape::Make({256}), whole.buffer().Slice(4096, 1024), Device::CUDA(0));
  std::vector<std::shared_ptr<void>> pins;
  auto exported = ExportIpc(inner, pins);
  ASSERT_OK(exported);
  EXPECT_TRUE(exported->has_handle);
  EXPECT_EQ(exported->offset, 4096);
  EXPECT_GE(exported->allocation_size, 1 << 20);
  EXPECT_EQ(exported->device_uuid, *DeviceUuid(0));
  ASSERT_EQ(pins.size(), 1U);
  EXPECT_EQ(pins[0], whole.buffer().owner());
}

TEST_F(CudaDevice, EmptyTensorsCarryNoHandle) {
  Tensor empty = *AllocateDevice(Dtype::kFloat32, *Shape::Make({0, 3}), 0);
  std::vector<std::shared_ptr<void>> pins;
  auto exported = ExportIpc(empty, pins);
  ASSERT_OK(exported);
  EXPECT_FALSE(exported->has_handle);
  EXPECT_TRUE(pins.empty());
  auto imported = ImportIpc(*exported, Dtype::kFloat32, *Shape::Make({0, 3}));
  ASSERT_OK(imported);
  EXPECT_EQ(imported->nbytes(), 0);
  auto borrowed = BorrowIpc(*exported, Dtype::kFloat32, *Shape::Make({0, 3}));
  ASSERT_OK(borrowed);
  EXPECT_EQ(borrowed->nbytes(), 0);
  // A handle-less descriptor for a non-empty array is refused.
  EXPECT_FALSE(ImportIpc(*exported, Dtype::kFloat32, *Shape::Make({3})).ok());
  EXPECT_FALSE(BorrowIpc(*exported, Dtype::kFloat32, *Shape::Make({3})).ok());
}

TEST_F(CudaDevice, ImportChecksTheRangeBeforeMapping) {
  IpcDescriptor descriptor;
  descriptor.device_uuid = *DeviceUuid(0);
  descriptor.has_handle = true;
  descriptor.offset = 1000;
  descriptor.allocation_size = 1024;
  const Status status = ImportIpc(descriptor, Dtype::kFloat64, *Shape::Make({16})).status();
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status;
  const Status borrowed = BorrowIpc(descriptor, Dtype::kFloat64, *Shape::Make({16})).status();
  EXPECT_EQ(borrowed.code(), StatusCode::kInvalidArgument) << borrowed;
}

TEST_F(CudaDevice, HostToDeviceThroughStagingSlots) {
  // 100 MiB + 3 bytes: several 32 MiB slots, each filled by several threads, and a ragged end.
  const int64_t n = (int64_t{100} << 20) + 3;
  Tensor host = *Tensor::Allocate(Dtype::kUInt8, *Shape::Make({n}));
  for (int64_t i = 0; i < n; ++i) host.data()[i] = static_cast<uint8_t>(i * 31 + 7);
  Tensor device = *AllocateDevice(Dtype::kUInt8, *Shape::Make({n}), 0);
  const HostToDeviceCopy copies[] = {{host.data(), device.data(), n}, {nullptr, nullptr, 0}};
  auto done = CopyHostToDevice(copies, 0, /*legacy default stream*/ 0);
  ASSERT_OK(done);
  ASSERT_TRUE((*done)->Wait().ok());
  EXPECT_TRUE(device.ViewOrCopyToHost()->Equals(host));
  const HostToDeviceCopy broken[] = {{nullptr, device.data(), 8}};
  EXPECT_EQ(CopyHostToDevice(broken, 0, 0).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tesscpp::cuda
