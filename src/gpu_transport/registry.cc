// registry.cc: the transports by name, and the reader that refuses the
// arrays of transports a server does not serve.
#include "gpu_transport/registry.h"

#include <algorithm>
#include <deque>
#include <mutex>
#include <utility>

#include "gpu_transport/cuda_ipc_buffer.h"
#include "gpu_transport/cuda_ipc_transport.h"
#include "tesscpp/cuda.h"
#include "tesscpp/internal/gpu_transport/gpu_transports.h"

namespace tesscpp::gpu_transport {

TransportEntry CudaIpcTransport() {
  TransportEntry entry;
  entry.name = std::string(kCudaIpcName);
  entry.wire_encoding = std::string(kCudaIpcName);
  entry.check_descriptor = [](std::string_view descriptor) {
    return ParseCudaIpcBuffer(descriptor).status();
  };
  entry.available = [] { return cuda::BuiltWithCuda() ? Status::OK() : cuda::CheckAvailable(); };
  entry.make_server = MakeCudaIpcServer;
  entry.make_client = MakeCudaIpcClient;
  // Legacy IPC handles open only in the exporter's IPC namespace.
  entry.container_flags = {"--ipc=host"};
  entry.needs_gpus = true;
  entry.one_worker = true;
  entry.automatic = true;
  return entry;
}

namespace {

// A deque: entries never move, so the pointers handed out stay valid.
struct Registry {
  std::mutex mutex;
  std::deque<TransportEntry> entries;
};

Registry& TheRegistry() {
  static Registry* registry = [] {
    auto* r = new Registry;  // never destroyed: read by threads that may outlive static destruction
    r->entries.push_back(CudaIpcTransport());
    return r;
  }();
  return *registry;
}

// The first entry `matches`, scanned under the lock: lookups sit on the
// request paths (a client's cuda_ipc call, a server reading device arrays)
// and make no list of their own.
template <typename Match>
const TransportEntry* FindEntry(const Match& matches) {
  Registry& registry = TheRegistry();
  std::lock_guard<std::mutex> lock(registry.mutex);
  auto it = std::find_if(registry.entries.begin(), registry.entries.end(), matches);
  return it == registry.entries.end() ? nullptr : &*it;
}

}  // namespace

std::vector<const TransportEntry*> Transports() {
  Registry& registry = TheRegistry();
  std::lock_guard<std::mutex> lock(registry.mutex);
  std::vector<const TransportEntry*> all;
  for (const TransportEntry& entry : registry.entries) all.push_back(&entry);
  return all;
}

const TransportEntry* FindTransport(std::string_view name) {
  return FindEntry([&](const TransportEntry& entry) { return entry.name == name; });
}

std::vector<std::string> TransportNames() {
  std::vector<std::string> names{std::string(kNoTransport)};
  for (const TransportEntry* entry : Transports()) names.push_back(entry->name);
  return names;
}

std::string TransportChoices(NameList style) {
  const std::vector<std::string> names = TransportNames();
  return NameChoices(std::vector<std::string_view>(names.begin(), names.end()), style);
}

Result<const TransportEntry*> TransportNamed(std::string_view name) {
  if (name == kNoTransport) return nullptr;
  if (const TransportEntry* entry = FindTransport(name)) return entry;
  return Status::InvalidArgument("gpu transport '", name, "' is not one of ",
                                 TransportChoices(NameList::kPlain));
}

Status RegisterTransport(TransportEntry entry) {
  if (entry.name.empty() || entry.wire_encoding.empty() || !entry.check_descriptor || !entry.available ||
      !entry.make_server || !entry.make_client) {
    return Status::InvalidArgument(
        "a GPU transport needs a name, a wire encoding, a descriptor check, "
        "an availability check and both factories");
  }
  if (entry.name == kNoTransport || ArrayEncodingFromName(entry.wire_encoding).ok()) {
    return Status::InvalidArgument("'", entry.name, "' / '", entry.wire_encoding,
                                   "' names no transport or a host encoding");
  }
  Registry& registry = TheRegistry();
  std::lock_guard<std::mutex> lock(registry.mutex);
  for (const TransportEntry& known : registry.entries) {
    if (known.name == entry.name || known.wire_encoding == entry.wire_encoding) {
      return Status::InvalidArgument("gpu transport '", known.name,
                                     "' has that name or wire encoding already");
    }
  }
  registry.entries.push_back(std::move(entry));
  return Status::OK();
}

namespace {

// A server reads its own transport's arrays; another known transport's are
// checked as the peers' model checks them, then refused as not enabled.
class RequestArrays final : public DeviceArrayReader {
 public:
  RequestArrays(std::unique_ptr<DeviceArrayReader> served, std::string_view served_name)
      : served_(std::move(served)), available_("('none',)") {
    if (served_ != nullptr) available_ = "('none', '" + std::string(served_name) + "')";
  }

  bool Reads(std::string_view encoding) const override {
    return (served_ != nullptr && served_->Reads(encoding)) || Unserved(encoding) != nullptr;
  }

  Result<Tensor> Import(std::string_view encoding, std::string_view descriptor, Dtype dtype,
                        const Shape& shape) override {
    if (served_ != nullptr && served_->Reads(encoding))
      return served_->Import(encoding, descriptor, dtype, shape);
    const TransportEntry* entry = Unserved(encoding);
    if (entry == nullptr) return Status::Internal("no transport reads '", encoding, "' arrays");
    TESS_RETURN_IF_ERROR(entry->check_descriptor(descriptor));
    return Status::Unimplemented("GPU transport '", entry->name,
                                 "' is not enabled on this Tesseract (available: ", available_, ")");
  }

 private:
  static const TransportEntry* Unserved(std::string_view encoding) {
    return FindEntry([&](const TransportEntry& entry) { return entry.wire_encoding == encoding; });
  }

  std::unique_ptr<DeviceArrayReader> served_;
  std::string available_;
};

}  // namespace

std::unique_ptr<DeviceArrayReader> ServerRequestArrays(std::unique_ptr<DeviceArrayReader> served,
                                                       std::string_view served_name) {
  return std::make_unique<RequestArrays>(std::move(served), served_name);
}

}  // namespace tesscpp::gpu_transport
