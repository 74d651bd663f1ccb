// vmm.cc: VMM allocations exported as POSIX fds on request, and peers' ones
// mapped through a cache (docs/gpu-transport-protocol.md 13).
#include "cuda/vmm.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <string_view>
#include <utility>
#include <vector>

#include "cuda/cuda_api.h"
#include "cuda/peer_ranges.h"
#include "cuda/recent_cache.h"
#include "cuda/vmm_request.h"
#include "platform/fd_passing.h"
#include "tesscpp/cuda.h"
#include "tesscpp/internal/cuda/cuda_ipc.h"

namespace tesscpp::cuda {
namespace internal {

Counters& TransportCountersOf() {
  static auto* counters = new Counters();  // leaked: counted until exit
  return *counters;
}

namespace {

constexpr char kSocketPrefix[] = "tesscpp-vmm.";
// Allocations registered at once: every live VMM allocation this process
// exported, so bounded by its memory (139 GiB in 20 MiB chunks is ~7000).
constexpr size_t kMaxRegistered = 65536;
constexpr size_t kMappingsKept = 64;

std::string RandomHex(size_t bytes) {
  std::random_device random;
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string text;
  for (size_t i = 0; i < bytes; ++i) {
    const auto byte = static_cast<unsigned>(random()) & 0xffU;
    text += kDigits[byte >> 4U];
    text += kDigits[byte & 0xfU];
  }
  return text;
}

std::string SocketName(std::string_view endpoint) { return kSocketPrefix + std::string(endpoint); }

// "<pid>.<16 hex>", as VmmEndpoint() writes it.
bool IsEndpoint(std::string_view text) {
  const size_t dot = text.find('.');
  if (dot == 0 || dot == std::string_view::npos || text.size() - dot - 1 != 16 || dot > 10) return false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const bool ok =
        i < dot ? (c >= '0' && c <= '9') : i == dot || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
    if (!ok) return false;
  }
  return true;
}

// The physical allocation mapped at `address`, as the driver describes it.
struct Block {
  uint64_t id = 0;  // 0: none
  CUdeviceptr base = 0;
  size_t size = 0;
  uint64_t allowed_handle_types = 0;
};

Result<Block> BlockAt(CUdeviceptr address) {
  TESS_ASSIGN_OR_RETURN(const DriverApi* driver, Driver());
  Block block;
  unsigned long long id = 0;       // NOLINT(google-runtime-int): the driver's type
  unsigned long long allowed = 0;  // NOLINT(google-runtime-int)
  CUpointer_attribute attributes[] = {
      CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID, CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR,
      CU_POINTER_ATTRIBUTE_MAPPING_SIZE, CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES};
  void* values[] = {&id, &block.base, &block.size, &allowed};
  TESS_RETURN_IF_ERROR(
      DriverStatus(driver->pointer_get_attributes(4, attributes, values, address), "cuPointerGetAttributes"));
  block.id = id;
  block.allowed_handle_types = allowed;
  return block;
}

// A peer's VMM tensor mapped here: its allocations side by side in one
// reserved address range, readable and writable by one device.
class VmmMapping {
 public:
  static Result<std::shared_ptr<VmmMapping>> Map(std::vector<platform::Fd> fds,
                                                 const std::vector<VmmPiece>& pieces, int ordinal) {
    TESS_ASSIGN_OR_RETURN(const DriverApi* driver, Driver());
    TESS_ASSIGN_OR_RETURN(DeviceGuard guard, DeviceGuard::Enter(ordinal));
    size_t total = 0;
    for (const VmmPiece& piece : pieces) total += static_cast<size_t>(piece.size);
    CUdeviceptr base = 0;
    TESS_RETURN_IF_ERROR(
        DriverStatus(driver->mem_address_reserve(&base, total, 0, 0, 0), "cuMemAddressReserve"));
    auto mapping = std::shared_ptr<VmmMapping>(new VmmMapping(base, total, ordinal));
    for (size_t i = 0; i < pieces.size(); ++i) {
      CUmemGenericAllocationHandle handle = 0;
      // The driver takes the fd's number in a pointer-sized argument.
      // NOLINTNEXTLINE(performance-no-int-to-ptr)
      void* shareable = reinterpret_cast<void*>(static_cast<uintptr_t>(fds[i].get()));
      TESS_RETURN_IF_ERROR(DriverStatus(driver->mem_import_from_shareable_handle(
                                            &handle, shareable, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
                                        "cuMemImportFromShareableHandle"));
      // The mapping holds the memory from here on; the handle can go.
      const Status mapped = DriverStatus(
          driver->mem_map(base + mapping->mapped_, static_cast<size_t>(pieces[i].size), 0, handle, 0),
          "cuMemMap");
      LogIfFailed(DriverStatus(driver->mem_release(handle), "cuMemRelease"));
      TESS_RETURN_IF_ERROR(mapped);
      mapping->mapped_ += static_cast<size_t>(pieces[i].size);
    }
    CUmemAccessDesc access{};
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id = ordinal;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    TESS_RETURN_IF_ERROR(DriverStatus(driver->mem_set_access(base, total, &access, 1), "cuMemSetAccess"));
    PeerRanges::Add(base, total);
    mapping->registered_ = true;
    return mapping;
  }

  ~VmmMapping() {
    if (registered_) PeerRanges::Remove(base_);
    auto driver = Driver();
    auto guard = DeviceGuard::Enter(ordinal_);
    if (!driver.ok()) return;
    if (mapped_ > 0) LogReleaseFailure((*driver)->mem_unmap(base_, mapped_), "cuMemUnmap");
    LogReleaseFailure((*driver)->mem_address_free(base_, reserved_), "cuMemAddressFree");
  }
  VmmMapping(const VmmMapping&) = delete;
  VmmMapping& operator=(const VmmMapping&) = delete;

  uint8_t* base() const { return static_cast<uint8_t*>(PointerFromAddress(base_)); }

 private:
  VmmMapping(CUdeviceptr base, size_t reserved, int ordinal)
      : base_(base), reserved_(reserved), ordinal_(ordinal) {}

  CUdeviceptr base_;
  size_t reserved_;
  int ordinal_;
  size_t mapped_ = 0;
  bool registered_ = false;
};

RecentCache<VmmMapping>& Mappings() {
  static auto* mappings = new RecentCache<VmmMapping>(kMappingsKept);  // leaked: as ipc.cc's
  return *mappings;
}

// Lets go of the mappings of exporters that have exited, which would hold a
// dead process's memory (an exporter's socket closes with it).
void ForgetExitedExporters() {
  std::map<std::string, bool> gone;
  Mappings().TryRemoveIf([&gone](const std::string& entry) {
    const std::string exporter = entry.substr(0, entry.find('|'));
    auto [it, fresh] = gone.try_emplace(exporter, false);
    if (fresh) it->second = !platform::AbstractSocketListening(SocketName(exporter));
    return it->second;
  });
}

// This process's side of the extension: the VMM allocations it exported,
// by block id, and the socket that hands them to peers. An allocation's fd
// is made when a peer first asks (exporting one costs ~1.2 ms on an H200,
// so it is kept) and closed once the allocation is gone from its address
// (an open fd would keep the memory alive), which the server's thread checks
// every second, as are the mappings of peers that have exited.
class Exporter {
 public:
  // Null where the extension is off or cannot start.
  static Exporter* Instance() {
    static Exporter* const kInstance = Start();  // leaked: peers may ask until exit
    return kInstance;
  }

