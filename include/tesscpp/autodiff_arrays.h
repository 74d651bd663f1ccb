// autodiff_arrays.h: a component's derivative endpoints derived from one apply
// written over whole arrays with Dr.Jit (docs/autodiff.md, "Array form").
//
//   auto burgers = [=](auto& ctx) -> tesscpp::Status {
//     using Float = typename std::decay_t<decltype(ctx)>::Float;
//     const Float& u = ctx.Input("u");                 // flat, row-major
//     const Float h = ctx.Param(ctx.inputs()[dt]);      // a kernel parameter
//     ...
//     return ctx.Output("u_next", next, ctx.InputShape("u"));
//   };
//   tesscpp::autodiff::DeriveArrays(component, burgers);  // after declaring the fields
//
// The function is called with an ArrayContext over Dr.Jit's differentiable
// arrays of doubles, `drjit::DiffArray<JitBackend::LLVM, double>`: Dr.Jit
// records the operations, fuses them into kernels compiled by LLVM for this
// CPU's vector width, and keeps the compiled kernels (in memory and in
// ~/.drjit), so a later call with the same operations compiles nothing.
// DeriveArrays registers apply (the function as it is), abstract_eval (on
// zeros of the given shapes), jacobian_vector_product (Dr.Jit's forward mode),
// vector_jacobian_product (its reverse mode) and jacobian (one recording,
// swept once per input element or per output element, whichever is fewer).
// Only the top-level fields declared differentiable are arrays; every other
// input is read through ctx.inputs().
//
// Numbers written into the function (`2.0 * u`) become literals of the
// compiled kernel: right for true constants. A value that changes from call to
// call (a time step from the inputs, a size) must go through ctx.Param(),
// which makes it an opaque kernel parameter; written as a literal it would
// compile a new kernel for every new value.
//
// Optional: include this header only in components that use it, and link the
// `tesscpp::autodiff_arrays` CMake target (Dr.Jit's C++ libraries from its
// PyPI wheel; at run time Dr.Jit loads an LLVM shared library, Debian's
// libllvm15).
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

#include "tesscpp/autodiff_fields.h"
#include "tesscpp/autodiff_permute.h"
#include "tesscpp/autodiff_replay.h"
#include "tesscpp/buffer.h"
#include "tesscpp/component.h"
#include "tesscpp/cuda.h"
#include "tesscpp/model.h"
#include "tesscpp/schema.h"

namespace tesscpp::autodiff {

/// \brief What the array function sees: the differentiable inputs as Dr.Jit
/// arrays (flat, row-major; a scalar has width 1), the whole validated input
/// model (inputs()), and the outputs it sets.
template <typename FloatT>
class ArrayContext : public internal::ContextBase<FloatT> {
 public:
  using Base = internal::ContextBase<FloatT>;
  using typename Base::Array;
  using Float = FloatT;
  using UInt32 = drjit::uint32_array_t<Float>;
  using Mask = drjit::mask_t<Float>;

  /// \brief A differentiable input. Throws (the runtime answers 500 naming
  /// it) for a name that is not a differentiable top-level input: that is a
  /// mistake in the component.
  const Float& Input(const std::string& name) const { return this->Find(name).values; }
  /// \brief `value` as an opaque kernel parameter of width 1: a new value
  /// next call reuses the compiled kernel. In a recorded call it is kept in
  /// the recording's memory (internal::ParamSlots): a replay sets nothing.
  Float Param(double value) const { return Parameter<Float>(value); }
  /// \brief An index parameter (a size, a count), likewise.
  UInt32 Index(uint32_t value) const { return Parameter<UInt32>(value); }

  /// \brief Sets the differentiable output `name` to `values` with shape
  /// `dims` (row-major; width 1 is broadcast to the shape).
  /// kInvalidArgument for a name that is not a differentiable top-level
  /// output, one given twice, dims that are no shape, or a width that does
  /// not fit the shape.
  Status Output(const std::string& name, Float values, std::vector<int64_t> dims) {
    TESS_ASSIGN_OR_RETURN(Array * slot, this->NewOutput(name, std::move(dims)));
    const int64_t count = internal::CountOf(slot->dims);
    const auto width = static_cast<int64_t>(drjit::width(values));
    if (width != count && width != 1) {
      return Status::InvalidArgument("autodiff: output '", name, "' has ", width, " elements, its shape ",
                                     count);
    }
    slot->values = std::move(values);
    return Status::OK();
  }

