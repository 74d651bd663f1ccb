// tensor.h: Tensor, an n-d array in a Buffer, and TensorView, its DLPack face.
//
// Tensors are always C-contiguous (the protocol's only layout). The fields map
// one to one onto DLPack's DLTensor, so the binding layer converts without
// copying: data + byte_offset, device, ndim, dtype {code, bits, lanes}, shape and
// strides in elements.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "tesscpp/buffer.h"
#include "tesscpp/device.h"
#include "tesscpp/dtype.h"
#include "tesscpp/result.h"
#include "tesscpp/shape.h"

namespace tesscpp {

class BufferPool;

/// \brief Non-owning description of a tensor with DLTensor's fields. Valid while
/// the Tensor it came from lives.
struct TensorView {
  void* data = nullptr;
  Device device;
  int32_t ndim = 0;
  DlpackDtype dtype{};
  const int64_t* shape = nullptr;
  const int64_t* strides = nullptr;  ///< in elements, never null
  uint64_t byte_offset = 0;
};

/// \brief A typed, shaped, C-contiguous array whose bytes live in a Buffer.
/// Copies share the bytes (like a NumPy view); use Clone-style helpers to copy.
class Tensor {
 public:
  /// \brief A tensor over `buffer`. kValidationError when the buffer holds fewer
  /// than shape.num_elements() * ItemSize(dtype) bytes (extra bytes are allowed).
  static Result<Tensor> Make(Dtype dtype, Shape shape, Buffer buffer, Device device = Device::CPU());

  /// \brief A CPU tensor with uninitialised contents from `pool` (Default() if null).
  static Result<Tensor> Allocate(Dtype dtype, Shape shape, BufferPool* pool = nullptr);

  Dtype dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int rank() const { return shape_.rank(); }
  int64_t num_elements() const { return shape_.num_elements(); }
  int64_t nbytes() const { return shape_.num_elements() * ItemSize(dtype_); }
  Device device() const { return device_; }

  /// \brief The buffer holding the bytes (may be larger than nbytes()).
  const Buffer& buffer() const { return buffer_; }
  uint8_t* data() const { return buffer_.data(); }
  template <typename T>
  T* data_as() const {
    return reinterpret_cast<T*>(buffer_.data());
  }
  /// \brief The nbytes() bytes of the tensor.
  std::span<uint8_t> bytes() const { return {buffer_.data(), static_cast<size_t>(nbytes())}; }

  /// \brief C-contiguous strides in elements (one per dimension).
  std::span<const int64_t> strides() const { return strides_; }

  /// \brief DLTensor-shaped view (byte_offset is 0: data points at the first element).
  TensorView view() const;

  /// \brief This tensor when the host can read its bytes, else a CPU copy made
  /// by the manager of its device's memory (for CUDA, after the whole device
  /// is done, since the writers' streams are unknown). kInvalidArgument when
  /// nothing in the process manages that memory (a build without CUDA).
  Result<Tensor> ViewOrCopyToHost() const;

  /// \brief Same dtype, shape, device and bytes (bitwise: NaN payloads count).
  /// Device memory cannot be read here, so device tensors are equal only when
  /// they share their first byte.
  bool Equals(const Tensor& other) const;

 private:
  Tensor(Dtype dtype, Shape shape, Buffer buffer, Device device);

  Dtype dtype_;
  Shape shape_;
  Buffer buffer_;
  Device device_;
  std::vector<int64_t> strides_;
};

}  // namespace tesscpp
