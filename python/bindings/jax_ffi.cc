#include "jax_ffi.h"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

#include "from_python.h"
#include "tesscpp/client.h"
#include "tesscpp/cuda.h"
#include "tesscpp/internal/core/buffer_pool.h"
#include "tesscpp/internal/schema/array_cast.h"
#include "xla/ffi/api/ffi.h"

namespace tesscpp::bindings {
namespace {

namespace nb = nanobind;
namespace ffi = xla::ffi;

// A place in a request or an answer: dict keys and list indices from the root.
using Segment = std::variant<std::string, int64_t>;
using Path = std::vector<Segment>;

// One call shape, registered by Python at lowering time.
struct JaxCall {
  Tesseract tesseract;
  // For a program on a CUDA device: the view of the Tesseract that passes
  // CUDA arrays by IPC handle, when its transport check passed at lowering;
  // without one, device arrays go through the host.
  std::optional<Tesseract> by_handle;
  std::string endpoint;  // apply, jacobian_vector_product, vector_jacobian_product, jacobian
  Value body;            // the request, with null where the arguments go
  std::vector<Path> arguments;
  std::vector<Path> results;
  // Per argument: whether it carries a batch along its leading dimension
  // (vmap_method="parallel"): then each element is its own call, all at once.
  std::vector<bool> batched;
  // Forward reuse (docs/forward-reuse.md): the call site this call belongs
  // to, whose apply keeps its forward and whose derivative calls refer to it;
  // -1 when it takes no part.
  int64_t reuse_site = -1;
};

// Calls live as long as the process: a jitted program may run long after the
// Python objects that lowered it are gone, and a program's calls are few.
class Registry {
 public:
  static Registry& Instance() {
    static auto* registry = new Registry();  // leaked: programs may run at exit
    return *registry;
  }
  int64_t Add(std::shared_ptr<const JaxCall> call) {
    std::lock_guard<std::mutex> lock(mutex_);
    calls_.push_back(std::move(call));
    return static_cast<int64_t>(calls_.size()) - 1;
  }
  std::shared_ptr<const JaxCall> Get(int64_t id) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (id < 0 || id >= static_cast<int64_t>(calls_.size())) return nullptr;
    return calls_[static_cast<size_t>(id)];
  }

 private:
  std::mutex mutex_;
  std::vector<std::shared_ptr<const JaxCall>> calls_;
};

// The forward-reuse references of each call site (an apply_tesseract call
// that is differentiated): the one its last apply kept, which its derivative
// calls refer to, and those it replaced, released with the next apply. A
// compiled program gives the derivative calls no data that leads back to
// their apply, so the site's latest reference stands for it: a reference
// made at other inputs (another thread's step at the same site, a derivative
// run before its apply) is recomputed by the server, never misused, as the
// server compares the inputs. At most one reference per site stays alive by
// this table, for at most kSites sites (outside jit each call is a site of
// its own); the server's time limit frees the last ones.
class ReuseSites {
 public:
  static ReuseSites& Instance() {
    static auto* sites = new ReuseSites();  // leaked: programs may run at exit
    return *sites;
  }
  ForwardReuse Begin(int64_t site, bool apply) {
    std::lock_guard<std::mutex> lock(mutex_);
    ForwardReuse reuse;
    if (!apply) {
      auto found = sites_.find(site);
      if (found != sites_.end()) reuse.residuals = found->second.kept;
      return reuse;
    }
    reuse.keep = true;
    reuse.release = std::move(replaced_);  // unknown to this server: ignored there
    replaced_.clear();
    return reuse;
  }
  // After an apply (`done`: its answer arrived): its reference replaces the
  // site's, or the releases it carried wait for the next apply.
  void Finish(int64_t site, ForwardReuse& reuse, bool done) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!done) {
      replaced_.insert(replaced_.end(), reuse.release.begin(), reuse.release.end());
      return;
    }
    Site& at = sites_[site];
    at.used = ++clock_;
    if (!at.kept.empty()) replaced_.push_back(std::move(at.kept));
    at.kept = std::move(reuse.residuals);
    if (sites_.size() <= kSites) return;
    auto oldest = std::min_element(sites_.begin(), sites_.end(), [](const auto& a, const auto& b) {
      return a.second.used < b.second.used;
    });
    if (!oldest->second.kept.empty()) replaced_.push_back(std::move(oldest->second.kept));
    sites_.erase(oldest);
  }

 private:
  static constexpr size_t kSites = 64;
  struct Site {
    std::string kept;
    uint64_t used = 0;
  };
  std::mutex mutex_;
  std::map<int64_t, Site> sites_;
  std::vector<std::string> replaced_;
  uint64_t clock_ = 0;
};

