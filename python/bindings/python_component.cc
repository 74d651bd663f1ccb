#include "python_component.h"

#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <iostream>
#include <memory>
#include <utility>
#include <vector>

#include "from_python.h"
#include "gil_calls.h"
#include "tesscpp/internal/component/kept_state.h"
#include "tesscpp/internal/core/endpoint_table.h"
#include "tesscpp/internal/runtime/failure_details.h"
#include "to_python.h"

namespace tesscpp::bindings {
namespace {

namespace nb = nanobind;
using core::EndpointId;

// The type of the forward-reuse state a module keeps (tesscpp.reuse): a
// Python object, released under the GIL wherever the store lets it go.
constexpr char kPythonState[] = "python object";

// The Python exception being handled as a Status that names its class, as
// tesseract-runtime's failures do (builtins bare, others module-qualified).
Status FromPythonError(const nb::python_error& error, StatusCode code) {
  const nb::handle type = error.type();
  const auto name = nb::cast<std::string>(type.attr("__qualname__"));
  const auto module = nb::cast<std::string>(type.attr("__module__"));
  const std::string qualified = module == "builtins" ? name : module + "." + name;
  const auto message = nb::cast<std::string>(nb::str(error.value()));
  // Starlette's debug answer: the traceback as the traceback module writes it.
  const nb::object lines = nb::module_::import_("traceback").attr("format_exception")(error.value());
  const auto report = nb::cast<std::string>(nb::str("").attr("join")(lines));
  return Status(code, message)
      .WithDetail(std::make_shared<runtime::ExceptionDetail>(qualified, qualified, report));
}

// pydantic's errors as FastAPI rendered them (locations from "body"), with
// FastAPI's exact 422 body.
Status Unprocessable(const nb::handle& failure) {
  const nb::tuple parts = nb::borrow<nb::tuple>(failure);
  std::vector<ValidationIssue> issues;
  for (nb::handle error : parts[0]) {
    // Request values quoted in the detail may be integers beyond 64 bits.
    const Value item = JsonDetailToValue(error);
    const Value::Dict& d = item.as_dict();
    ValidationIssue issue;
    issue.type = d.at("type").as_string();
    const Value::List& loc = d.at("loc").as_list();
    // The detail's locations start at the body's root.
    const bool from_body = !loc.empty() && loc.front().is_string() && loc.front().as_string() == "body";
    issue.loc.assign(loc.begin() + (from_body ? 1 : 0), loc.end());
    issue.msg = d.at("msg").as_string();
    if (const Value* input = d.find("input")) issue.input = *input;
    if (const Value* ctx = d.find("ctx")) issue.ctx = *ctx;
    issues.push_back(std::move(issue));
  }
  // The message as any validation failure's; the body FastAPI's.
  const std::string message = ValidationFailure(issues).message();
  auto detail =
      std::make_shared<runtime::RenderedValidationDetail>(std::move(issues), nb::cast<std::string>(parts[1]));
  return Status(StatusCode::kValidationError, message).WithDetail(std::move(detail));
}

class PythonComponent final : public ServedComponent {
 public:
  PythonComponent(const nb::object& host, std::string name, std::vector<EndpointId> endpoints)
      : import_threads_(nb::cast<int>(host.attr("import_threads"))),
        host_(GilShared(host)),
        validate_(GilShared(nb::object(host.attr("validate")))),
        run_(GilShared(nb::object(host.attr("run")))),
        jsonable_(GilShared(nb::object(host.attr("jsonable")))),
        name_(std::move(name)),
        endpoints_(std::move(endpoints)) {}

  std::string name() const override { return name_; }
  // Starlette, FastAPI and tesseract-core answer what our reader cannot read
  // exactly (undecodable arrays, NaN, wide integers): validate() reads the text.
  bool ValidatesFromText() const override { return true; }
  // tesseract-core's log_metric and friends, through the host's _run_tracking.
  bool TracksRunsItself() const override { return true; }
  bool MayChangeInputs() const override { return true; }
  // Threads the module's import left running would not exist in a forked
  // worker, where calls that need them (a torch or JAX pool) hang.
  Status Forkable() const override {
    if (import_threads_ == 0) return Status::OK();
    return Status::InvalidArgument(
        "the module's import started ", import_threads_,
        " thread(s) (a thread pool, e.g. torch's or JAX's after a first computation); forked workers would "
        "not have them and calls that need them would hang. Serve it with --num-workers 1, or compute "
        "nothing at import (start such work in the first call).");
  }
  bool Implements(EndpointId endpoint) const override {
    return std::find(endpoints_.begin(), endpoints_.end(), endpoint) != endpoints_.end();
  }

  Result<runtime::ServedDocuments> Documents(const runtime::DocumentSettings& settings) const override {
    nb::gil_scoped_acquire gil;
    try {
      const nb::tuple texts = nb::cast<nb::tuple>(
          host_->attr("documents")(settings.output_formats, settings.gpu_transports, settings.compressions));
      runtime::ServedDocuments documents;
      documents.openapi_json = nb::cast<std::string>(texts[0]);
      documents.docs_html = nb::cast<std::string>(texts[1]);
      return documents;
    } catch (const nb::python_error& e) {
      return FromPythonError(e, StatusCode::kInternal);
    }
  }

