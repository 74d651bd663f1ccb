#include "tesscpp/internal/core/device_values.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "core/memory_manager.h"
#include "tesscpp/internal/core/buffer_pool.h"

namespace tesscpp {
namespace {

// Memory the host "cannot read", for testing what the core does with it:
// registered for CUDA while a test runs (this binary has no cuda layer), the
// copy a memcpy, counted.
class CountingMemory final : public core::MemoryManager {
 public:
  CountingMemory() { core::SetMemoryManager(DeviceType::kCUDA, this); }
  ~CountingMemory() override { core::SetMemoryManager(DeviceType::kCUDA, nullptr); }
  Result<Buffer> CopyToHost(const Buffer& bytes, Device device) const override {
    ++copies;
    last_device = device;
    TESS_ASSIGN_OR_RETURN(Buffer host, BufferPool::Default()->Allocate(bytes.size()));
    std::memcpy(host.data(), bytes.data(), static_cast<size_t>(bytes.size()));
    return host;
  }
  mutable int copies = 0;
  mutable Device last_device;
};

// A "CUDA" tensor of `values`, wrapped as any producer wraps device memory.
Tensor OnDevice(std::initializer_list<float> values, int64_t extra_bytes = 0, int ordinal = 0) {
  const auto nbytes = static_cast<int64_t>(values.size() * sizeof(float));
  Buffer bytes = *BufferPool::Default()->Allocate(nbytes + extra_bytes);
  std::memcpy(bytes.data(), values.begin(), static_cast<size_t>(nbytes));
  return *Tensor::Make(Dtype::kFloat32, *Shape::Make({static_cast<int64_t>(values.size())}), bytes,
                       Device::CUDA(ordinal));
}

TEST(DeviceValues, DeviceBytesCopyThemselvesToTheHost) {
  CountingMemory memory;
  Tensor device = OnDevice({1, 2, 3}, /*extra_bytes=*/100, /*ordinal=*/1);
  Result<Tensor> host = device.ViewOrCopyToHost();
  ASSERT_TRUE(host.ok()) << host.status().ToString();
  EXPECT_EQ(host->device(), Device::CPU());
  EXPECT_EQ(memory.last_device, Device::CUDA(1));  // the manager is told whose memory it copies
  EXPECT_EQ(host->buffer().size(), 12);            // the tensor's bytes, not its whole buffer
  EXPECT_EQ(host->data_as<float>()[2], 3.0f);
  EXPECT_NE(host->data(), device.data());
  EXPECT_EQ(memory.copies, 1);
}

TEST(DeviceValues, HostTensorsAreViewsAndSlicesCopyTheirOwnBytes) {
  CountingMemory memory;
  Tensor host = *Tensor::Allocate(Dtype::kInt32, *Shape::Make({4}));
  EXPECT_EQ(host.ViewOrCopyToHost()->data(), host.data());
  EXPECT_EQ(memory.copies, 0);
  Tensor device = OnDevice({1, 2, 3, 4});
  Tensor middle =
      *Tensor::Make(Dtype::kFloat32, *Shape::Make({2}), device.buffer().Slice(4, 8), Device::CUDA(0));
  Result<Tensor> copied = middle.ViewOrCopyToHost();
  ASSERT_TRUE(copied.ok()) << copied.status().ToString();
  EXPECT_EQ(copied->data_as<float>()[0], 2.0f);
  EXPECT_EQ(copied->data_as<float>()[1], 3.0f);
}

TEST(DeviceValues, DeviceBytesNothingManagesAreRefused) {
  ASSERT_EQ(core::MemoryManagerOf(DeviceType::kCUDA), nullptr);  // no cuda layer in this binary
  Tensor orphan = OnDevice({1, 2}, 0, /*ordinal=*/1);
  Result<Tensor> host = orphan.ViewOrCopyToHost();
  ASSERT_FALSE(host.ok());
  EXPECT_EQ(host.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(host.status().message().find("cuda:1"), std::string::npos);
  // An empty device tensor needs no bytes copied.
  Tensor empty = *Tensor::Make(Dtype::kFloat32, *Shape::Make({0}), Buffer(), Device::CUDA(1));
  EXPECT_EQ(empty.ViewOrCopyToHost()->device(), Device::CPU());
}

TEST(DeviceValues, ImplicitCopiesFollowTheForbidSetting) {
  CountingMemory memory;
  Tensor device = OnDevice({5});
  ::setenv("TESSERACT_FORBID_DEVICE_HOST_COPY", "True", 1);
  Result<Tensor> refused = core::ImplicitCopyToHost(device);
  ::unsetenv("TESSERACT_FORBID_DEVICE_HOST_COPY");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kNotAcceptable);
  EXPECT_EQ(memory.copies, 0);
  EXPECT_TRUE(core::ImplicitCopyToHost(device).ok());
  EXPECT_EQ(memory.copies, 1);
}

TEST(DeviceValues, TreesAreWalkedForDevicesAndMovedToTheHost) {
  CountingMemory memory;
  Value tree(Value::Dict{{"a", Value(OnDevice({1, 2}))},
                         {"b", Value(Value::List{Value(int64_t{3}), Value(OnDevice({4}))})},
                         {"c", Value(*Tensor::Allocate(Dtype::kInt8, *Shape::Make({1})))}});
  EXPECT_TRUE(core::HoldsDeviceTensors(tree));
  EXPECT_EQ(core::DevicesOf(tree), std::vector<int>{0});
  ASSERT_TRUE(core::MoveDeviceTensorsToHost(tree).ok());
  EXPECT_FALSE(core::HoldsDeviceTensors(tree));
  EXPECT_EQ(memory.copies, 2);
  EXPECT_EQ(tree.as_dict().at("b").as_list()[1].as_tensor().data_as<float>()[0], 4.0f);
}

}  // namespace
}  // namespace tesscpp
