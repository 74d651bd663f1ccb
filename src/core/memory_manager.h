// memory_manager.h: MemoryManager, how bytes the host cannot read reach it.
//
// A Tensor knows its Device; the memory of each device type has one manager,
// registered by the layer that drives that device (the cuda layer, as
// libtesscpp loads), so Tensor::ViewOrCopyToHost copies device bytes for
// whoever must write an array on the host (the codecs, the runtime's fallback
// for components that take host arrays only, the bindings) without any of them
// naming a device API. Arrow's MemoryManager, cut to the one operation tesscpp
// needs and looked up by device type rather than carried by every buffer: a
// tensor's device already says whose memory it is, however it was wrapped.
#pragma once

#include "tesscpp/buffer.h"
#include "tesscpp/device.h"
#include "tesscpp/result.h"

namespace tesscpp::core {

class MemoryManager {
 public:
  virtual ~MemoryManager() = default;

  /// \brief A host copy of `bytes`, memory of `device`, ordered after every
  /// writer of it the manager can see.
  virtual Result<Buffer> CopyToHost(const Buffer& bytes, Device device) const = 0;

 protected:
  MemoryManager() = default;
  MemoryManager(const MemoryManager&) = delete;
  MemoryManager& operator=(const MemoryManager&) = delete;
};

/// \brief The manager of `type`'s memory; null when none is registered (a
/// host type, or a process without the layer that drives the device).
const MemoryManager* MemoryManagerOf(DeviceType type);

/// \brief Registers (or, with null, removes) the manager of `type`'s memory.
/// The manager must outlive every later copy: a static object of its layer.
void SetMemoryManager(DeviceType type, const MemoryManager* manager);

}  // namespace tesscpp::core
