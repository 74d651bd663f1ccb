// cuda.h: CUDA devices and device memory as tesscpp sees them.
//
// Everything here works in every build: a build without CUDA (TESSCPP_CUDA off)
// or a process without a usable device gets a Status that says which, never a
// fake success. Devices are named by UUID on the wire (ordinals differ between
// processes and containers) and by ordinal inside a process.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "tesscpp/result.h"
#include "tesscpp/tensor.h"

namespace tesscpp::cuda {

/// \brief True when this build was compiled with CUDA support.
bool BuiltWithCuda();

/// \brief OK when CUDA is compiled in and the process sees at least one device;
/// otherwise kUnimplemented ("built without CUDA") or kUnavailable with the
/// driver's reason.
Status CheckAvailable();

/// \brief Number of devices this process sees (errors as CheckAvailable).
Result<int> DeviceCount();

/// \brief The calling thread's current device (cudaGetDevice).
Result<int> CurrentDevice();

/// \brief The device's UUID in the form tesseract-core 1.15 puts on the wire:
/// 36 lowercase characters 8-4-4-4-12, no "GPU-" prefix (cuDeviceGetUuid_v2,
/// which names the MIG instance on a MIG device).
Result<std::string> DeviceUuid(int ordinal);

/// \brief The ordinal of the visible device with this UUID; kUnavailable naming
/// the UUID when this process cannot see it.
Result<int> OrdinalOfUuid(std::string_view uuid);

/// \brief The ordinal of the device whose memory `data` points into (for
/// producers that do not say, such as the CUDA array interface).
Result<int> DeviceOfPointer(const void* data);

/// \brief Orders the legacy default stream of device `ordinal` after the work
/// queued so far on `stream` (a cudaStream_t as an integer; 1 names the legacy
/// default stream itself), on the GPU: an event recorded on `stream` that the
/// legacy stream waits for, so the host never blocks. Everything tesscpp does
/// with device memory is ordered after the legacy stream (its copies run there
/// or synchronise the device), and so is a component's work on the default or
/// any blocking stream.
Status OrderAfterStream(uintptr_t stream, int ordinal);

/// \brief The converse: orders `stream` after the work queued so far on the
/// legacy default stream of device `ordinal`, on the GPU. For a consumer on
/// its own stream (a DLPack consumer naming it, such as JAX's) of bytes that
/// are ready in the legacy stream's order (inputs a server received with the
/// client's IPC event, docs/gpu-transport-protocol.md 12).
Status OrderStreamAfterLegacy(uintptr_t stream, int ordinal);

/// \brief Waits until all work on device `ordinal` is done (for producers
/// whose stream is unknown).
Status SynchronizeDevice(int ordinal);

/// \brief A point on the legacy default stream of a device, taken when it is
/// made: reached once the work queued there before it is done. That includes
/// work queued earlier on blocking streams (the legacy stream waits for them)
/// but not on non-blocking ones (torch's side streams, XLA's), as with torch's
/// rule that memory used on another stream is recorded there. An event, so
/// waiting for it never waits for the rest of the device.
class StreamMark {
 public:
  /// \brief Marks the legacy default stream of device `ordinal` now.
  static Result<StreamMark> OnLegacyStream(int ordinal);
  /// \brief Whether the work before the mark is done (never blocks).
  Result<bool> Reached() const;
  /// \brief Blocks the calling thread until the work before the mark is done.
  Status Wait() const;

 private:
  explicit StreamMark(std::shared_ptr<void> event) : event_(std::move(event)) {}
  std::shared_ptr<void> event_;  // the CUDA event, destroyed with the last copy
};

/// \brief A C-contiguous tensor of uninitialised device memory on `ordinal`,
/// from the process's device pool (reused buffers are safe: the pool waits for
/// the device before handing one out again).
Result<Tensor> AllocateDevice(Dtype dtype, Shape shape, int ordinal);

/// \brief A copy of a host tensor on device `ordinal` (finished when this returns).
Result<Tensor> CopyToDevice(const Tensor& tensor, int ordinal);

/// \brief Enqueues a copy of `nbytes` from device memory `source` to device
/// memory `destination` (device `ordinal`, or a peer of it) on `stream` (a
/// cudaStream_t as an integer; 1 names the legacy default stream) and returns
/// at once: both ranges must stay alive until the stream has run the copy.
Status CopyOnDeviceAsync(void* destination, const void* source, int64_t nbytes, int ordinal,
                         uintptr_t stream);

/// \brief Copies `nbytes` of device memory `source` into host memory
/// `destination` after the work queued so far on `stream` (its writers'
/// stream), and waits for that stream only, never the whole device.
Status CopyToHostAfterStream(void* destination, const void* source, int64_t nbytes, int ordinal,
                             uintptr_t stream);

/// \brief Copies `nbytes` of host memory `source` into device memory
/// `destination` after the work queued so far on `stream`, and waits for that
/// stream only (the source may be reused when this returns).
Status CopyToDeviceOnStream(void* destination, const void* source, int64_t nbytes, int ordinal,
                            uintptr_t stream);

/// \brief Share of each device's memory that each of the two IPC pools (export
/// staging, import destinations) may keep idle, halved per pool as in
/// tesseract-core (`cuda_ipc_pool_fraction`, default 0.25; clamped to [0, 1]).
/// Takes effect for devices the pools have not used yet.
void SetPoolFraction(double fraction);

}  // namespace tesscpp::cuda
