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

#include "tesscpp/internal/endpoint_table.h"
#include "tesscpp/internal/run_logger.h"
#include "tesscpp/result.h"
#include "tesscpp/validation_issue.h"
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
};

/// \brief A validated request, ready to run: gives the endpoint's outputs,
/// already validated against its output model (arrays as Tensors, which may
/// live on a device). Wrapped endpoints run it inside their run directory with
/// stdio captured. A failure may name its exception (ExceptionDetail); a C++
/// exception thrown out of it is caught and named by the runtime.
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

/// \brief Validation issues whose 422 body the component's own framework
/// rendered (FastAPI's bytes for a Python module). The runtime answers with
/// `body()` as it is; everything else reads the issues, as of any
/// ValidationDetail (GetValidationDetail finds it).
class RenderedValidationDetail final : public ValidationDetail {
 public:
  RenderedValidationDetail(std::vector<ValidationIssue> issues, std::string body)
      : ValidationDetail(std::move(issues)), body_(std::move(body)) {}
  const std::string& body() const { return body_; }

 private:
  std::string body_;
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

/// \brief The exception that made a call fail: `type` as raised (a C++ type
/// "std::invalid_argument", a Python one "ValueError"), shown in debug-mode
/// tracebacks and in-process errors; `python_type` the Python class a
/// tesseract-core user sees for it, which /test matches against.
class ExceptionDetail : public StatusDetail {
 public:
  static constexpr std::string_view kTypeId = "tesscpp::runtime::ExceptionDetail";

  /// `traceback`: the whole report, where the kind has one (a Python
  /// traceback), which debug-mode 500s show as tesseract-runtime does.
  ExceptionDetail(std::string type, std::string python_type, std::string traceback = {})
      : type_(std::move(type)), python_type_(std::move(python_type)), traceback_(std::move(traceback)) {}
  std::string_view type_id() const override { return kTypeId; }
  std::string ToString() const override { return type_; }

  const std::string& type() const { return type_; }
  const std::string& python_type() const { return python_type_; }
  const std::string& traceback() const { return traceback_; }

 private:
  std::string type_;
  std::string python_type_;
  std::string traceback_;
};

/// \brief The ExceptionDetail `status` carries, or null.
inline const ExceptionDetail* GetExceptionDetail(const Status& status) {
  const auto& detail = status.detail();
  if (detail == nullptr || detail->type_id() != ExceptionDetail::kTypeId) return nullptr;
  return static_cast<const ExceptionDetail*>(detail.get());
}

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
  /// \brief OK when worker processes forked from this one may serve it; an
  /// error saying why not (threads it started, which a fork leaves behind).
  virtual Status Forkable() const { return Status::OK(); }
};

}  // namespace tesscpp