  /// \brief Sets the scalar differentiable output `name` to the sum of
  /// `values` (any width). Prefer it to `Output(name, drjit::sum(values),
  /// {})`: Dr.Jit computes a sum where it is written, so the derivative
  /// endpoints, which never return an output's own value, would pay a kernel
  /// and a reduction for it. Here apply sums once the outputs are evaluated
  /// (`values` in the same kernel as the others of its width), a JVP sums
  /// only the tangent, and a VJP spreads the cotangent over `values`.
  /// kInvalidArgument as Output.
  Status OutputSum(const std::string& name, Float values) {
    TESS_ASSIGN_OR_RETURN(Array * slot, this->NewOutput(name, {}));
    slot->values = std::move(values);
    summed_.insert(name);
    return Status::OK();
  }

  /// \brief The outputs set by OutputSum: their arrays are what is summed.
  const std::set<std::string>& summed() const { return summed_; }

  /// \brief For DeriveArrays.
  ArrayContext(const ModelView& model, std::map<std::string, Array> inputs,
               std::map<std::string, Dtype> outputs)
      : Base(model, std::move(inputs), std::move(outputs)) {}

 private:
  template <typename Array, typename T>
  static Array Parameter(T value) {
    if (auto* slots = internal::ParamSlots<Float>::Current()) {
      if (auto slot = slots->Take(value)) return Array(*std::move(slot));
    }
    return drjit::opaque<Array>(value);
  }

