// array_tensors.h: tensors to Dr.Jit arrays and back (internal to
// tesscpp/autodiff_arrays.h): host memory mapped where aligned, device
// memory read in place, small host arrays uploaded together, outputs written
// into tensors of their fields' dtypes.
#pragma once

#include <dlfcn.h>
#include <drjit/autodiff.h>
#include <drjit/jit.h>
#include <drjit/math.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tesscpp/autodiff/array_context.h"
#include "tesscpp/autodiff/detail/drjit_process.h"
#include "tesscpp/buffer.h"
#include "tesscpp/component.h"
#include "tesscpp/cuda.h"
#include "tesscpp/model.h"
#include "tesscpp/schema.h"

namespace tesscpp::autodiff::internal {

// Dr.Jit's CPU kernels load whole vectors (16 doubles with AVX-512) and
// compile the alignment of mapped memory into the kernel: memory mapped at
// one alignment this call and another the next compiles the kernel again
// (40 ms at 2e3 cells against 0.4 ms for the call). Host memory is mapped
// only when aligned for the widest vector, so every call sees one alignment.
inline constexpr uintptr_t kMappedAlignment = 128;

// A tensor's elements as an array of `Float`'s backend, float32 widened in
// the kernels that read it. Memory of that backend's kind is mapped as it is
// where it can be (no copy; every kernel that reads it finishes before the
// endpoint returns).
template <typename Float>
Result<Float> ToArray(const Tensor& tensor) {
  const auto n = static_cast<size_t>(tensor.num_elements());
  const bool on_device = tensor.device().type == DeviceType::kCUDA;
  if (!tensor.device().host_accessible() && !on_device) {
    return Status::Unimplemented("autodiff: array-form components take host or CUDA arrays, not ",
                                 tensor.device().ToString());
  }
  if (on_device && !kOnCuda<Float>) {
    return Status::Internal("autodiff: a CUDA array reached the CPU backend");
  }
  const bool aligned = reinterpret_cast<uintptr_t>(tensor.data()) % kMappedAlignment == 0;
  // Mapped where the memory is the backend's own, else one copy into
  // Dr.Jit's memory (from the host to the device for the CUDA backend).
  const bool map = on_device || (!kOnCuda<Float> && aligned);
  if (tensor.dtype() == Dtype::kFloat64) {
    return map ? Float::map_(tensor.data(), n, false) : Float::load_(tensor.data(), n);
  }
  if (tensor.dtype() == Dtype::kFloat32) {
    using Float32 = drjit::float32_array_t<Float>;
    return Float(map ? Float32::map_(tensor.data(), n, false) : Float32::load_(tensor.data(), n));
  }
  return Status::InvalidArgument("autodiff: differentiable arrays must be float32 or float64, not ",
                                 DtypeName(tensor.dtype()));
}

// The differentiable inputs' tensors in `model`, by name (optional fields
// left out are absent).
inline std::vector<std::pair<std::string, const Tensor*>> FieldTensors(
    const Value& model, const std::map<std::string, Dtype>& fields) {
  std::vector<std::pair<std::string, const Tensor*>> tensors;
  for (const auto& [name, dtype] : fields) {
    const Value* value = model.as_dict().find(name);
    if (value != nullptr && value->is_tensor()) tensors.emplace_back(name, &value->as_tensor());
  }
  return tensors;
}

template <typename Float>
typename ArrayContext<Float>::Array InputArray(const Tensor& tensor, Float values) {
  return {{tensor.shape().dims().begin(), tensor.shape().dims().end()}, std::move(values)};
}

// The differentiable inputs of `model` as arrays (optional fields left out
// are absent).
template <typename Float>
Result<Arrays<Float>> ReadArrays(const Value& model, const std::map<std::string, Dtype>& fields) {
  Arrays<Float> inputs;
  for (const auto& [name, tensor] : FieldTensors(model, fields)) {
    TESS_ASSIGN_OR_RETURN(Float values, ToArray<Float>(*tensor));
    inputs.emplace(name, InputArray(*tensor, std::move(values)));
  }
  return inputs;
}

// Host arrays of at most this many bytes among a CUDA call's arrays go to the
// device together (CallReader); a larger one goes alone, its bytes dominate.
inline constexpr int64_t kUploadedTogetherBytes = 64 * 1024;

// A derived call's arrays (its differentiable inputs, then its tangents or
// cotangents) read as ToArray does, except that on the CUDA backend the
// small host arrays among them go to the device in one copy: one Dr.Jit
// array, a slice of which each of them maps. Each copied on its own took a
// pinned staging buffer and a copy of its own: two of the five copies and
// kernels of a replayed Burgers VJP (`nu` and the energy's cotangent). The
// reader holds that memory, so it must outlive the arrays it gives.
template <typename Float>
class CallReader {
 public:
  struct Read {
    Arrays<Float> inputs;
    std::map<std::string, Float> vectors;
  };