std::atomic<uint64_t> handled_calls{0};
// Requests the handlers have under way now, and the most there ever were.
std::atomic<int64_t> requests_in_flight{0};
std::atomic<int64_t> requests_peak{0};

// Elements of a batch sent at once, at most (each holds a thread and a
// connection while its request is under way).
constexpr int64_t kMaxAtOnce = 32;

// Where one run of the custom call has its arrays: XLA's host buffers, or
// memory of a CUDA device that XLA's stream writes and reads.
struct Placement {
  bool on_device = false;
  bool by_handle = false;  // CUDA arrays go to the Tesseract by IPC handle
  int ordinal = 0;
  uintptr_t stream = 0;  // XLA's cudaStream_t

  static constexpr uintptr_t kLegacyStream = 1;  // as cuda.h names it
  // The stream the results are written on: by handle, the legacy default
  // stream, which the client's answers are ready in the order of.
  uintptr_t result_stream() const { return by_handle ? kLegacyStream : stream; }
};

// An array of the custom call: its memory, dtype and dimensions; for an
// element of a batch, a slice along the leading dimension.
struct Slot {
  uint8_t* data = nullptr;
  Dtype dtype = Dtype::kFloat32;
  std::vector<int64_t> dims;

  int64_t elements() const {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    return n;
  }
  int64_t nbytes() const { return elements() * ItemSize(dtype); }
  Slot Element(int64_t index) const {
    Slot element{nullptr, dtype, std::vector<int64_t>(dims.begin() + 1, dims.end())};
    element.data = data + index * element.elements() * ItemSize(dtype);
    return element;
  }
};

std::string Describe(const Path& path) {
  std::string text;
  for (const Segment& segment : path) {
    if (const auto* key = std::get_if<std::string>(&segment)) {
      text += "['" + *key + "']";
    } else {
      text += "[" + std::to_string(std::get<int64_t>(segment)) + "]";
    }
  }
  return text;
}

Value* Find(Value& root, const Path& path) {
  Value* node = &root;
  for (const Segment& segment : path) {
    if (const auto* key = std::get_if<std::string>(&segment)) {
      node = node->is_dict() ? node->as_dict().find(*key) : nullptr;
    } else {
      const int64_t index = std::get<int64_t>(segment);
      node = node->is_list() && index >= 0 && index < static_cast<int64_t>(node->as_list().size())
                 ? &node->as_list()[static_cast<size_t>(index)]
                 : nullptr;
    }
    if (node == nullptr) return nullptr;
  }
  return node;
}

Result<Dtype> FromXla(ffi::DataType type) {
  switch (type) {
    case ffi::DataType::PRED: return Dtype::kBool;
    case ffi::DataType::S8: return Dtype::kInt8;
    case ffi::DataType::S16: return Dtype::kInt16;
    case ffi::DataType::S32: return Dtype::kInt32;
    case ffi::DataType::S64: return Dtype::kInt64;
    case ffi::DataType::U8: return Dtype::kUInt8;
    case ffi::DataType::U16: return Dtype::kUInt16;
    case ffi::DataType::U32: return Dtype::kUInt32;
    case ffi::DataType::U64: return Dtype::kUInt64;
    case ffi::DataType::F16: return Dtype::kFloat16;
    case ffi::DataType::F32: return Dtype::kFloat32;
    case ffi::DataType::F64: return Dtype::kFloat64;
    case ffi::DataType::C64: return Dtype::kComplex64;
    case ffi::DataType::C128: return Dtype::kComplex128;
    default:
      return Status::InvalidArgument("XLA element type ", static_cast<int>(type), " has no Tesseract dtype");
  }
}