  std::set<std::string> summed_;
};

namespace internal {

using CpuFloat = drjit::DiffArray<JitBackend::LLVM, double>;
using CudaFloat = drjit::DiffArray<JitBackend::CUDA, double>;
template <typename Float>
using Arrays = std::map<std::string, typename ArrayContext<Float>::Array>;
template <typename Float>
constexpr bool kOnCuda = drjit::backend_v<Float> == JitBackend::CUDA;

// Dr.Jit starts once per process, on first use, with its CPU backend and,
// where a CUDA driver and device are found, its CUDA backend. It logs each
// kernel it compiles to stderr by default; warnings and errors are enough,
// unless TESSCPP_DRJIT_LOG=info (or debug) asks for its log, which names
// every kernel launched and every compilation (a cache miss).
inline void StartDrJit() {
  static std::once_flag started;
  std::call_once(started, [] {
    const char* log = std::getenv("TESSCPP_DRJIT_LOG");
    const std::string_view level = log != nullptr ? log : "";
    jit_set_log_level_stderr(level == "info"    ? LogLevel::Info
                             : level == "debug" ? LogLevel::Debug
                                                : LogLevel::Warn);
    // Reverse mode turns every gather into a scatter-add. Into arrays of up
    // to 2^20 elements Dr.Jit's CPU backend scatters by default into one copy
    // per thread ("expand" mode), with the array's size compiled into the
    // kernel: every new size compiled the VJP's kernel again (33 ms at 2e3
    // to 1e5 cells, against 0.5-5 ms for the call). Without it the scatters
    // are atomic, combined within each vector first, and one kernel serves
    // every size.
    jit_llvm_set_expand_threshold(1);
    jit_init((1u << static_cast<uint32_t>(JitBackend::LLVM)) |
             (1u << static_cast<uint32_t>(JitBackend::CUDA)));
    // Dr.Jit's worker threads must stop before its static objects go at
    // exit, or they pop from a freed queue (a crash at exit). So Dr.Jit is
    // shut down at exit, once whichever component registered it first. The
    // handler belongs to this library, which glibc would run at its dlclose
    // while another component may still compute: the library stays loaded
    // to the end instead (RTLD_NODELETE).
    Dl_info self;
    if (dladdr(reinterpret_cast<void*>(&StartDrJit), &self) != 0 && self.dli_fname != nullptr) {
      dlopen(self.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
    }
    std::atexit([] {
      if (jit_has_backend(JitBackend::LLVM) != 0 || jit_has_backend(JitBackend::CUDA) != 0) jit_shutdown(0);
    });
  });
}

// The CUDA device of the first device tensor among `tensors`, if any: the
// call then runs on Dr.Jit's CUDA backend on that device.
inline std::optional<int> CudaDeviceOf(std::initializer_list<const TensorMap*> maps, const Value& model,
                                       const std::map<std::string, Dtype>& fields) {
  for (const auto& [name, dtype] : fields) {
    const Value* value = model.as_dict().find(name);
    if (value != nullptr && value->is_tensor() && value->as_tensor().device().type == DeviceType::kCUDA)
      return value->as_tensor().device().id;
  }
  for (const TensorMap* map : maps) {
    for (const auto& [name, tensor] : *map) {
      if (tensor.device().type == DeviceType::kCUDA) return tensor.device().id;
    }
  }
  return std::nullopt;
}

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

// The function run once on `inputs` (the differentiable arrays): its context
// (inputs, outputs) for the caller to differentiate. `prepare` runs on the
// inputs before the function sees them (enabling gradients, setting tangents).
template <typename Float, typename Fn, typename Prepare>
Result<ArrayContext<Float>> RunOn(const Fn& fn, const ModelView& in, Arrays<Float> inputs,
                                  const std::map<std::string, Dtype>& output_fields, Prepare prepare) {
  // The function's reads through ctx.inputs() are noted: a differentiable
  // input read there is what a replay key does not cover (UncoveredReads).
  FieldReads reads;
  ArrayContext<Float> ctx(ModelView(in.value(), &reads), std::move(inputs), output_fields);
  TESS_RETURN_IF_ERROR(prepare(ctx.inputs_by_name()));
  const Status done = fn(ctx);
  int index = 0;
  for (const auto& [name, field] : in.value().as_dict()) {
    if (reads.Read(index++) && ctx.inputs_by_name().contains(name)) UncoveredReads::Note();
  }
  TESS_RETURN_IF_ERROR(done);
  return ctx;
}

// RunOn the model's own differentiable arrays.
template <typename Float, typename Fn, typename Prepare>
Result<ArrayContext<Float>> Run(const Fn& fn, const ModelView& in,
                                const std::map<std::string, Dtype>& input_fields,
                                const std::map<std::string, Dtype>& output_fields, Prepare prepare) {
  TESS_ASSIGN_OR_RETURN(auto inputs, ReadArrays<Float>(in.value(), input_fields));
  return RunOn<Float>(fn, in, std::move(inputs), output_fields, prepare);
}

// The arrays a recorded call reads: the differentiable inputs, then the
// tangents or cotangents.
template <typename Float>
std::vector<Float*> RecordedInputs(Arrays<Float>& inputs, std::map<std::string, Float>* vectors = nullptr) {
  std::vector<Float*> all;
  for (auto& [name, array] : inputs) all.push_back(&array.values);
  if (vectors != nullptr) {
    for (auto& [name, array] : *vectors) all.push_back(&array);
  }
  return all;
}

// Named arrays as tensors of their fields' dtypes, into `into`: into the
// tensor of `ahead` with the array's name where there is one (made by
// Destinations for the same field, so of its shape; no copy where the array
// is that tensor's memory), into a new one otherwise.
template <typename Float>
Status StoreTensors(const NamedArrays<Float>& arrays, const std::map<std::string, Dtype>& fields,
                    TensorMap& into, TensorMap ahead = {}) {
  for (const auto& [name, array] : arrays) {
    auto given = ahead.find(name);
    if (given != ahead.end()) {
      CopyInto(array.values, given->second);
      into.insert_or_assign(name, std::move(given->second));
      continue;
    }
    TESS_ASSIGN_OR_RETURN(Tensor t, ToTensor(array.values, array.dims, fields.at(name)));
    into.insert_or_assign(name, std::move(t));
  }
  return Status::OK();
}

// The tensors a VJP's products go into (the requested inputs' shapes and
// dtypes), made before its kernels are queued, float64 ones written by the
// products' last kernel itself:
// - Each is mapped as an array the recording takes as an input; WriteInto
//   scatters the product into it and makes that array the product, so the
//   recording outputs it and a replay writes that call's tensor in place.
//   Evaluated into Dr.Jit's memory instead, a product was copied into the
//   tensor: 7.2 µs of GPU time and a launch at 1e6 cells on the H100, and
//   a synchronous memcpy on the CPU. The array must be an output: scattered
//   into an input that is not, a replay wrote elsewhere (the heap, on the
//   CPU).
// - Made first: on the GPU the device pool synchronises the device when it
//   hands out memory again (its last user's work may still be queued), which
//   then waits for an idle GPU, not for this call's kernels.
// float32 products (converted) and empty ones are copied as before.
template <typename Float>
class Destinations {
 public:
  static Result<Destinations> Make(const Arrays<Float>& inputs, const PathSet& names,
                                   const std::map<std::string, Dtype>& fields) {
    Destinations made;
    for (const std::string& name : names) {
      auto found = inputs.find(name);
      if (found == inputs.end()) continue;
      TESS_ASSIGN_OR_RETURN(Tensor tensor, NewTensor<Float>(found->second.dims, fields.at(name)));
      if (tensor.dtype() == Dtype::kFloat64 && tensor.num_elements() > 0) {
        made.mapped_.emplace(name,
                             Float::map_(tensor.data(), static_cast<size_t>(tensor.num_elements()), false));
      }
      made.tensors_.insert_or_assign(name, std::move(tensor));
    }
    return made;
  }

  /// \brief Adds the mapped tensors to a recording's inputs.
  void AppendTo(std::vector<Float*>& recorded) {
    for (auto& [name, array] : mapped_) recorded.push_back(&array);
  }

  /// \brief Writes each product that has a mapped tensor into it (with the
  /// next evaluation), the written array taking the product's place.
  void WriteInto(NamedArrays<Float>& products) {
    for (auto& [name, product] : products) {
      auto found = mapped_.find(name);
      if (found == mapped_.end()) continue;
      const auto n = static_cast<uint32_t>(drjit::width(found->second));
      drjit::scatter(found->second, product.values, drjit::arange<drjit::uint32_array_t<Float>>(n));
      product.values = found->second;
    }
  }

  /// \brief The tensors, for StoreTensors.
  TensorMap Tensors() && { return std::move(tensors_); }

 private:
  TensorMap tensors_;
  std::map<std::string, Float> mapped_;
};

struct NoPreparation {
  template <typename A>
  Status operator()(A&) const {
    return Status::OK();
  }
};

// Runs `body.template operator()<Float>()` on the backend the call's arrays
// live on: the CUDA backend (on their device) when any of them is a CUDA
// array, the CPU backend otherwise.
template <typename Body>
Status OnBackend(std::optional<int> cuda_device, Body body) {
  StartDrJit();
  if (!cuda_device) {
    Status status = body.template operator()<CpuFloat>();
    jit_sync_thread();  // kernels that write answered tensors in place have run
    return status;
  }
  if (jit_has_backend(JitBackend::CUDA) == 0) {
    return Status::Unavailable("autodiff: CUDA arrays arrived, but Dr.Jit found no usable CUDA device");
  }
  jit_cuda_set_device(*cuda_device);
  Status status = body.template operator()<CudaFloat>();
  jit_sync_thread();  // nothing of this call still runs on Dr.Jit's stream
  return status;
}

// `values` as the array of `dims` it stands for: widened (see Widened), or
// left as it is for an output set by OutputSum (`summed`), which Summed sums.
template <typename Float>
Float Shaped(Float values, const std::vector<int64_t>& dims, bool summed) {
  return summed ? values : Widened(std::move(values), CountOf(dims));
}

// `arrays` with those named in `summed` (outputs set by OutputSum) reduced to
// their sums, after evaluating all of them together: arrays of one width in
// one kernel, rather than each sum's operand in a kernel of its own.
template <typename Float>
NamedArrays<Float> Summed(NamedArrays<Float> arrays, const std::set<std::string>& summed) {
  if (summed.empty()) return arrays;
  for (auto& [name, array] : arrays) drjit::schedule(array.values);
  drjit::eval();
  for (auto& [name, array] : arrays) {
    if (summed.contains(name)) array.values = drjit::sum(array.values);
  }
  return arrays;
}

// The gradients of `arrays` named in `names` (names not there are skipped),
// detached and shaped: the inputs' after a backward pass (zeros where an
// input does not reach the outputs), the outputs' after a forward one
// (`summed`: those set by OutputSum).
template <typename Float>
NamedArrays<Float> GradientArrays(Arrays<Float>& arrays, const PathSet& names,
                                  const std::set<std::string>& summed = {}) {
  NamedArrays<Float> gradients;
  for (const std::string& name : names) {
    auto found = arrays.find(name);
    if (found == arrays.end()) continue;
    const Field<Float>& array = found->second;
    gradients.emplace_back(
        name, Field<Float>{array.dims, Shaped(drjit::grad(array.values), array.dims, summed.contains(name))});
  }
  return Summed(std::move(gradients), summed);
}

template <typename Fn>
void DeriveArrayApply(Component& c, const Fn& fn, const std::map<std::string, Dtype>& input_fields,
                      const std::map<std::string, Dtype>& output_fields, const std::string& apply_doc) {
  if (c.apply()) return;
  c.Apply(
      [=, replays = std::make_shared<Replays>()](const ModelView& in, Record& out) -> Status {
        return OnBackend(CudaDeviceOf({}, in.value(), input_fields), [&]<typename Float>() -> Status {
          CallReader<Float> reader;
          TESS_ASSIGN_OR_RETURN(auto read, reader(in.value(), input_fields));
          auto& inputs = read.inputs;
          auto body = [&]() -> Result<NamedArrays<Float>> {
            TESS_ASSIGN_OR_RETURN(auto ctx, RunOn<Float>(fn, in, inputs, output_fields, NoPreparation{}));
            NamedArrays<Float> outputs;
            for (auto& [name, array] : ctx.outputs()) {
              outputs.emplace_back(name,
                                   Field<Float>{array.dims, Shaped(drjit::detach(array.values), array.dims,
                                                                   ctx.summed().contains(name))});
            }
            return Summed(std::move(outputs), ctx.summed());
          };
          TESS_ASSIGN_OR_RETURN(auto outputs, Replayed<Float>(*replays, ModelKey(in.value(), input_fields),
                                                              RecordedInputs<Float>(inputs), body));
          for (const auto& [name, array] : outputs) {
            TESS_ASSIGN_OR_RETURN(Tensor t, ToTensor(array.values, array.dims, output_fields.at(name)));
            out.Set(FieldKey<ArrayOf<double>>{-1, name}, Value(std::move(t)));
          }
          return Status::OK();
        });
      },
      apply_doc);
}

template <typename Fn>
void DeriveArrayAbstractEval(Component& c, const Fn& fn, const std::map<std::string, Dtype>& input_fields,
                             const std::map<std::string, Dtype>& output_fields) {
  // Only the outputs' dims are read: their arrays are never evaluated, so
  // no kernel runs.
  DeriveAbstractEvalBy(
      c, output_fields, [=](const ModelView& model) -> Result<std::map<std::string, std::vector<int64_t>>> {
        StartDrJit();
        TESS_ASSIGN_OR_RETURN(auto ctx,
                              Run<CpuFloat>(fn, model, input_fields, output_fields, NoPreparation{}));
        std::map<std::string, std::vector<int64_t>> dims;
        for (auto& [name, array] : ctx.outputs()) dims.emplace(name, array.dims);
        return dims;
      });
}

// One forward-mode pass: the function run with the inputs in `names`
// carrying `direction(name)` as their gradients, then one forward traversal.
// Nothing is cleared on the way: an output that feeds another output (u_next
// into the energy) is an interior vertex of the traversal, whose gradient
// Dr.Jit's default flags would clear before it is read. The recording goes
// with the returned context.
template <typename Float, typename Fn, typename Direction>
Result<ArrayContext<Float>> ForwardPass(const Fn& fn, const ModelView& in, Arrays<Float> inputs,
                                        const std::map<std::string, Dtype>& output_fields,
                                        const PathSet& names, Direction direction) {
  auto seed = [&](Arrays<Float>& seeded) -> Status {
    for (const std::string& name : names) {
      auto input = seeded.find(name);
      if (input == seeded.end()) continue;
      TESS_ASSIGN_OR_RETURN(std::optional<Float> along, direction(name, input->second));
      if (!along) continue;
      drjit::enable_grad(input->second.values);
      drjit::set_grad(input->second.values, *along);
    }
    return Status::OK();
  };
  TESS_ASSIGN_OR_RETURN(auto ctx, RunOn<Float>(fn, in, std::move(inputs), output_fields, seed));
  for (const std::string& name : names) {
    auto input = ctx.inputs_by_name().find(name);
    if (input != ctx.inputs_by_name().end()) drjit::enqueue(drjit::ADMode::Forward, input->second.values);
  }
  drjit::traverse(drjit::ADMode::Forward, static_cast<uint32_t>(drjit::ADFlag::ClearNone));
  return ctx;
}

// jacobian_vector_product: the requested inputs carry their tangents, one
// forward pass.
template <typename Fn>
void DeriveArrayJvp(Component& c, const Fn& fn, const std::map<std::string, Dtype>& input_fields,
                    const std::map<std::string, Dtype>& output_fields) {
  if (c.jacobian_vector_product()) return;
  c.JacobianVectorProduct([=, replays = std::make_shared<Replays>()](
                              const ModelView& in, const PathSet& jvp_inputs, const PathSet& jvp_outputs,
                              const TensorMap& tangent, TensorMap& jvp) -> Status {
    return OnBackend(CudaDeviceOf({&tangent}, in.value(), input_fields), [&]<typename Float>() -> Status {
      CallReader<Float> reader;
      TESS_ASSIGN_OR_RETURN(auto read, reader(in.value(), input_fields, tangent));
      auto& [inputs, tangents] = read;
      auto along = [&](const std::string& name, const auto&) -> Result<std::optional<Float>> {
        auto t = tangents.find(name);
        return t == tangents.end() ? std::optional<Float>() : std::optional<Float>(t->second);
      };
      auto body = [&]() -> Result<NamedArrays<Float>> {
        TESS_ASSIGN_OR_RETURN(auto ctx, ForwardPass<Float>(fn, in, inputs, output_fields, jvp_inputs, along));
        return GradientArrays<Float>(ctx.outputs(), jvp_outputs, ctx.summed());
      };
      TESS_ASSIGN_OR_RETURN(
          auto products,
          Replayed<Float>(*replays, DerivativeKey(in.value(), input_fields, jvp_inputs, jvp_outputs, tangent),
                          RecordedInputs<Float>(inputs, &tangents), body));
      return StoreTensors(products, output_fields, jvp);
    });
  });
}

// Enables gradients on the requested inputs.
struct Watch {
  const PathSet& names;
  template <typename A>
  Status operator()(A& inputs) const {
    for (const std::string& name : names) {
      auto input = inputs.find(name);
      if (input != inputs.end()) drjit::enable_grad(input->second.values);
    }
    return Status::OK();
  }
};

// vector_jacobian_product: the requested outputs carry the cotangents as
// gradients, one reverse traversal.
template <typename Fn>
void DeriveArrayVjp(Component& c, const Fn& fn, const std::map<std::string, Dtype>& input_fields,
                    const std::map<std::string, Dtype>& output_fields) {
  if (c.vector_jacobian_product()) return;
  c.VectorJacobianProduct([=, replays = std::make_shared<Replays>()](
                              const ModelView& in, const PathSet& vjp_inputs, const PathSet& vjp_outputs,
                              const TensorMap& cotangent, TensorMap& vjp) -> Status {
    return OnBackend(CudaDeviceOf({&cotangent}, in.value(), input_fields), [&]<typename Float>() -> Status {
      CallReader<Float> reader;
      TESS_ASSIGN_OR_RETURN(auto read, reader(in.value(), input_fields, cotangent));
      auto& [inputs, weights] = read;
      TESS_ASSIGN_OR_RETURN(auto destinations, Destinations<Float>::Make(inputs, vjp_inputs, input_fields));
      auto body = [&]() -> Result<NamedArrays<Float>> {
        TESS_ASSIGN_OR_RETURN(auto ctx, RunOn<Float>(fn, in, inputs, output_fields, Watch{vjp_inputs}));
        for (const std::string& name : vjp_outputs) {
          auto found = ctx.outputs().find(name);
          auto w = weights.find(name);
          if (found == ctx.outputs().end() || w == weights.end()) continue;
          // Accumulated: two outputs may be the same array.
          drjit::accum_grad(found->second.values, w->second);
          drjit::enqueue(drjit::ADMode::Backward, found->second.values);
        }
        drjit::traverse(drjit::ADMode::Backward);
        NamedArrays<Float> products = GradientArrays<Float>(ctx.inputs_by_name(), vjp_inputs);
        destinations.WriteInto(products);
        return products;
      };
      std::vector<Float*> recorded = RecordedInputs<Float>(inputs, &weights);
      destinations.AppendTo(recorded);
      TESS_ASSIGN_OR_RETURN(auto products, Replayed<Float>(*replays,
                                                           DerivativeKey(in.value(), input_fields, vjp_inputs,
                                                                         vjp_outputs, cotangent),
                                                           recorded, body));
      return StoreTensors(products, input_fields, vjp, std::move(destinations).Tensors());
    });
  });
}

// The jacobian, cut into blocks: output o's rows by input i's columns
// (row-major), for every requested pair.
struct Side {
  std::string name;
  std::vector<int64_t> dims;
  int64_t count = 0;
};
using Blocks = std::vector<std::vector<std::vector<double>>>;

template <typename A>
std::vector<Side> Sides(const A& arrays, const PathSet& names) {
  std::vector<Side> sides;
  for (const std::string& name : names) {
    auto found = arrays.find(name);
    if (found != arrays.end()) sides.push_back({name, found->second.dims, CountOf(found->second.dims)});
  }
  return sides;
}

inline Blocks ZeroBlocks(const std::vector<Side>& ins, const std::vector<Side>& outs) {
  Blocks blocks(outs.size(), std::vector<std::vector<double>>(ins.size()));
  for (size_t o = 0; o < outs.size(); ++o)
    for (size_t i = 0; i < ins.size(); ++i)
      blocks[o][i].assign(static_cast<size_t>(outs[o].count * ins[i].count), 0.0);
  return blocks;
}

// A gradient (width 1 broadcast to `count`; summed for an output set by
// OutputSum) copied to the host.
template <typename Float>
std::vector<double> HostGradient(const Float& values, int64_t count, bool summed = false) {
  Float g = summed ? drjit::sum(drjit::grad(values)) : Widened(drjit::grad(values), count);
  drjit::eval(g);
  std::vector<double> host(static_cast<size_t>(count));
  if (count > 0) jit_memcpy(drjit::backend_v<Float>, host.data(), g.data(), host.size() * sizeof(double));
  return host;
}

// The unit vector e_k over the elements of `sides` in order, as one array
// for the side named `name` (nullopt when k lies in another side).
template <typename Float>
std::optional<Float> UnitOf(const std::vector<Side>& sides, const std::string& name, int64_t k) {
  for (const Side& side : sides) {
    if (side.name == name) {
      if (k < 0 || k >= side.count) return std::nullopt;
      std::vector<double> unit(static_cast<size_t>(side.count), 0.0);
      unit[static_cast<size_t>(k)] = 1.0;
      return Float::load_(unit.data(), unit.size());
    }
    k -= side.count;
  }
  return std::nullopt;
}

// Forward mode, fewer input elements than output elements: one pass per
// input element (the function run each time), a column of every block.
template <typename Float, typename Fn>
Result<Blocks> JacobianByColumns(const Fn& fn, const ModelView& in,
                                 const std::map<std::string, Dtype>& input_fields,
                                 const std::map<std::string, Dtype>& output_fields, const PathSet& jac_inputs,
                                 const std::vector<Side>& ins, const std::vector<Side>& outs) {
  Blocks blocks = ZeroBlocks(ins, outs);
  // Read once (a host array goes to the device once); each pass seeds a copy.
  TESS_ASSIGN_OR_RETURN(const auto inputs, ReadArrays<Float>(in.value(), input_fields));
  int64_t offset = 0;  // of input i's elements among all of them
  for (size_t i = 0; i < ins.size(); offset += ins[i++].count) {
    for (int64_t col = 0; col < ins[i].count; ++col) {
      auto along = [&](const std::string& name, const auto&) -> Result<std::optional<Float>> {
        return UnitOf<Float>(ins, name, offset + col);
      };
      TESS_ASSIGN_OR_RETURN(auto ctx, ForwardPass<Float>(fn, in, inputs, output_fields, jac_inputs, along));
      for (size_t o = 0; o < outs.size(); ++o) {
        const std::vector<double> column = HostGradient(ctx.outputs().at(outs[o].name).values, outs[o].count,
                                                        ctx.summed().contains(outs[o].name));
        for (int64_t row = 0; row < outs[o].count; ++row)
          blocks[o][i][static_cast<size_t>(row * ins[i].count + col)] = column[static_cast<size_t>(row)];
      }
    }
  }
  return blocks;
}

// Reverse mode on `ctx`, a recording with the requested inputs watched: one
// backward traversal per output element (the edges kept, the gradients
// cleared), a row of every block.
template <typename Float>
Blocks JacobianByRows(ArrayContext<Float>& ctx, const std::vector<Side>& ins, const std::vector<Side>& outs) {
  Blocks blocks = ZeroBlocks(ins, outs);
  int64_t k = 0;
  for (size_t o = 0; o < outs.size(); ++o) {
    for (int64_t row = 0; row < outs[o].count; ++row, ++k) {
      // Cleared first, then seeded: two outputs may be the same array (an
      // output and its OutputSum), and seeding one must not undo the other.
      for (const Side& out : outs) drjit::clear_grad(ctx.outputs().at(out.name).values);
      for (const Side& out : outs) {
        Float& values = ctx.outputs().at(out.name).values;
        if (const std::optional<Float> unit = UnitOf<Float>(outs, out.name, k))
          drjit::accum_grad(values, *unit);
        drjit::enqueue(drjit::ADMode::Backward, values);
      }
      drjit::traverse(drjit::ADMode::Backward, static_cast<uint32_t>(drjit::ADFlag::ClearVertices));
      for (size_t i = 0; i < ins.size(); ++i) {
        Float& values = ctx.inputs_by_name().at(ins[i].name).values;
        const std::vector<double> gradient = HostGradient(values, ins[i].count);
        std::copy(gradient.begin(), gradient.end(),
                  blocks[o][i].begin() + static_cast<std::ptrdiff_t>(row * ins[i].count));
        drjit::clear_grad(values);
      }
    }
  }
  return blocks;
}

// jacobian: by columns or by rows, whichever are fewer; its blocks leave in
// host memory (the jacobian is for checks and small problems, not the device
// path).
template <typename Fn>
void DeriveArrayJacobian(Component& c, const Fn& fn, const std::map<std::string, Dtype>& input_fields,
                         const std::map<std::string, Dtype>& output_fields) {
  if (c.jacobian()) return;
  c.Jacobian([=](const ModelView& in, const PathSet& jac_inputs, const PathSet& jac_outputs,
                 JacobianMap& jac) -> Status {
    return OnBackend(CudaDeviceOf({}, in.value(), input_fields), [&]<typename Float>() -> Status {
      // One recording gives the shapes, and the rows where there are fewer
      // rows than columns.
      TESS_ASSIGN_OR_RETURN(auto ctx, Run<Float>(fn, in, input_fields, output_fields, Watch{jac_inputs}));
      const std::vector<Side> ins = Sides(ctx.inputs_by_name(), jac_inputs);
      const std::vector<Side> outs = Sides(ctx.outputs(), jac_outputs);
      int64_t n = 0, m = 0;
      for (const Side& side : ins) n += side.count;
      for (const Side& side : outs) m += side.count;
      Blocks blocks;
      if (n <= m) {
        TESS_ASSIGN_OR_RETURN(
            blocks, JacobianByColumns<Float>(fn, in, input_fields, output_fields, jac_inputs, ins, outs));
      } else {
        blocks = JacobianByRows(ctx, ins, outs);
      }
      for (size_t o = 0; o < outs.size(); ++o) {
        for (size_t i = 0; i < ins.size(); ++i) {
          std::vector<int64_t> dims = outs[o].dims;
          dims.insert(dims.end(), ins[i].dims.begin(), ins[i].dims.end());
          TESS_ASSIGN_OR_RETURN(Tensor t,
                                ToTensor(blocks[o][i], std::move(dims), output_fields.at(outs[o].name)));
          jac[outs[o].name].insert_or_assign(ins[i].name, std::move(t));
        }
      }
      return Status::OK();
    });
  });
}

}  // namespace internal

/// \brief Registers apply, abstract_eval, jacobian, jacobian_vector_product
/// and vector_jacobian_product of `c` computed from `fn`, a callable taking
/// `ArrayContext<Float>&` and returning Status (a generic lambda
/// `[](auto& ctx)` does). Call it after declaring the fields and after
/// registering any endpoint written by hand: those are kept, the others
/// derived.
template <typename Fn>
void DeriveArrays(Component& c, Fn fn, std::string apply_doc = "") {
  const auto input_fields = internal::DifferentiableFields(*c.input_schema());
  const auto output_fields = internal::DifferentiableFields(*c.output_schema());
  internal::DeriveArrayApply(c, fn, input_fields, output_fields, apply_doc);
  internal::DeriveArrayAbstractEval(c, fn, input_fields, output_fields);
  internal::DeriveArrayJvp(c, fn, input_fields, output_fields);
  internal::DeriveArrayVjp(c, fn, input_fields, output_fields);
  internal::DeriveArrayJacobian(c, fn, input_fields, output_fields);
  // CUDA inputs reach the function on Dr.Jit's CUDA backend, never as bytes
  // it reads on the host; the function itself must not read the bytes of a
  // non-differentiable array input (ctx.inputs()), which may then live on
  // the device too.
  c.AcceptDeviceArrays();
}

}  // namespace tesscpp::autodiff