  Result<Read> operator()(const Value& model, const std::map<std::string, Dtype>& fields,
                          const TensorMap& vectors = {}) {
    std::vector<const Tensor*> tensors;
    const auto inputs = FieldTensors(model, fields);
    for (const auto& [name, tensor] : inputs) tensors.push_back(tensor);
    for (const auto& [name, tensor] : vectors) tensors.push_back(&tensor);
    TESS_ASSIGN_OR_RETURN(std::vector<Float> arrays, ReadTensors(tensors));
    Read read;
    size_t i = 0;
    for (const auto& [name, tensor] : inputs) read.inputs.emplace(name, InputArray(*tensor, arrays[i++]));
    for (const auto& [name, tensor] : vectors) read.vectors.emplace(name, arrays[i++]);
    return read;
  }

 private:
  static bool UploadedTogether(const Tensor& tensor) {
    return kOnCuda<Float> && tensor.device().host_accessible() && tensor.nbytes() > 0 &&
           tensor.nbytes() <= kUploadedTogetherBytes &&
           (tensor.dtype() == Dtype::kFloat64 || tensor.dtype() == Dtype::kFloat32);
  }

  Result<std::vector<Float>> ReadTensors(const std::vector<const Tensor*>& tensors) {
    // Each tensor's offset in the upload (each slice aligned for any element
    // type), or -1 for one read alone.
    std::vector<int64_t> offsets(tensors.size(), -1);
    int64_t bytes = 0;
    size_t together = 0;
    for (size_t i = 0; i < tensors.size(); ++i) {
      if (!UploadedTogether(*tensors[i])) continue;
      offsets[i] = bytes;
      bytes += (tensors[i]->nbytes() + 15) / 16 * 16;
      ++together;
    }
    uint8_t* base = nullptr;
    if (together < 2) {
      offsets.assign(tensors.size(), -1);  // one alone gains nothing
    } else {
      // Dr.Jit copies the host bytes into pinned memory before load_ returns.
      std::vector<uint8_t> host(static_cast<size_t>(bytes), 0);
      for (size_t i = 0; i < tensors.size(); ++i) {
        if (offsets[i] >= 0)
          std::memcpy(host.data() + offsets[i], tensors[i]->data(),
                      static_cast<size_t>(tensors[i]->nbytes()));
      }
      device_ = Bytes::load_(host.data(), host.size());
      base = static_cast<uint8_t*>(device_.data());
    }
    std::vector<Float> arrays(tensors.size());
    for (size_t i = 0; i < tensors.size(); ++i) {
      const Tensor& tensor = *tensors[i];
      if (offsets[i] < 0) {
        TESS_ASSIGN_OR_RETURN(arrays[i], ToArray<Float>(tensor));
        continue;
      }
      void* slice = base + offsets[i];
      const auto n = static_cast<size_t>(tensor.num_elements());
      arrays[i] = tensor.dtype() == Dtype::kFloat64
                      ? Float::map_(slice, n, false)
                      : Float(drjit::float32_array_t<Float>::map_(slice, n, false));
    }
    return arrays;
  }

