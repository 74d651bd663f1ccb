// served_component.h: what the runtime needs of a component, whatever it is
// written in (the tree's own API: the Python bindings implement it for
// tesseract_api.py modules).
//
// The runtime (runtime.cc) owns everything a served Tesseract does around its
// endpoints: routing, body rules, Accept negotiation, run directories, stdio
// capture, the GPU transport, /health, /test, errors. A component kind — C++
// components (src/cpp_kind/cpp_component.h), a Python module
// (python/bindings/python_component.h), a table of callbacks in a test — implements this interface and
// nothing else: it says which endpoints it has, brings its OpenAPI document, and turns a request body into a
// call. The runtime has no branch on the kind (docs/architecture.md).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tesscpp/internal/component/kept_state.h"
#include "tesscpp/internal/component/run_logger.h"
#include "tesscpp/internal/core/endpoint_table.h"
#include "tesscpp/result.h"
#include "tesscpp/value.h"

namespace tesscpp::runtime {

/// \brief Where a prepared call runs.
struct CallContext {
  /// The run directory of a wrapped endpoint (`<output_path>/run_<id>`, its
  /// log capturing stdio); empty for the others.
  std::string run_dir;
  /// Makes the run a wrapped endpoint logs into (run_log.h), for a kind that
  /// tracks runs with tesscpp's loggers; null for the other endpoints.
  const component::RunLoggerFactory* run_loggers = nullptr;
  /// Forward reuse (docs/forward-reuse.md). An apply a client asked to keep
  /// fills `keep` with what its derivative calls may use (the kind decides
  /// how its code reaches it: tesscpp/forward_reuse.h for C++); null when
  /// nobody asked. A derivative call gets in `kept` what an apply at its
  /// inputs kept; null when there is none, and the call recomputes.
  component::Residual* keep = nullptr;
  std::shared_ptr<const component::Residual> kept;
};

/// \brief A validated request, ready to run: gives the endpoint's outputs,
/// already validated against its output model (arrays as Tensors, which may
/// live on a device). Wrapped endpoints run it inside their run directory with
/// stdio captured. A failure may name its exception (ExceptionDetail,
/// failure_details.h); a C++ exception thrown out of it is caught and named by
/// the runtime.
using PreparedCall = std::function<Result<Value>(const CallContext& context)>;

/// \brief The documents a runtime serves, built once when it is made. A kind
/// that brings the exact bytes of its framework (a Python module: FastAPI's)
/// sets the texts; otherwise the runtime writes /openapi.json from `openapi`
/// and renders /docs from it.
struct ServedDocuments {
  Value openapi;
  std::optional<std::string> openapi_json;
  std::optional<std::string> docs_html;
};

/// \brief What the runtime decides about the served document.
struct DocumentSettings {
  std::optional<std::string> title;        ///< TESSERACT_NAME: replaces the component's name
  std::optional<std::string> version;      ///< TESSERACT_VERSION
  std::optional<std::string> description;  ///< TESSERACT_DESCRIPTION
  bool debug = false;                      ///< /test is served
  /// The x-supported-* lists, from what the runtime offers.
  std::vector<std::string> output_formats;
  std::vector<std::string> gpu_transports;
  std::vector<std::string> compressions;
};

}  // namespace tesscpp::runtime

namespace tesscpp {

// Named in the public runtime.h (Runtime::Make), so it lives in tesscpp.
class ServedComponent {
 public:
  virtual ~ServedComponent() = default;

  /// \brief The name that failures and tracebacks name.
  virtual std::string name() const = 0;
  /// \brief Whether it implements `endpoint`. Asked only of endpoints whose
  /// kind is not kRuntime (health and test are the runtime's); apply is
  /// required of every component.
  virtual bool Implements(core::EndpointId endpoint) const = 0;
  /// \brief The documents served at /openapi.json and /docs.
  virtual Result<runtime::ServedDocuments> Documents(const runtime::DocumentSettings& settings) const = 0;
  /// \brief Validates `body` (the request body as read, arrays decoded) for
  /// `endpoint`, one it implements, into the call that runs it. `text` is the
  /// body's JSON as received, for a kind that must re-read it its own way
  /// (empty for in-process calls); `body` is null where the runtime could not
  /// read `text` exactly and the kind validates from it (ValidatesFromText).
  /// kValidationError with a ValidationDetail whose locations start at the
  /// body's root otherwise; kDecodeError (a 400) for a text the kind cannot
  /// parse at all. Called concurrently from the server's threads.
  virtual Result<runtime::PreparedCall> Prepare(core::EndpointId endpoint, const Value& body,
                                                std::string_view text) const = 0;
  /// \brief Whether the kind's own validation reads the request's JSON text
  /// where the runtime's reading is not exact, rather than getting the
  /// runtime's 400/422: a body with an array that does not decode goes to
  /// Prepare with its arrays left as JSON, and one the reader refuses or
  /// would approximate (NaN, integers beyond 64 bits, nesting past its
  /// limit) as null with its text. For a framework whose answers to such
  /// bodies are its own (a Python module: FastAPI's and pydantic's).
  virtual bool ValidatesFromText() const { return false; }
  /// \brief Whether its endpoints track their runs through their own
  /// framework (a Python module through tesseract-core, MLflow's client
  /// included) and never use CallContext::run_loggers.
  virtual bool TracksRunsItself() const { return false; }
  /// \brief Whether its code may change the request's arrays in place (a
  /// Python module gets them as writable NumPy arrays; C++ components read
  /// them through const views). Forward reuse then keeps a copy of an apply's
  /// inputs taken before the call, rather than the inputs themselves.
  virtual bool MayChangeInputs() const { return false; }
  /// \brief OK when worker processes forked from this one may serve it; an
  /// error saying why not (threads it started, which a fork leaves behind).
  virtual Status Forkable() const { return Status::OK(); }
};

}  // namespace tesscpp
