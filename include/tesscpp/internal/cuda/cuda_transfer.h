// cuda_transfer.h: host-to-device copies through pinned staging on a stream of
// the calling thread's own (spdl's transfer_tensor_h2d, in C++).
//
// Pinned sources are copied by DMA directly. Pageable sources are cut into
// slot-sized jobs (many small copies share a slot, one batched DMA) that a
// pool of threads copies into pinned slots of their own, each starting its
// slot's DMA while it fills the next: one thread's memcpy runs at about 8 GB/s
// against 55 GB/s of PCIe Gen5 on an H200. The consumer stream is made to wait
// for the copies on the GPU, never the host.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "tesscpp/result.h"

namespace tesscpp::cuda {

/// \brief One contiguous host range and the device range it goes to.
struct HostToDeviceCopy {
  const void* source = nullptr;
  void* destination = nullptr;  ///< device memory on the transfer's device
  int64_t nbytes = 0;
};

/// \brief Completion of one transfer: Wait() blocks until its copies are done
/// on the device (pinned sources may then be reused or freed).
class TransferDone {
 public:
  virtual ~TransferDone() = default;
  virtual Status Wait() = 0;
};

/// \brief Enqueues `copies` on the calling thread's transfer stream of `device`
/// (page-locked sources, as the driver reports them, by DMA directly) and makes `consumer_stream` (a
/// cudaStream_t as an integer; 0 is the legacy default stream) wait for them. Pageable sources have been read
/// when this returns; pinned sources must stay alive and unchanged until the returned TransferDone says so.
/// On a failure the copies already submitted are waited for before the error is returned, so no copy still
/// touches the buffers.
Result<std::unique_ptr<TransferDone>> CopyHostToDevice(std::span<const HostToDeviceCopy> copies, int device,
                                                       uintptr_t consumer_stream);

/// \brief The calling thread's transfer stream of `device` (a cudaStream_t as
/// an integer), which CopyHostToDevice enqueues on. Destinations are allocated
/// for that stream (torch: under torch.cuda.ExternalStream of it), so that an
/// allocator does not hand them memory still used on the consumer stream, and
/// their later use there is recorded (record_stream) before they are freed.
Result<uintptr_t> TransferStream(int device);

}  // namespace tesscpp::cuda