  const std::string& endpoint() const { return endpoint_; }
  const std::string& token() const { return token_; }

  // Registers the allocations and returns the names peers ask for them by:
  // a random 64-bit handle per allocation rather than the driver's block id,
  // which is small and guessable, so that only a reader of a message that
  // named an allocation can ask for it (as a legacy IPC handle's 64 bytes).
  Result<std::vector<uint64_t>> Register(const std::vector<Block>& blocks, int ordinal) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<uint64_t> handles;
    for (const Block& block : blocks) {
      auto found = entries_.find(block.id);
      if (found == entries_.end()) {
        if (entries_.size() >= kMaxRegistered) {
          return Status::ResourceExhausted("more than ", kMaxRegistered,
                                           " VMM allocations are exported at once");
        }
        uint64_t handle = 0;
        // 63 bits: the descriptor grammar reads its numbers as non-negative int64.
        while (handle == 0 || by_handle_.contains(handle)) handle = random_() >> 1;
        found = entries_.emplace(block.id, Entry{block.base, ordinal, handle, {}}).first;
        by_handle_.emplace(handle, block.id);
      }
      handles.push_back(found->second.handle);
    }
    return handles;
  }

 private:
  struct Entry {
    CUdeviceptr base = 0;
    int ordinal = 0;
    uint64_t handle = 0;  // what peers name it by
    platform::Fd fd;
  };

