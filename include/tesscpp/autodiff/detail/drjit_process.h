// drjit_process.h: Dr.Jit in this process (internal to
// tesscpp/autodiff_arrays.h): the backends' array types, starting it once,
// and the CUDA device a call's arrays live on.
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
#include "tesscpp/buffer.h"
#include "tesscpp/component.h"
#include "tesscpp/cuda.h"
#include "tesscpp/model.h"
#include "tesscpp/schema.h"

namespace tesscpp::autodiff::internal {

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

}  // namespace tesscpp::autodiff::internal