  Result<runtime::PreparedCall> Prepare(EndpointId endpoint, const Value& body,
                                        std::string_view text) const override {
    const char* name = core::Endpoint(endpoint).name.data();  // the table's literals end in NUL
    ThreadGil gil;
    nb::tuple outcome;
    try {
      // A view of the request's bytes, read only when the fast validation fails;
      // validate() keeps nothing of it.
      const nb::object raw =
          text.empty() ? nb::object(nb::none())
                       : nb::steal(PyMemoryView_FromMemory(const_cast<char*>(text.data()),
                                                           static_cast<Py_ssize_t>(text.size()), PyBUF_READ));
      outcome = nb::cast<nb::tuple>((*validate_)(name, ToPython(body, DeviceBytes::kOnLegacyStream), raw));
    } catch (const nb::python_error& e) {
      // Not a validation error (a validator raised something pydantic does
      // not catch): a failure of the call, a 500, as FastAPI has it.
      return runtime::PreparedCall([failed = FromPythonError(e, StatusCode::kInternal)](
                                       const runtime::CallContext&) -> Result<Value> { return failed; });
    }
    if (!outcome[1].is_none()) {
      const nb::tuple rejection = nb::borrow<nb::tuple>(outcome[1]);
      // Starlette's 400 for a body json.loads cannot read (not UTF-8, too deep).
      if (nb::cast<int>(rejection[2]) == 400) return Status::DecodeError(nb::cast<std::string>(rejection[1]));
      return Unprocessable(rejection);
    }
    return runtime::PreparedCall([run = run_, jsonable = jsonable_,
                                  payload = GilShared(nb::object(outcome[0])),
                                  name](const runtime::CallContext& context) -> Result<Value> {
      ThreadGil held;
      try {
        // Forward reuse (docs/forward-reuse.md): the module reaches both
        // through tesscpp.reuse.
        nb::object kept = nb::none();
        if (context.kept != nullptr && context.kept->type == kPythonState) {
          kept = *std::static_pointer_cast<const nb::object>(context.kept->state);
        }
        const nb::tuple done =
            nb::borrow<nb::tuple>((*run)(name, *payload, context.run_dir, context.keep != nullptr, kept));
        if (context.keep != nullptr && !done[1].is_none()) {
          *context.keep =
              component::Residual{std::static_pointer_cast<const void>(GilShared(nb::object(done[1]))),
                                  kPythonState, nb::cast<int64_t>(done[2]), nb::cast<int64_t>(done[3])};
        }
        return ToValue(done[0], *jsonable);
      } catch (const nb::python_error& e) {
        return FromPythonError(e, StatusCode::kInternal);
      }
    });
  }

 private:
  int import_threads_;                // ModuleHost.import_threads
  std::shared_ptr<nb::object> host_;  // a tesscpp._python_host.ModuleHost
  // Its methods, looked up once: every request calls them.
  std::shared_ptr<nb::object> validate_;
  std::shared_ptr<nb::object> run_;
  std::shared_ptr<nb::object> jsonable_;
  std::string name_;
  std::vector<EndpointId> endpoints_;
};

nb::dict SettingsOf(const RuntimeConfig& config) {
  nb::dict settings;
  if (config.name) settings["name"] = *config.name;
  if (config.version) settings["version"] = *config.version;
  if (config.description) settings["description"] = *config.description;
  settings["debug"] = config.debug;
  settings["input_path"] = config.input_path;
  settings["output_path"] = config.output_path;
  settings["output_format"] = config.output_format;
  if (config.compression != "none") settings["compression"] = config.compression;
  settings["profiling"] = config.profiling;
  settings["tracing"] = config.tracing;
  settings["gpu_transport"] = config.gpu_transport;
  settings["cuda_ipc_pool_fraction"] = config.cuda_ipc_pool_fraction;
  return settings;
}

}  // namespace

Result<std::shared_ptr<const ServedComponent>> OpenPythonModule(const std::string& path,
                                                                const RuntimeConfig& config) {
  nb::gil_scoped_acquire gil;
  try {
    const nb::object host =
        nb::module_::import_("tesscpp._python_host").attr("ModuleHost")(path, SettingsOf(config));
    std::vector<EndpointId> endpoints;
    for (nb::handle name : host.attr("endpoints")) {
      if (auto id = core::FindEndpoint(nb::cast<std::string>(name))) endpoints.push_back(*id);
    }
    auto name = nb::cast<std::string>(host.attr("name"));
    return std::shared_ptr<const ServedComponent>(
        std::make_shared<PythonComponent>(host, std::move(name), std::move(endpoints)));
  } catch (const nb::python_error& e) {
    const Status failed = FromPythonError(e, StatusCode::kInvalidArgument);
    // The traceback with its causes (the module's own error under
    // tesseract-core's ImportError), as tesseract-runtime prints it.
    std::cerr << runtime::GetExceptionDetail(failed)->traceback();
    return failed.WithContext("cannot serve '" + path + "'");
  }
}

}  // namespace tesscpp::bindings