  static Exporter* Start() {
    const char* setting = std::getenv("TESSCPP_CUDA_VMM");
    if ((setting != nullptr && std::string_view(setting) == "0") || !CheckAvailable().ok()) return nullptr;
    // An exporter keeps one fd per allocation it exported, and an importer
    // holds a tensor's fds while it maps them: thousands for a large torch
    // process (20 MiB chunks), past the usual soft limit of 1024.
    rlimit files{};
    if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
      files.rlim_cur = files.rlim_max;
      (void)setrlimit(RLIMIT_NOFILE, &files);
    }
    auto* exporter = new Exporter();
    exporter->endpoint_ = std::to_string(getpid()) + "." + RandomHex(8);
    exporter->token_ = RandomHex(16);
    auto server = platform::FdServer::Start(
        SocketName(exporter->endpoint_),
        [exporter](std::string_view request) { return exporter->Answer(request); },
        [exporter] {
          exporter->Sweep();
          // Every process that maps peers' VMM memory has an endpoint (it
          // offered or accepted the extension), so this runs there too.
          ForgetExitedExporters();
        });
    if (!server.ok()) {
      LogIfFailed(server.status().WithContext("cuda_vmm is off in this process"));
      delete exporter;
      return nullptr;
    }
    exporter->server_ = *std::move(server);
    return exporter;
  }

  // The fds of the allocations a request names (ParseVmmRequest), in that
  // order. Runs on the server's thread, as Sweep does, so they stay open
  // until sent.
  Result<std::vector<int>> Answer(std::string_view request) {
    TESS_ASSIGN_OR_RETURN(const std::vector<uint64_t> blocks, ParseVmmRequest(request, token_));
    std::vector<int> fds;
    fds.reserve(blocks.size());
    for (uint64_t id : blocks) {
      TESS_ASSIGN_OR_RETURN(int fd, FdOf(id));
      fds.push_back(fd);
    }
    return fds;
  }

  Result<int> FdOf(uint64_t handle) {
    CUdeviceptr base = 0;
    int ordinal = 0;
    uint64_t id = 0;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto named = by_handle_.find(handle);
      if (named == by_handle_.end()) {
        return Status::NotFound("VMM allocation ", handle, " is not exported by this process");
      }
      id = named->second;
      const Entry& entry = entries_.at(id);
      if (entry.fd.valid()) return entry.fd.get();
      base = entry.base;
      ordinal = entry.ordinal;
    }
    // The export happens outside the lock: exporters on other threads only
    // add entries, and only this thread removes them.
    TESS_ASSIGN_OR_RETURN(DeviceGuard guard, DeviceGuard::Enter(ordinal));
    TESS_ASSIGN_OR_RETURN(Block block, BlockAt(base));
    if (block.id != id) return Status::NotFound("VMM allocation ", handle, " is gone");
    TESS_ASSIGN_OR_RETURN(const DriverApi* driver, Driver());
    CUmemGenericAllocationHandle allocation = 0;
    TESS_RETURN_IF_ERROR(
        DriverStatus(driver->mem_retain_allocation_handle(&allocation, PointerFromAddress(base)),
                     "cuMemRetainAllocationHandle"));
    int fd = -1;
    const Status exported = DriverStatus(
        driver->mem_export_to_shareable_handle(&fd, allocation, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
        "cuMemExportToShareableHandle");
    LogIfFailed(DriverStatus(driver->mem_release(allocation), "cuMemRelease"));
    TESS_RETURN_IF_ERROR(exported);
    TransportCountersOf().vmm_fds_exported++;
    std::lock_guard<std::mutex> lock(mutex_);
    entries_[id].fd = platform::Fd(fd);
    return fd;
  }

  // Forgets the allocations that are no longer where they were exported from.
  void Sweep() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (entries_.empty()) return;
    auto guard = DeviceGuard::Enter(entries_.begin()->second.ordinal);
    for (auto it = entries_.begin(); it != entries_.end();) {
      auto block = BlockAt(it->second.base);
      if (block.ok() && block->id == it->first) {
        ++it;
      } else {
        by_handle_.erase(it->second.handle);
        it = entries_.erase(it);
      }
    }
  }

  std::string endpoint_;
  std::string token_;
  std::mutex mutex_;
  std::map<uint64_t, Entry> entries_;       // by the driver's block id
  std::map<uint64_t, uint64_t> by_handle_;  // handle -> block id
  std::mt19937_64 random_{std::random_device{}()};
  std::unique_ptr<platform::FdServer> server_;
};

}  // namespace

