// tensor.cc: Tensor construction and its DLPack-shaped view.
#include "tesscpp/tensor.h"

#include <cstring>

#include "core/memory_manager.h"
#include "tesscpp/internal/core/buffer_pool.h"

namespace tesscpp {

std::string Device::ToString() const {
  switch (type) {
    case DeviceType::kCPU: return "cpu";
    case DeviceType::kCUDA: return "cuda:" + std::to_string(id);
    case DeviceType::kCUDAHost: return "cuda_host";
  }
  return "device(" + std::to_string(static_cast<int>(type)) + ")";
}

Tensor::Tensor(Dtype dtype, Shape shape, Buffer buffer, Device device)
    : dtype_(dtype), shape_(std::move(shape)), buffer_(std::move(buffer)), device_(device) {
  strides_.resize(static_cast<size_t>(shape_.rank()));
  int64_t stride = 1;
  for (int axis = shape_.rank() - 1; axis >= 0; --axis) {
    strides_[static_cast<size_t>(axis)] = stride;
    stride *= shape_[axis];
  }
}

Result<Tensor> Tensor::Make(Dtype dtype, Shape shape, Buffer buffer, Device device) {
  const int64_t needed = shape.num_elements() * ItemSize(dtype);
  if (buffer.size() < needed) {
    return Status::ValidationError("a ", DtypeName(dtype), " array of shape ", shape.ToString(), " needs ",
                                   needed, " bytes, the buffer holds ", buffer.size());
  }
  return Tensor(dtype, std::move(shape), std::move(buffer), device);
}

Result<Tensor> Tensor::Allocate(Dtype dtype, Shape shape, BufferPool* pool) {
  if (pool == nullptr) pool = BufferPool::Default();
  TESS_ASSIGN_OR_RETURN(Buffer buffer, pool->Allocate(shape.num_elements() * ItemSize(dtype)));
  return Tensor(dtype, std::move(shape), std::move(buffer), Device::CPU());
}

TensorView Tensor::view() const {
  return TensorView{buffer_.data(),  device_, shape_.rank(), ToDlpack(dtype_), shape_.dims().data(),
                    strides_.data(), 0};
}

Result<Tensor> Tensor::ViewOrCopyToHost() const {
  if (device_.host_accessible()) return *this;
  if (nbytes() == 0) return Allocate(dtype_, shape_);
  const core::MemoryManager* memory = core::MemoryManagerOf(device_.type);
  if (memory == nullptr) {
    return Status::InvalidArgument(
        "a ", device_.ToString(),
        " tensor cannot be copied to the host: nothing in this process manages that memory");
  }
  TESS_ASSIGN_OR_RETURN(Buffer host, memory->CopyToHost(buffer_.Slice(0, nbytes()), device_));
  return Make(dtype_, shape_, std::move(host));
}

bool Tensor::Equals(const Tensor& other) const {
  if (dtype_ != other.dtype_ || !(shape_ == other.shape_) || !(device_ == other.device_)) return false;
  if (!device_.host_accessible()) return buffer_.data() == other.buffer_.data();
  return nbytes() == 0 || std::memcmp(data(), other.data(), static_cast<size_t>(nbytes())) == 0;
}

}  // namespace tesscpp
