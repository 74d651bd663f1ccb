// memory_manager.h: MemoryManager, how bytes the host cannot read reach it.
//
// A Buffer over device memory carries the MemoryManager of the memory that
// holds it (Arrow's Buffer/MemoryManager pair, cut to the one operation
// tesscpp needs), so whoever must write an array on the host (the codecs, the
// runtime's fallback for components that take host arrays only, the
// bindings) asks the buffer for a host copy and names no device API. Host
// buffers carry none. Managers live as long as the process: a Buffer holds a
// plain pointer to one.
#pragma once

#include "tesscpp/buffer.h"
#include "tesscpp/result.h"

namespace tesscpp {

class MemoryManager {
 public:
  virtual ~MemoryManager() = default;

  /// \brief A host copy of `bytes` (a buffer this manager's memory holds),
  /// ordered after every writer of it the manager can see.
  virtual Result<Buffer> CopyToHost(const Buffer& bytes) const = 0;

 protected:
  MemoryManager() = default;
  MemoryManager(const MemoryManager&) = delete;
  MemoryManager& operator=(const MemoryManager&) = delete;
};

}  // namespace tesscpp
