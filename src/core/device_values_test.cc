#include "tesscpp/internal/device_values.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "tesscpp/internal/buffer_pool.h"
#include "tesscpp/memory_manager.h"

namespace tesscpp {
namespace {

// Memory the host "cannot read", for testing what the core does with it: the
// copy is a memcpy, counted.
class CountingMemory final : public MemoryManager {
 public:
  Result<Buffer> CopyToHost(const Buffer& bytes) const override {
    ++copies;
    TESS_ASSIGN_OR_RETURN(Buffer host, BufferPool::Default()->Allocate(bytes.size()));
    std::memcpy(host.data(), bytes.data(), static_cast<size_t>(bytes.size()));
    return host;
  }
  mutable int copies = 0;
};

Tensor OnDevice(const CountingMemory& memory, std::initializer_list<float> values, int64_t extra_bytes = 0) {
  const auto nbytes = static_cast<int64_t>(values.size() * sizeof(float));
  Buffer host = *BufferPool::Default()->Allocate(nbytes + extra_bytes);
  std::memcpy(host.data(), values.begin(), static_cast<size_t>(nbytes));
  Buffer device = Buffer::WrapDevice(host.data(), host.size(), host.owner(), memory);
  return *Tensor::Make(Dtype::kFloat32, *Shape::Make({static_cast<int64_t>(values.size())}), device,
                       Device::CUDA(0));
}

TEST(DeviceValues, DeviceBytesCopyThemselvesToTheHost) {
  CountingMemory memory;
  Tensor device = OnDevice(memory, {1, 2, 3}, /*extra_bytes=*/100);
  Result<Tensor> host = device.ViewOrCopyToHost();
  ASSERT_TRUE(host.ok()) << host.status().ToString();
  EXPECT_EQ(host->device(), Device::CPU());
  EXPECT_EQ(host->buffer().memory_manager(), nullptr);
  EXPECT_EQ(host->buffer().size(), 12);  // the tensor's bytes, not its whole buffer
  EXPECT_EQ(host->data_as<float>()[2], 3.0f);
  EXPECT_NE(host->data(), device.data());
  EXPECT_EQ(memory.copies, 1);
}

TEST(DeviceValues, HostTensorsAreViewsAndSlicesKeepTheirMemory) {
  Tensor host = *Tensor::Allocate(Dtype::kInt32, *Shape::Make({4}));
  EXPECT_EQ(host.ViewOrCopyToHost()->data(), host.data());
  CountingMemory memory;
  Tensor device = OnDevice(memory, {1, 2, 3, 4});
  EXPECT_EQ(device.buffer().Slice(4, 8).memory_manager(), &memory);
}

TEST(DeviceValues, DeviceBytesWithoutAManagerAreRefused) {
  Buffer bytes = *BufferPool::Default()->Allocate(8);
  Tensor orphan = *Tensor::Make(Dtype::kFloat32, *Shape::Make({2}), bytes, Device::CUDA(1));
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
  Tensor device = OnDevice(memory, {5});
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
  Value tree(Value::Dict{{"a", Value(OnDevice(memory, {1, 2}))},
                         {"b", Value(Value::List{Value(int64_t{3}), Value(OnDevice(memory, {4}))})},
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
