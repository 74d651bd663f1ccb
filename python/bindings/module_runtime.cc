#include "module_runtime.h"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gil_calls.h"
#include "python_component.h"
#include "tesscpp/internal/runtime/runtime.h"

namespace tesscpp::bindings {
namespace {

namespace nb = nanobind;

using Settings = std::vector<std::pair<std::string, std::string>>;

struct ModuleRuntime {
  std::unique_ptr<Runtime> runtime;
};

std::unique_ptr<Runtime> OpenModuleRuntime(const std::string& path, const Settings& settings) {
  const RuntimeConfig config = Unwrap(RuntimeConfig::FromSettings(settings));
  std::shared_ptr<const ServedComponent> module = Unwrap(OpenPythonModule(path, config));
  return Unwrap(Runtime::Make(std::move(module), config));
}

// The server's part of a request: the runtime answers it on this thread with
// the GIL released, as the server's threads do (the module's code takes it).
nb::tuple Handle(const ModuleRuntime& served, std::string method, std::string target,
                 std::optional<std::string> content_type, const nb::bytes& body) {
  RuntimeRequest request;
  request.method = std::move(method);
  request.target = std::move(target);
  request.content_type = std::move(content_type);
  request.body = Buffer::FromString(std::string(body.c_str(), body.size()));
  RuntimeResponse response;
  {
    nb::gil_scoped_release release;
    response = served.runtime->Handle(request);
  }
  const std::string_view answer = response.body.string_view();
  return nb::make_tuple(response.status, nb::bytes(answer.data(), answer.size()));
}

}  // namespace

void BindModuleRuntime(nb::module_& m) {
  nb::class_<ModuleRuntime>(m, "_ModuleRuntime")
      .def(
          "__init__",
          [](ModuleRuntime* self, const std::string& path, const Settings& settings) {
            new (self) ModuleRuntime{OpenModuleRuntime(path, settings)};
          },
          nb::arg("path"), nb::arg("settings"),
          "Imports the tesseract_api.py at `path` and serves it with `settings` ((TESSERACT_* suffix, value) "
          "pairs).")
      .def("handle", &Handle, nb::arg("method"), nb::arg("target"), nb::arg("content_type").none(),
           nb::arg("body"), "(status, body) of one request, as `tesscpp serve` would answer it.");
}

}  // namespace tesscpp::bindings