// The answer's array into XLA's result buffer: a copy, cast (refusing to lose
// values, as the runtime casts inputs) where the server answered in another
// dtype: a gradient in the schema's dtype for an input JAX holds in another.
// A CUDA answer of the right dtype is copied on the device; the rest through
// the host.
Status WriteResult(const Tensor& answer, const Path& path, const Slot& result, const Placement& at) {
  const std::span<const int64_t> got = answer.shape().dims();
  if (!std::equal(got.begin(), got.end(), result.dims.begin(), result.dims.end())) {
    return Status::InvalidArgument("the answer's array at ", Describe(path), " has shape ",
                                   answer.shape().ToString(), ", not the ", FormatShape(result.dims),
                                   " abstract_eval announced");
  }
  if (at.on_device && answer.device().type == DeviceType::kCUDA && answer.dtype() == result.dtype) {
    return cuda::CopyOnDeviceAsync(result.data, answer.data(), answer.nbytes(), at.ordinal,
                                   at.result_stream());
  }
  TESS_ASSIGN_OR_RETURN(const Tensor host, answer.ViewOrCopyToHost());
  Result<Tensor> cast = schema::CastChecked(host, result.dtype, nullptr);
  if (!cast.ok()) {
    return Status::InvalidArgument("the answer's array at ", Describe(path), " is ", DtypeName(host.dtype()),
                                   ", which cannot be written as ", DtypeName(result.dtype), ": ",
                                   cast.status().message());
  }
  if (at.on_device) {
    return cuda::CopyToDeviceOnStream(result.data, cast->data(), cast->nbytes(), at.ordinal,
                                      at.result_stream());
  }
  std::memcpy(result.data, cast->data(), static_cast<size_t>(cast->nbytes()));
  return Status::OK();
}

Result<Value> Send(const JaxCall& call, const Tesseract& tesseract, const Value& body) {
  const int64_t now = requests_in_flight.fetch_add(1) + 1;
  for (int64_t peak = requests_peak.load(); now > peak && !requests_peak.compare_exchange_weak(peak, now);) {
  }
  Result<Value> answer = Status::Internal("tesscpp.jax: not sent");
  if (call.reuse_site < 0) {
    answer = tesseract.Call(call.endpoint, body);
  } else {
    const bool apply = call.endpoint == "apply";
    ForwardReuse reuse = ReuseSites::Instance().Begin(call.reuse_site, apply);
    answer = tesseract.Call(call.endpoint, body, std::nullopt, &reuse);
    if (apply) ReuseSites::Instance().Finish(call.reuse_site, reuse, answer.ok());
  }
  requests_in_flight.fetch_sub(1);
  return answer;
}

// An argument as the request carries it: XLA's memory viewed as a tensor (no
// copy: the client's codec encodes from XLA's buffers, or exports them by
// IPC handle, alive for the whole call), or, for a device array that goes
// through the host, a host copy made in XLA's stream order.
Result<Tensor> ArgumentTensor(const Slot& a, const Placement& at) {
  TESS_ASSIGN_OR_RETURN(Shape shape, Shape::Make(a.dims));
  if (!at.on_device)
    return Tensor::Make(a.dtype, std::move(shape), Buffer::Wrap(a.data, a.nbytes(), nullptr));
  if (at.by_handle) {
    return Tensor::Make(a.dtype, std::move(shape), Buffer::Wrap(a.data, a.nbytes(), nullptr),
                        Device::CUDA(at.ordinal));
  }
  TESS_ASSIGN_OR_RETURN(Buffer host, BufferPool::Default()->Allocate(a.nbytes()));
  TESS_RETURN_IF_ERROR(cuda::CopyToHostAfterStream(host.data(), a.data, a.nbytes(), at.ordinal, at.stream));
  return Tensor::Make(a.dtype, std::move(shape), std::move(host));
}