  using Bytes = drjit::uint8_array_t<drjit::detached_t<Float>>;
  Bytes device_;
};

// `values` with width `count`: a width-1 array (a constant, or a gradient
// that never arrived) broadcast.
template <typename Float>
Float Widened(Float values, int64_t count) {
  if (static_cast<int64_t>(drjit::width(values)) == count) return values;
  return values + drjit::zeros<Float>(count);
}

// An uninitialised tensor of `dtype` and `dims` in the backend's memory (a
// CUDA tensor on Dr.Jit's current device for the CUDA backend): memory that
// cuda_ipc can name by handle, not Dr.Jit's own (it allocates from a
// stream-ordered pool, which legacy IPC cannot). On the host, handing the
// tensor Dr.Jit's own buffer gave wrong gradients under concurrent calls, so
// that is not done either; host memory is kMappedAlignment-aligned, so that
// Destinations can map it.
template <typename Float>
Result<Tensor> NewTensor(std::vector<int64_t> dims, Dtype dtype) {
  TESS_ASSIGN_OR_RETURN(Shape shape, Shape::Make(std::move(dims)));
  if constexpr (kOnCuda<Float>) {
    return cuda::AllocateDevice(dtype, std::move(shape), jit_cuda_device_raw());
  } else {
    // From the buffer pool (warm pages for large tensors), cut at an aligned
    // offset: the pool's own alignment leaves at most the difference to skip.
    static_assert(kMappedAlignment % Buffer::kAlignment == 0);
    constexpr auto kAlignment = static_cast<int64_t>(kMappedAlignment);
    const int64_t bytes = shape.num_elements() * ItemSize(dtype);
    TESS_ASSIGN_OR_RETURN(Shape block_shape, Shape::Make({bytes + kAlignment - Buffer::kAlignment}));
    TESS_ASSIGN_OR_RETURN(Tensor block, Tensor::Allocate(Dtype::kUInt8, std::move(block_shape)));
    const auto misalignment =
        static_cast<int64_t>(reinterpret_cast<uintptr_t>(block.data()) % kMappedAlignment);
    const int64_t offset = (kAlignment - misalignment) % kAlignment;
    return Tensor::Make(dtype, std::move(shape), block.buffer().Slice(offset, bytes));
  }
}

// `values` (as many elements as `tensor`, see Widened) copied into `tensor`
// (made by NewTensor), converted to its dtype.
template <typename Float>
void CopyInto(const Float& values, Tensor& tensor) {
  if (tensor.num_elements() == 0) return;
  auto copy = [&](const auto& array) {
    drjit::eval(array);
    if (static_cast<const void*>(array.data()) == tensor.data()) return;  // written in place (Destinations)
    if constexpr (kOnCuda<Float>) {
      // Ordered on Dr.Jit's stream, which OnBackend synchronises before the
      // call returns (Dr.Jit frees `array` in stream order after the copy).
      jit_memcpy_async(drjit::backend_v<Float>, tensor.data(), array.data(),
                       static_cast<size_t>(tensor.nbytes()));
    } else {
      // Synchronous: the bytes are in place when it returns.
      jit_memcpy(drjit::backend_v<Float>, tensor.data(), array.data(), static_cast<size_t>(tensor.nbytes()));
    }
  };
  if (tensor.dtype() == Dtype::kFloat64) {
    copy(values);
  } else {
    copy(drjit::float32_array_t<Float>(values));
  }
}

// `values` (as wide as `dims`, see Widened) as a new tensor of `dtype` and
// `dims` (NewTensor).
template <typename Float>
Result<Tensor> ToTensor(const Float& values, std::vector<int64_t> dims, Dtype dtype) {
  TESS_ASSIGN_OR_RETURN(Tensor tensor, NewTensor<Float>(std::move(dims), dtype));
  CopyInto(values, tensor);
  return tensor;
}

}  // namespace tesscpp::autodiff::internal