Result<std::optional<IpcDescriptor>> DescribeVmm(const void* data, int64_t nbytes, int ordinal,
                                                 std::string* why_not) {
  Exporter* exporter = Exporter::Instance();
  if (exporter == nullptr) {
    *why_not = "cuda_vmm is off in this process (TESSCPP_CUDA_VMM=0, or its socket could not be opened)";
    return std::optional<IpcDescriptor>();
  }
  const auto start = reinterpret_cast<CUdeviceptr>(data);
  const CUdeviceptr end = start + static_cast<CUdeviceptr>(nbytes);
  std::vector<Block> blocks;
  for (CUdeviceptr address = start; address < end;) {
    auto block = BlockAt(address);
    if (!block.ok() || block->id == 0 || block->size == 0 || block->base > address) {
      *why_not = "the memory is neither a legacy CUDA allocation nor a VMM mapping";
      return std::optional<IpcDescriptor>();
    }
    if ((block->allowed_handle_types & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) == 0) {
      *why_not = "its VMM allocation was made without CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR";
      return std::optional<IpcDescriptor>();
    }
    if (!blocks.empty() && block->base != blocks.back().base + blocks.back().size) {
      *why_not = "its VMM mappings are not contiguous";
      return std::optional<IpcDescriptor>();
    }
    blocks.push_back(*block);
    address = block->base + block->size;
  }
  auto handles = exporter->Register(blocks, ordinal);
  if (!handles.ok()) {
    *why_not = handles.status().message();
    return std::optional<IpcDescriptor>();
  }
  IpcDescriptor descriptor;
  descriptor.vmm_exporter = exporter->endpoint();
  descriptor.vmm_token = exporter->token();
  for (size_t i = 0; i < blocks.size(); ++i) {
    descriptor.vmm_pieces.push_back({(*handles)[i], static_cast<int64_t>(blocks[i].size)});
    descriptor.allocation_size += static_cast<int64_t>(blocks[i].size);
  }
  descriptor.offset = static_cast<int64_t>(start - blocks.front().base);
  return std::optional<IpcDescriptor>(std::move(descriptor));
}

Result<VmmBytes> MapVmm(const IpcDescriptor& descriptor, int ordinal) {
  if (!IsEndpoint(descriptor.vmm_exporter)) {
    return Status::InvalidArgument("'", descriptor.vmm_exporter, "' is not a cuda_vmm endpoint");
  }
  std::string request = descriptor.vmm_token + " ";
  // The token is part of the key: a message with another token is not
  // served mappings opened for one that carried the right one.
  std::string key =
      descriptor.vmm_exporter + "|" + descriptor.vmm_token + "|" + std::to_string(ordinal) + "|";
  for (size_t i = 0; i < descriptor.vmm_pieces.size(); ++i) {
    const std::string id = std::to_string(descriptor.vmm_pieces[i].block);
    request += (i > 0 ? "," : "") + id;
    key += id + "/" + std::to_string(descriptor.vmm_pieces[i].size) + ",";
  }
  bool hit = false;
  TESS_ASSIGN_OR_RETURN(std::shared_ptr<VmmMapping> mapping,
                        Mappings().Get(
                            key,
                            [&]() -> Result<std::shared_ptr<VmmMapping>> {
                              // RequestFds answers exactly as many as asked for, or fails.
                              TESS_ASSIGN_OR_RETURN(
                                  std::vector<platform::Fd> fds,
                                  platform::RequestFds(SocketName(descriptor.vmm_exporter), request,
                                                       descriptor.vmm_pieces.size()));
                              return VmmMapping::Map(std::move(fds), descriptor.vmm_pieces, ordinal);
                            },
                            &hit));
  ++(hit ? TransportCountersOf().vmm_maps_reused : TransportCountersOf().vmm_maps_opened);
  return VmmBytes{mapping, mapping->base() + descriptor.offset};
}

}  // namespace internal

std::optional<std::string> VmmEndpoint() {
  internal::Exporter* exporter = internal::Exporter::Instance();
  if (exporter == nullptr) return std::nullopt;
  return exporter->endpoint();
}

bool VmmPeerReachable(std::string_view endpoint) {
  if (!internal::IsEndpoint(endpoint)) return false;
  static std::mutex mutex;
  static auto* known = new std::map<std::string, bool, std::less<>>();  // leaked: asked until exit
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = known->find(endpoint); it != known->end()) return it->second;
  }
  const bool reachable = platform::AbstractSocketListening(internal::SocketName(endpoint));
  std::lock_guard<std::mutex> lock(mutex);
  if (known->size() >= 4096) known->clear();
  known->emplace(std::string(endpoint), reachable);
  return reachable;
}

TransportCounters GetTransportCounters() {
  const internal::Counters& c = internal::TransportCountersOf();
  return {c.legacy_exports.load(),   c.vmm_exports.load(),     c.staged_exports.load(),
          c.vmm_fds_exported.load(), c.vmm_maps_opened.load(), c.vmm_maps_reused.load()};
}

}  // namespace tesscpp::cuda
