#include "device_array.h"

#include <nanobind/ndarray.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gil_calls.h"
#include "tesscpp/cuda.h"
#include "tesscpp/internal/core/device_values.h"
#include "to_python.h"

namespace tesscpp::bindings {
namespace {

namespace nb = nanobind;

// A DLPack capsule over a CUDA tensor, keeping the C++ buffer alive:
// versioned (DLPack 1.x) when the consumer's max_version allows it, the
// legacy "dltensor" otherwise (nanobind's array-API export does both).
nb::object DlpackCapsule(const Tensor& tensor, const nb::object& max_version) {
  std::vector<size_t> shape(tensor.shape().dims().begin(), tensor.shape().dims().end());
  const DlpackDtype dl = ToDlpack(tensor.dtype());
  auto* keep = new Buffer(tensor.buffer());
  nb::capsule owner(keep, [](void* p) noexcept { delete static_cast<Buffer*>(p); });
  nb::ndarray<nb::array_api> array(tensor.data(), shape.size(), shape.data(), owner, nullptr,
                                   nb::dlpack::dtype{dl.code, dl.bits, dl.lanes}, nb::device::cuda::value,
                                   tensor.device().id);
  nb::object exported = array.cast();
  if (max_version.is_none()) return exported.attr("__dlpack__")();
  return exported.attr("__dlpack__")(nb::arg("max_version") = max_version);
}

nb::tuple ShapeTuple(const Tensor& tensor) {
  return nb::tuple(
      nb::cast(std::vector<int64_t>(tensor.shape().dims().begin(), tensor.shape().dims().end())));
}

// NumPy's typestr of the dtype ("<f4", "|b1"), for the CUDA array interface.
std::string Typestr(Dtype dtype) {
  const DlpackDtype dl = ToDlpack(dtype);
  const char kind = dl.code == 0 ? 'i' : dl.code == 1 ? 'u' : dl.code == 2 ? 'f' : dl.code == 5 ? 'c' : 'b';
  const int itemsize = dl.bits / 8;
  return std::string(itemsize == 1 ? "|" : "<") + kind + std::to_string(itemsize);
}

}  // namespace

void BindDeviceArray(nb::module_& m) {
  nb::class_<DeviceArray>(m, "DeviceArray",
                          "A CUDA array a Tesseract returned, owned by tesscpp. torch.from_dlpack, "
                          "cupy.asarray and jax.dlpack.from_dlpack adopt it without a copy.")
      .def(
          "__dlpack__",
          [](const DeviceArray& a, const nb::object& stream, const nb::object& max_version,
             const nb::object& dl_device, const nb::object& copy) {
            if (!copy.is_none() && nb::cast<bool>(copy)) {
              throw nb::buffer_error("tesscpp.DeviceArray.__dlpack__: copy=True is not supported");
            }
            if (!dl_device.is_none()) {
              auto wanted = nb::cast<std::pair<int, int>>(dl_device);
              if (wanted.first != static_cast<int>(DeviceType::kCUDA) ||
                  wanted.second != a.tensor.device().id) {
                throw nb::buffer_error("tesscpp.DeviceArray.__dlpack__: the array cannot move to dl_device");
              }
            }
            // DLPack's stream values: None and 1 name the legacy default
            // stream, -1 asks for no ordering; others are the consumer's.
            if (a.pending_on_legacy_stream && !stream.is_none()) {
              const auto consumer = nb::cast<int64_t>(stream);
              if (consumer != -1 && consumer != 1) {
                Released([&] {
                  return cuda::OrderStreamAfterLegacy(static_cast<uintptr_t>(consumer), a.tensor.device().id);
                });
              }
            }
            return DlpackCapsule(a.tensor, max_version);
          },
          nb::kw_only(), nb::arg("stream") = nb::none(), nb::arg("max_version") = nb::none(),
          nb::arg("dl_device") = nb::none(), nb::arg("copy") = nb::none())
      .def("__dlpack_device__",
           [](const DeviceArray& a) {
             return std::make_pair(static_cast<int>(DeviceType::kCUDA), a.tensor.device().id);
           })
      .def_prop_ro("__cuda_array_interface__",
                   [](const DeviceArray& a) {
                     nb::dict cai;
                     cai["shape"] = ShapeTuple(a.tensor);
                     cai["typestr"] = Typestr(a.tensor.dtype());
                     const auto pointer =
                         a.tensor.nbytes() == 0 ? 0 : reinterpret_cast<uintptr_t>(a.tensor.data());
                     cai["data"] = nb::make_tuple(pointer, false);
                     cai["strides"] = nb::none();
                     cai["version"] = 3;
                     // Version 3's stream: 1, the legacy default stream, which
                     // a consumer on another stream synchronises with.
                     if (a.pending_on_legacy_stream) cai["stream"] = 1;
                     return cai;
                   })
      .def_prop_ro("shape", [](const DeviceArray& a) { return ShapeTuple(a.tensor); })
      .def_prop_ro("dtype", [](const DeviceArray& a) { return std::string(DtypeName(a.tensor.dtype())); })
      .def_prop_ro("device", [](const DeviceArray& a) { return a.tensor.device().id; })
      .def(
          "copy_to_host",
          [](const DeviceArray& a) {
            return ExportArray(Released([&] { return a.tensor.ViewOrCopyToHost(); }));
          },
          "A NumPy copy of the array.")
      .def(
          "__array__",
          [](const DeviceArray& a, const nb::object& dtype, const nb::object& /*copy*/) {
            // Always a copy (the bytes are on the device), and an implicit one.
            nb::object array = ExportArray(Released([&] { return core::ImplicitCopyToHost(a.tensor); }));
            return dtype.is_none() ? array : array.attr("astype")(dtype);
          },
          nb::arg("dtype") = nb::none(), nb::arg("copy") = nb::none())
      .def("__repr__", [](const DeviceArray& a) {
        return "tesscpp.DeviceArray(shape=" + a.tensor.shape().ToString() +
               ", dtype=" + std::string(DtypeName(a.tensor.dtype())) +
               ", device=cuda:" + std::to_string(a.tensor.device().id) + ")";
      });
}

}  // namespace tesscpp::bindings
