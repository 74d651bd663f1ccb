// noop: returns its one array unchanged, for measuring the runtime itself.
#include "tesscpp/component.h"

using namespace tesscpp;  // NOLINT(google-build-using-namespace): an example reads better without prefixes

namespace {

Component MakeNoop() {
  Component c("noop", "0.1.0", "Returns its input array unchanged.\n");
  auto x_in = c.inputs().Add("x", AnyArray{}, {.doc = "Any array."});
  auto x_out = c.outputs().Add("x", AnyArray{}, {.doc = "The same array."});
  c.Apply(
      [=](const ModelView& in, Record& out) {
        out.Set(x_out, Value(in[x_in]));  // shares the bytes: no copy
        return Status::OK();
      },
      "Returns the input.");
  // It never reads the bytes, so CUDA arrays pass through on the device.
  c.AcceptDeviceArrays();
  return c;
}

}  // namespace

TESSCPP_COMPONENT(MakeNoop)
