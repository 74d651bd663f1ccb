#include "tesscpp/tensor.h"

#include <gtest/gtest.h>

#include "tesscpp/internal/core/buffer_pool.h"

namespace tesscpp {
namespace {

TEST(Tensor, AllocateAndView) {
  Tensor t = *Tensor::Allocate(Dtype::kFloat32, *Shape::Make({2, 3}));
  EXPECT_EQ(t.nbytes(), 24);
  EXPECT_EQ(t.num_elements(), 6);
  EXPECT_EQ(t.device(), Device::CPU());
  TensorView v = t.view();
  EXPECT_EQ(v.ndim, 2);
  EXPECT_EQ(v.shape[0], 2);
  EXPECT_EQ(v.shape[1], 3);
  EXPECT_EQ(v.strides[0], 3);
  EXPECT_EQ(v.strides[1], 1);
  EXPECT_EQ(v.dtype, (DlpackDtype{2, 32, 1}));
  EXPECT_EQ(v.device.type, DeviceType::kCPU);
  EXPECT_EQ(v.data, t.data());
  EXPECT_EQ(v.byte_offset, 0u);
}

TEST(Tensor, MakeChecksBufferSize) {
  Buffer small = *BufferPool::Default()->Allocate(8);
  auto r = Tensor::Make(Dtype::kFloat64, *Shape::Make({2}), small);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("needs 16 bytes"), std::string::npos);
  EXPECT_TRUE(Tensor::Make(Dtype::kFloat64, Shape(), small).ok());
}

TEST(Tensor, ScalarAndEmpty) {
  Tensor scalar = *Tensor::Allocate(Dtype::kInt64, Shape());
  EXPECT_EQ(scalar.nbytes(), 8);
  EXPECT_EQ(scalar.view().ndim, 0);
  Tensor empty = *Tensor::Allocate(Dtype::kInt64, *Shape::Make({0, 4}));
  EXPECT_EQ(empty.nbytes(), 0);
  EXPECT_EQ(empty.strides()[0], 4);
}

TEST(Tensor, EqualsComparesBytes) {
  Tensor a = *Tensor::Allocate(Dtype::kInt32, *Shape::Make({2}));
  Tensor b = *Tensor::Allocate(Dtype::kInt32, *Shape::Make({2}));
  a.data_as<int32_t>()[0] = b.data_as<int32_t>()[0] = 1;
  a.data_as<int32_t>()[1] = b.data_as<int32_t>()[1] = 2;
  EXPECT_TRUE(a.Equals(b));
  b.data_as<int32_t>()[1] = 3;
  EXPECT_FALSE(a.Equals(b));
  Tensor c = *Tensor::Make(Dtype::kUInt32, a.shape(), a.buffer());
  EXPECT_FALSE(a.Equals(c));  // same bytes, other dtype
}

TEST(Device, Names) {
  EXPECT_EQ(Device::CPU().ToString(), "cpu");
  EXPECT_EQ(Device::CUDA(1).ToString(), "cuda:1");
  EXPECT_FALSE(Device::CUDA(0).host_accessible());
}

}  // namespace
}  // namespace tesscpp
