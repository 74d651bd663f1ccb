// devhold: returns, for an array x, a device array of x's dtype and shape that
// it allocated on the first such call and keeps (its bytes are never written).
// Its output is not a copy of its input, so the cuda_ipc benchmark times what
// the transport itself costs; the identity (noop) adds the device copy that
// returning an input as a new array needs.
#include <map>
#include <mutex>
#include <string>

#include "tesscpp/component.h"
#include "tesscpp/cuda.h"

using namespace tesscpp;  // NOLINT(google-build-using-namespace)

namespace {

Component MakeDevhold() {
  Component c("devhold", "0.1.0", "A device array of x's dtype and shape, the same one on every call.\n");
  auto x_in = c.inputs().Add("x", AnyArray{}, {.doc = "Any CUDA array."});
  auto x_out = c.outputs().Add("x", AnyArray{}, {.doc = "The held array of its dtype and shape."});
  struct Held {
    std::mutex mutex;
    std::map<std::string, Tensor> arrays;  // by dtype, shape and device
  };
  auto held = std::make_shared<Held>();
  c.Apply([=](const ModelView& in, Record& out) -> Status {
    const Tensor& x = in[x_in];
    if (x.device().type != DeviceType::kCUDA) return Status::InvalidArgument("x: expected a CUDA array");
    const std::string key = std::string(DtypeName(x.dtype())) + x.shape().ToString() + x.device().ToString();
    std::lock_guard<std::mutex> lock(held->mutex);
    auto it = held->arrays.find(key);
    if (it == held->arrays.end()) {
      TESS_ASSIGN_OR_RETURN(Tensor array, cuda::AllocateDevice(x.dtype(), x.shape(), x.device().id));
      it = held->arrays.emplace(key, std::move(array)).first;
    }
    out.Set(x_out, Value(it->second));
    return Status::OK();
  });
  c.AcceptDeviceArrays();
  return c;
}

}  // namespace

TESSCPP_COMPONENT(MakeDevhold)
