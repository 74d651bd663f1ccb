// peer_ranges.h: the address ranges where this process maps peers' memory
// (internal).
//
// Only the owner of memory may hand it out: a borrowed input returned as an
// output is staged, whether its mapping came from a legacy IPC handle or from
// VMM allocations (ipc.cc, vmm.cc).
#pragma once

#include <cstdint>
#include <iterator>
#include <map>
#include <mutex>

namespace tesscpp::cuda::internal {

class PeerRanges {
 public:
  static void Add(uintptr_t base, size_t size) {
    std::lock_guard<std::mutex> lock(Mutex());
    Ranges()[base] = size;
  }
  static void Remove(uintptr_t base) {
    std::lock_guard<std::mutex> lock(Mutex());
    Ranges().erase(base);
  }
  /// \brief Whether `data` lies in a peer's memory mapped here.
  static bool Contains(const void* data) {
    const auto address = reinterpret_cast<uintptr_t>(data);
    std::lock_guard<std::mutex> lock(Mutex());
    auto after = Ranges().upper_bound(address);
    if (after == Ranges().begin()) return false;
    const auto& [base, size] = *std::prev(after);
    return address - base < size;
  }

 private:
  static std::mutex& Mutex() {
    static auto* mutex = new std::mutex();  // leaked: mappings may close at exit
    return *mutex;
  }
  static std::map<uintptr_t, size_t>& Ranges() {  // base -> size
    static auto* ranges = new std::map<uintptr_t, size_t>();
    return *ranges;
  }
};

}  // namespace tesscpp::cuda::internal