// One request: the arguments in the body, the answer's arrays written into
// the results.
Status CallOnce(const JaxCall& call, const Placement& at, const std::vector<Slot>& arguments,
                const std::vector<Slot>& results) {
  Value body = call.body;
  for (size_t i = 0; i < arguments.size(); ++i) {
    TESS_ASSIGN_OR_RETURN(Tensor tensor, ArgumentTensor(arguments[i], at));
    Value* place = Find(body, call.arguments[i]);
    if (place == nullptr) return Status::Internal("tesscpp.jax: no place ", Describe(call.arguments[i]));
    *place = Value(std::move(tensor));
  }
  TESS_ASSIGN_OR_RETURN(Value answer, Send(call, at.by_handle ? *call.by_handle : call.tesseract, body));
  for (size_t i = 0; i < results.size(); ++i) {
    const Value* found = Find(answer, call.results[i]);
    if (found == nullptr || !found->is_tensor()) {
      return Status::InvalidArgument("the answer has no array at ", Describe(call.results[i]));
    }
    TESS_RETURN_IF_ERROR(WriteResult(found->as_tensor(), call.results[i], results[i], at));
  }
  return Status::OK();
}

// task(0) ... task(count - 1) on up to kMaxAtOnce threads; the first failure.
Status AtOnce(int64_t count, const std::function<Status(int64_t)>& task) {
  std::atomic<int64_t> next{0};
  std::mutex mutex;
  Status first;
  std::vector<std::thread> threads;
  for (int64_t t = 0; t < std::min(count, kMaxAtOnce); ++t) {
    threads.emplace_back([&] {
      for (int64_t i; (i = next.fetch_add(1)) < count;) {
        Status status = task(i);
        std::lock_guard<std::mutex> lock(mutex);
        if (!status.ok() && first.ok()) first = std::move(status);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  return first;
}

Result<Slot> SlotOf(const ffi::AnyBuffer& buffer) {
  TESS_ASSIGN_OR_RETURN(const Dtype dtype, FromXla(buffer.element_type()));
  const auto dims = buffer.dimensions();
  return Slot{static_cast<uint8_t*>(buffer.untyped_data()), dtype,
              std::vector<int64_t>(dims.begin(), dims.end())};
}

Result<ffi::AnyBuffer> BufferAt(const ffi::RemainingArgs& args, size_t i) {
  auto buffer = args.get<ffi::AnyBuffer>(i);
  if (!buffer.has_value())
    return Status::Internal("tesscpp.jax: argument ", i, ": ", buffer.error().message());
  return *buffer;
}

Result<ffi::AnyBuffer> BufferAt(const ffi::RemainingRets& rets, size_t i) {
  auto buffer = rets.get<ffi::AnyBuffer>(i);
  if (!buffer.has_value()) return Status::Internal("tesscpp.jax: result ", i, ": ", buffer.error().message());
  return **buffer;
}

template <typename Buffers>
Result<std::vector<Slot>> Slots(const Buffers& buffers) {
  std::vector<Slot> slots;
  for (size_t i = 0; i < buffers.size(); ++i) {
    TESS_ASSIGN_OR_RETURN(const ffi::AnyBuffer buffer, BufferAt(buffers, i));
    TESS_ASSIGN_OR_RETURN(Slot slot, SlotOf(buffer));
    slots.push_back(std::move(slot));
  }
  return slots;
}

Status Run(const JaxCall& call, const Placement& at, ffi::RemainingArgs args, ffi::RemainingRets rets) {
  if (args.size() != call.arguments.size() || rets.size() != call.results.size()) {
    return Status::Internal("tesscpp.jax: the custom call has ", args.size(), " arguments and ", rets.size(),
                            " results where its lowering registered ", call.arguments.size(), " and ",
                            call.results.size());
  }
  TESS_ASSIGN_OR_RETURN(const std::vector<Slot> arguments, Slots(args));
  TESS_ASSIGN_OR_RETURN(const std::vector<Slot> results, Slots(rets));
  int64_t size = -1;  // the batch's, when an argument carries one
  for (size_t i = 0; i < arguments.size(); ++i) {
    if (!call.batched[i]) continue;
    if (arguments[i].dims.empty() || (size >= 0 && arguments[i].dims[0] != size)) {
      return Status::Internal("tesscpp.jax: the batched arguments differ in their leading dimension");
    }
    size = arguments[i].dims[0];
  }
  if (size < 0) return CallOnce(call, at, arguments, results);
  return AtOnce(size, [&](int64_t element) {
    std::vector<Slot> element_arguments, element_results;
    for (size_t i = 0; i < arguments.size(); ++i) {
      element_arguments.push_back(call.batched[i] ? arguments[i].Element(element) : arguments[i]);
    }
    for (const Slot& result : results) element_results.push_back(result.Element(element));
    return CallOnce(call, at, element_arguments, element_results);
  });
}

// On a CUDA device, by handle: the legacy default stream (which the client's
// exports and imports are ordered on) waits for XLA's stream, on the GPU, so
// that the arguments are written and XLA's earlier users of the result
// buffers are done; the results are copied on the legacy stream, and XLA's
// stream waits for it in turn. Through the host, the copies run on XLA's
// stream and are waited for. The device is never synchronised.
Status RunOnDevice(const JaxCall& call, const Placement& at, ffi::RemainingArgs args,
                   ffi::RemainingRets rets) {
  if (!at.by_handle) return Run(call, at, args, rets);
  TESS_RETURN_IF_ERROR(cuda::OrderAfterStream(at.stream, at.ordinal));
  TESS_RETURN_IF_ERROR(Run(call, at, args, rets));
  return cuda::OrderStreamAfterLegacy(at.stream, at.ordinal);
}

ffi::Error Handle(Placement at, ffi::RemainingArgs args, ffi::RemainingRets rets, int64_t call_id) {
  handled_calls.fetch_add(1, std::memory_order_relaxed);
  const std::shared_ptr<const JaxCall> call = Registry::Instance().Get(call_id);
  if (call == nullptr)
    return ffi::Error::Internal("tesscpp.jax: no call registered as " + std::to_string(call_id));
  at.by_handle = at.on_device && call->by_handle.has_value();
  const Status status = at.on_device ? RunOnDevice(*call, at, args, rets) : Run(*call, at, args, rets);
  if (status.ok()) return ffi::Error::Success();
  return ffi::Error(status.code() == StatusCode::kInvalidArgument ? ffi::ErrorCode::kInvalidArgument
                                                                  : ffi::ErrorCode::kUnknown,
                    status.message());
}

ffi::Error HandleOnHost(ffi::RemainingArgs args, ffi::RemainingRets rets, int64_t call_id) {
  return Handle(Placement{}, args, rets, call_id);
}

ffi::Error HandleOnCuda(void* stream, int32_t ordinal, ffi::RemainingArgs args, ffi::RemainingRets rets,
                        int64_t call_id) {
  return Handle(Placement{true, false, ordinal, reinterpret_cast<uintptr_t>(stream)}, args, rets, call_id);
}

XLA_FFI_DEFINE_HANDLER(kHostHandler, HandleOnHost,
                       ffi::Ffi::Bind().RemainingArgs().RemainingRets().Attr<int64_t>("call_id"));

// The stream as a plain pointer: this file needs no CUDA headers, and builds
// without CUDA refuse at run time (cuda.h's functions say the build has none).
XLA_FFI_DEFINE_HANDLER(kCudaHandler, HandleOnCuda,
                       ffi::Ffi::Bind()
                           .Ctx<ffi::PlatformStream<void*>>()
                           .Ctx<ffi::DeviceOrdinal>()
                           .RemainingArgs()
                           .RemainingRets()
                           .Attr<int64_t>("call_id"));

Path ToPath(const nb::handle& segments) {
  Path path;
  for (nb::handle segment : segments) {
    if (nb::isinstance<nb::str>(segment)) {
      path.emplace_back(nb::cast<std::string>(segment));
    } else {
      path.emplace_back(nb::cast<int64_t>(segment));
    }
  }
  return path;
}

std::vector<Path> ToPaths(const nb::handle& paths) {
  std::vector<Path> out;
  for (nb::handle path : paths) out.push_back(ToPath(path));
  return out;
}

}  // namespace

void BindJaxFfi(nb::module_& m) {
  m.def(
      "_jax_ffi_target",
      [](std::string_view platform) {
        return nb::capsule(reinterpret_cast<void*>(platform == "cuda" ? kCudaHandler : kHostHandler));
      },
      nb::arg("platform") = "cpu",
      "The XLA FFI handler of tesscpp.jax's custom call on `platform` (cpu, cuda) (register it with "
      "jax.ffi.register_ffi_target).");
  m.def(
      "_jax_ffi_api_version", [] { return std::make_pair(XLA_FFI_API_MAJOR, XLA_FFI_API_MINOR); },
      "The XLA FFI API version (major, minor) the custom call was compiled against.");
  m.def(
      "_jax_register_call",
      [](const Tesseract& tesseract, std::string endpoint, const nb::handle& body,
         const nb::handle& arguments, const nb::handle& results, std::vector<bool> batched,
         std::optional<Tesseract> by_handle, int64_t reuse_site) {
        auto call = std::make_shared<JaxCall>(JaxCall{tesseract, std::move(by_handle), std::move(endpoint),
                                                      ToValue(body), ToPaths(arguments), ToPaths(results),
                                                      std::move(batched), reuse_site});
        if (call->batched.empty()) call->batched.assign(call->arguments.size(), false);
        if (call->batched.size() != call->arguments.size())
          throw nb::value_error("one batched flag per argument");
        for (const Path& path : call->arguments) {
          if (Find(call->body, path) == nullptr) {
            throw nb::value_error(("the body has no place " + Describe(path)).c_str());
          }
        }
        return Registry::Instance().Add(std::move(call));
      },
      nb::arg("tesseract"), nb::arg("endpoint"), nb::arg("body"), nb::arg("arguments"), nb::arg("results"),
      nb::arg("batched") = std::vector<bool>(), nb::arg("by_handle") = nb::none(), nb::arg("reuse_site") = -1,
      "Registers a call shape for the custom call; returns the id its call_id attribute names. "
      "`by_handle`: the view of the Tesseract that takes CUDA arrays by IPC handle, if any. "
      "`reuse_site` (>= 0): the call site whose apply keeps its forward and whose derivative calls "
      "refer to it (forward reuse).");
  m.def(
      "_jax_reuse_begin",
      [](int64_t site, bool apply) {
        ForwardReuse reuse = ReuseSites::Instance().Begin(site, apply);
        return std::make_tuple(reuse.keep, std::move(reuse.residuals), std::move(reuse.release));
      },
      nb::arg("site"), nb::arg("apply"),
      "Forward reuse of a call of `site` outside the custom call: (keep, residuals, release) to send.");
  m.def(
      "_jax_reuse_finish",
      [](int64_t site, std::string residuals, std::vector<std::string> release, bool done) {
        ForwardReuse reuse;
        reuse.residuals = std::move(residuals);
        reuse.release = std::move(release);
        ReuseSites::Instance().Finish(site, reuse, done);
      },
      nb::arg("site"), nb::arg("residuals"), nb::arg("release"), nb::arg("done"),
      "After an apply of `site` outside the custom call: the reference it kept (done) or the releases it "
      "could not deliver (not done).");
  m.def(
      "_jax_ffi_calls", [] { return handled_calls.load(std::memory_order_relaxed); },
      "How many times the custom call's handler ran in this process.");
  m.def(
      "_jax_requests_peak",
      [](bool reset) { return reset ? requests_peak.exchange(0) : requests_peak.load(); },
      nanobind::arg("reset") = false,
      "The most requests the custom call's handlers had under way at once since the last reset (or the "
      "process began); `reset` starts a new count after reading this one.");
}

}  // namespace tesscpp::bindings
