// memory_manager.cc: the registry of device memory managers.
#include "core/memory_manager.h"

#include <array>
#include <atomic>

namespace tesscpp::core {
namespace {

// Indexed by DLPack device type; registered while libraries load, read by
// every host copy, so plain atomics rather than a lock.
constexpr int kDeviceTypes = 4;

std::array<std::atomic<const MemoryManager*>, kDeviceTypes>& Managers() {
  static std::array<std::atomic<const MemoryManager*>, kDeviceTypes> managers{};
  return managers;
}

}  // namespace

const MemoryManager* MemoryManagerOf(DeviceType type) {
  const auto index = static_cast<int>(type);
  return index >= 0 && index < kDeviceTypes ? Managers()[index].load(std::memory_order_acquire) : nullptr;
}

void SetMemoryManager(DeviceType type, const MemoryManager* manager) {
  const auto index = static_cast<int>(type);
  if (index >= 0 && index < kDeviceTypes) Managers()[index].store(manager, std::memory_order_release);
}

}  // namespace tesscpp::core
