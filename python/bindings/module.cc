// _tesscpp: the nanobind module under the tesscpp Python package.
//
// It exposes tesscpp::Tesseract as _Tesseract, DeviceArray (device_array.h)
// and the pinned host-to-device copy. Arguments become Value trees
// (from_python.h), answers Python objects (to_python.h), neither copying
// array bytes that are CPU, C-contiguous and native-endian; every call into
// the client runs without the GIL (gil_calls.h) and a failed Status raises
// the exception a tesseract-core user expects (python_errors.h).
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "commands.h"
#include "device_array.h"
#include "from_python.h"
#include "gil_calls.h"
#include "jax_ffi.h"
#include "module_runtime.h"
#include "paths.h"
#include "python_errors.h"
#include "tesscpp/client.h"
#include "tesscpp/cuda.h"
#include "tesscpp/internal/core/endpoint_table.h"
#include "tesscpp/internal/cuda/cuda_ipc.h"
#include "tesscpp/internal/cuda/cuda_transfer.h"
#include "tesscpp/internal/gpu_transport/gpu_transports.h"
#include "tesscpp/value.h"
#include "to_python.h"

namespace nb = nanobind;

namespace tesscpp::bindings {
namespace {

using core::EndpointId;

// A method's name: the table's names are string literals, so NUL-terminated.
const char* Named(EndpointId id) { return core::Endpoint(id).name.data(); }

LogSink ToLogSink(const nb::object& callback) {
  if (callback.is_none()) return nullptr;
  std::shared_ptr<nb::object> target = GilShared(callback);
  return [target](std::string_view line) {
    nb::gil_scoped_acquire gil;
    try {
      (*target)(nb::str(line.data(), line.size()));
    } catch (nb::python_error& e) {
      e.discard_as_unraisable("tesscpp stream_logs callback");
    }
  };
}

std::vector<std::pair<std::string, std::string>> ToSettings(const nb::dict& settings) {
  std::vector<std::pair<std::string, std::string>> out;
  for (auto [key, item] : settings) {
    // As tesseract-core's runtime_config_to_env: booleans are 1 and 0.
    const std::string value = nb::isinstance<nb::bool_>(item) ? (nb::cast<bool>(item) ? "1" : "0")
                                                              : nb::cast<std::string>(nb::str(item));
    out.emplace_back(nb::cast<std::string>(nb::str(key)), value);
  }
  return out;
}

nb::object OptionalList(const std::optional<std::vector<std::string>>& list) {
  if (!list) return nb::none();
  return nb::tuple(nb::cast(*list));
}

using Name = std::optional<std::string>;

// What from_source and from_image share (ServeOptions), as the Python layer
// passes it.
void SetServeOptions(ServeOptions& options, const std::string& input_path, const std::string& output_path,
                     const std::string& output_format, Name gpu_transport, const nb::dict& runtime_config,
                     double startup_timeout, double connect_timeout, double read_timeout, bool binref_pool,
                     const nb::object& stream_logs, const std::string& token) {
  options.input_path = input_path;
  options.output_path = output_path;
  options.output_format = output_format;
  options.gpu_transport = std::move(gpu_transport);
  options.runtime_config = ToSettings(runtime_config);
  options.startup_timeout_s = startup_timeout;
  options.client.connect_timeout_s = connect_timeout;
  options.client.read_timeout_s = read_timeout;
  options.client.binref_pool = binref_pool;
  options.client.cuda_ipc_events = true;  // as from_url
  options.client.stream_logs = ToLogSink(stream_logs);
  options.client.token = token;
}

// The CUDA helpers the Python package calls (tesscpp.cuda).
void BindCuda(nb::module_& m) {
  nb::class_<cuda::TransferDone>(m, "_TransferDone").def("wait", [](cuda::TransferDone& done) {
    Released([&] { return done.Wait(); });
  });
  m.def(
      "_copy_h2d",
      [](const std::vector<std::tuple<uintptr_t, uintptr_t, int64_t>>& copies, int device,
         uintptr_t consumer_stream) {
        std::vector<cuda::HostToDeviceCopy> planned;
        planned.reserve(copies.size());
        for (const auto& [source, destination, nbytes] : copies) {
          planned.push_back(
              {reinterpret_cast<const void*>(source), reinterpret_cast<void*>(destination), nbytes});
        }
        return Released([&] { return cuda::CopyHostToDevice(planned, device, consumer_stream); });
      },
      nb::arg("copies"), nb::arg("device"), nb::arg("consumer_stream"),
      "Copies (source, destination, nbytes) host ranges to `device` (see tesscpp.cuda).");
  m.def(
      "_h2d_stream", [](int device) { return Released([&] { return cuda::TransferStream(device); }); },
      nb::arg("device"),
      "The calling thread's transfer stream of `device`, as an integer (see tesscpp.cuda).");

  m.def(
      "_transport_counters",
      [] {
        const cuda::TransportCounters c = cuda::GetTransportCounters();
        nb::dict counts;
        counts["legacy_exports"] = c.legacy_exports;
        counts["vmm_exports"] = c.vmm_exports;
        counts["staged_exports"] = c.staged_exports;
        counts["vmm_fds_exported"] = c.vmm_fds_exported;
        counts["vmm_maps_opened"] = c.vmm_maps_opened;
        counts["vmm_maps_reused"] = c.vmm_maps_reused;
        return counts;
      },
      "This process's GPU-transport counts (see tesscpp.cuda.transport_counters).");
}

// Tesseracts made from a URL or served from a source (tesscpp.Tesseract.from_url, from_source).
void BindFromUrlAndSource(nb::class_<Tesseract>& cls) {
  cls.def_static(
         "from_url",
         [](const std::string& url, double connect_timeout, double read_timeout,
            const std::string& server_output_path, const std::string& server_input_path, bool binref_pool,
            Name output_format, Name gpu_transport, Name compression, const nb::object& stream_logs,
            int connection_pool_size, const std::string& token) {
           ClientOptions options;
           options.connection_pool_size = connection_pool_size;
           options.token = token;
           options.connect_timeout_s = connect_timeout;
           options.read_timeout_s = read_timeout;
           options.server_output_path = server_output_path;
           options.server_input_path = server_input_path;
           options.binref_pool = binref_pool;
           options.cuda_ipc_events = true;  // CUDA inputs are ordered on the legacy stream (CastArray)
           options.encoding = {std::move(output_format), std::move(gpu_transport), std::move(compression)};
           options.stream_logs = ToLogSink(stream_logs);
           return Unwrap(Tesseract::FromUrl(url, std::move(options)));
         },
         nb::arg("url"), nb::arg("connect_timeout"), nb::arg("read_timeout"), nb::arg("server_output_path"),
         nb::arg("server_input_path"), nb::arg("binref_pool"), nb::arg("output_format").none(),
         nb::arg("gpu_transport").none(), nb::arg("compression").none(), nb::arg("stream_logs").none(),
         nb::arg("connection_pool_size"), nb::arg("token"))
      .def_static(
          "from_source",
          [](const std::string& path, const std::string& input_path, const std::string& output_path,
             const std::string& output_format, Name gpu_transport, const nb::dict& runtime_config,
             const std::string& python_executable, const std::string& python_runtime,
             const std::string& tesscpp_executable, double startup_timeout, double connect_timeout,
             double read_timeout, bool binref_pool, const nb::object& stream_logs, const std::string& token) {
            SourceOptions options;
            SetServeOptions(options, input_path, output_path, output_format, std::move(gpu_transport),
                            runtime_config, startup_timeout, connect_timeout, read_timeout, binref_pool,
                            stream_logs, token);
            options.python_executable = python_executable;
            options.python_runtime = python_runtime;
            options.tesscpp_executable = tesscpp_executable;
            return Released([&] { return Tesseract::FromSource(path, options); });
          },
          nb::arg("path"), nb::arg("input_path"), nb::arg("output_path"), nb::arg("output_format"),
          nb::arg("gpu_transport").none(), nb::arg("runtime_config"), nb::arg("python_executable"),
          nb::arg("python_runtime"), nb::arg("tesscpp_executable"), nb::arg("startup_timeout"),
          nb::arg("connect_timeout"), nb::arg("read_timeout"), nb::arg("binref_pool"),
          nb::arg("stream_logs").none(), nb::arg("token"));
}

// Tesseracts in containers or in-process (tesscpp.Tesseract.from_image, from_library).
void BindFromImageAndLibrary(nb::class_<Tesseract>& cls) {
  cls.def_static(
         "from_image",
         [](const std::string& image, const std::string& host_ip, const std::string& port,
            const std::string& network, const std::string& network_alias, std::vector<std::string> volumes,
            const nb::dict& environment, std::vector<std::string> gpus, int num_workers,
            const std::string& user, const std::string& memory, const std::string& input_path,
            const std::string& output_path, const std::string& output_format, Name gpu_transport,
            std::vector<std::string> docker_args, const nb::dict& runtime_config, bool skip_health_check,
            double startup_timeout, double connect_timeout, double read_timeout, bool binref_pool,
            const nb::object& stream_logs, const std::string& token) {
           ImageOptions options;
           options.host_ip = host_ip;
           options.port = port;
           options.network = network;
           options.network_alias = network_alias;
           options.volumes = std::move(volumes);
           for (auto [key, item] : environment)
             options.environment.emplace_back(nb::cast<std::string>(nb::str(key)),
                                              nb::cast<std::string>(nb::str(item)));
           options.gpus = std::move(gpus);
           options.num_workers = num_workers;
           options.user = user;
           options.memory = memory;
           SetServeOptions(options, input_path, output_path, output_format, std::move(gpu_transport),
                           runtime_config, startup_timeout, connect_timeout, read_timeout, binref_pool,
                           stream_logs, token);
           options.docker_args = std::move(docker_args);
           options.skip_health_check = skip_health_check;
           return Released([&] { return Tesseract::FromImage(image, options); });
         },
         nb::arg("image"), nb::arg("host_ip"), nb::arg("port"), nb::arg("network"), nb::arg("network_alias"),
         nb::arg("volumes"), nb::arg("environment"), nb::arg("gpus"), nb::arg("num_workers"), nb::arg("user"),
         nb::arg("memory"), nb::arg("input_path"), nb::arg("output_path"), nb::arg("output_format"),
         nb::arg("gpu_transport").none(), nb::arg("docker_args"), nb::arg("runtime_config"),
         nb::arg("skip_health_check"), nb::arg("startup_timeout"), nb::arg("connect_timeout"),
         nb::arg("read_timeout"), nb::arg("binref_pool"), nb::arg("stream_logs").none(), nb::arg("token"))
      .def_static(
          "from_library",
          [](const std::string& path, const std::string& output_path, Name gpu_transport,
             const nb::dict& runtime_config, const nb::object& stream_logs) {
            LibraryOptions options;
            options.output_path = output_path;
            options.gpu_transport = std::move(gpu_transport);
            options.runtime_config = ToSettings(runtime_config);
            options.stream_logs = ToLogSink(stream_logs);
            return Unwrap(Tesseract::FromLibrary(path, options));
          },
          nb::arg("path"), nb::arg("output_path"), nb::arg("gpu_transport").none(), nb::arg("runtime_config"),
          nb::arg("stream_logs").none());
}

// The component endpoints' rows, for the Python client: how each request is
// built (the path-set prefix and the vector fields of a derivative).
nb::list EndpointRows() {
  nb::list rows;
  for (const core::EndpointInfo& e : core::Endpoints()) {
    if (e.kind == core::EndpointKind::kRuntime) continue;
    nb::dict row;
    row["name"] = std::string(e.name);
    row["command"] = std::string(e.command);
    row["short_name"] = std::string(e.short_name);
    row["tangent_field"] = std::string(e.tangent_field);
    row["cotangent_field"] = std::string(e.cotangent_field);
    row["doc"] = std::string(e.doc);
    rows.append(row);
  }
  return rows;
}

// Component endpoints go through one generic call: _tesseract.py builds each
// request from the endpoint table (endpoint_rows), so an endpoint added to
// the table needs no binding of its own.
void BindEndpoints(nb::class_<Tesseract>& cls) {
  cls.def(
         "call",
         [](const Tesseract& t, const std::string& endpoint, const nb::handle& body, const Name& run_id) {
           const Value request = ToValue(body);
           return CallReleased([&] { return t.Call(endpoint, request, run_id); });
         },
         nb::arg("endpoint"), nb::arg("body"), nb::arg("run_id").none())
      // Forward reuse (docs/forward-reuse.md): the outputs, then the
      // reference an apply kept and how a derivative call used its own.
      .def(
          "call_reusing",
          [](const Tesseract& t, const std::string& endpoint, const nb::handle& body, const Name& run_id,
             bool keep, const std::string& residuals, const std::vector<std::string>& release) {
            const Value request = ToValue(body);
            ForwardReuse reuse{keep, residuals, "", release};
            nb::object outputs = CallReleased([&] { return t.Call(endpoint, request, run_id, &reuse); });
            return nb::make_tuple(outputs, reuse.residuals, reuse.used);
          },
          nb::arg("endpoint"), nb::arg("body"), nb::arg("run_id").none(), nb::arg("keep"),
          nb::arg("residuals"), nb::arg("release"))
      .def(Named(EndpointId::kHealth),
           [](const Tesseract& t) { return CallReleased([&] { return t.Health(); }); })
      .def(Named(EndpointId::kTest),
           [](const Tesseract& t, const nb::handle& test_spec) {
             const Value spec = ToValue(test_spec);
             const TestOutcome done = Released([&] { return t.Test(spec); });
             return std::make_pair(done.status, done.message);
           })
      // What the served document says.
      .def("openapi_schema",
           [](const Tesseract& t) { return CallReleased([&] { return t.OpenApiSchema(); }); })
      .def("available_endpoints",
           [](const Tesseract& t) { return Released([&] { return t.AvailableEndpoints(); }); });
}

// The handle itself: encodings, teardown, logs, containers.
void BindHandle(nb::class_<Tesseract>& cls) {
  cls.def("capabilities",
          [](const Tesseract& t) -> nb::object {
            const std::optional<ServerCapabilities> advertised = Released([&] { return t.Capabilities(); });
            if (!advertised) return nb::none();
            return nb::make_tuple(OptionalList(advertised->output_formats),
                                  OptionalList(advertised->gpu_transports),
                                  OptionalList(advertised->compressions));
          })
      .def(
          "with_encoding",
          [](const Tesseract& t, Name output_format, Name gpu_transport, Name compression) {
            const RequestedEncoding requested{std::move(output_format), std::move(gpu_transport),
                                              std::move(compression)};
            return Released([&] { return t.WithEncoding(requested); });
          },
          nb::arg("output_format").none(), nb::arg("gpu_transport").none(), nb::arg("compression").none())
      .def("current_encoding",
           [](const Tesseract& t) {
             const RequestedEncoding& e = t.current_encoding();
             return std::make_tuple(e.output_format, e.gpu_transport, e.compression);
           })
      .def("resolve_gpu_transport",
           [](const Tesseract& t) {
             const GpuTransportChoice done = Released([&] { return t.ResolveGpuTransport(); });
             return std::make_tuple(done.transport, done.fallback_reason, done.failed);
           })
      .def("teardown", [](Tesseract& t) { Released([&] { return t.Teardown(); }); })
      .def("server_logs", [](const Tesseract& t) { return Unwrap(t.ServerLogs()); })
      .def("container_info",
           [](const Tesseract& t) {
             ContainerInfo info = Released([&] { return t.GetContainerInfo(); });
             nb::dict out;
             out["id"] = info.id;
             out["name"] = info.name;
             out["image"] = info.image;
             out["status"] = info.status;
             out["host_ip"] = info.host_ip;
             out["host_port"] = info.host_port;
             out["url"] = info.url;
             out["attrs"] = ToPython(info.attrs);
             return out;
           })
      .def_prop_ro("url", &Tesseract::url);
}

}  // namespace
}  // namespace tesscpp::bindings

NB_MODULE(_tesscpp, m) {  // NOLINT(performance-unnecessary-value-param): the macro takes the module by value
  using namespace tesscpp;            // NOLINT(google-build-using-namespace)
  using namespace tesscpp::bindings;  // NOLINT(google-build-using-namespace)
  m.doc() = "tesscpp's C++ client, bound with nanobind (use the tesscpp package, not this module).";
  // Handles are routinely still referenced at exit (by autograd graphs, module
  // globals); nanobind's leak report would then be noise, not a finding.
  nb::set_leak_warnings(false);

  ValidationFailureType() =
      nb::borrow(PyErr_NewException("tesscpp._tesscpp.ValidationFailure", PyExc_ValueError, nullptr));
  m.attr("ValidationFailure") = ValidationFailureType();

  BindDeviceArray(m);

  BindCuda(m);
  BindPaths(m);
  BindCommands(m);
  BindModuleRuntime(m);
  nb::class_<Tesseract> tesseract(m, "_Tesseract");
  BindFromUrlAndSource(tesseract);
  BindFromImageAndLibrary(tesseract);
  BindEndpoints(tesseract);
  m.def("endpoint_rows", &EndpointRows);
  // "none" and the GPU transports this client implements, from their
  // registry: what the framework bridges may drive (tesscpp/_transport.py).
  m.def("gpu_transports", &gpu_transport::TransportNames);
  BindHandle(tesseract);
  BindJaxFfi(m);
}
