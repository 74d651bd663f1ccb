// ipc_arrays.h: the codec's way to CUDA memory for one cuda_ipc message (internal).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tesscpp/internal/codec/device_arrays.h"
#include "tesscpp/internal/cuda/cuda_ipc.h"

namespace tesscpp::gpu_transport {

/// \brief Reads a message's cuda_ipc arrays, or exports its CUDA tensors.
/// One per message; not thread-safe.
class IpcArrays final : public DeviceArrayReader, public DeviceArrayWriter {
 public:
  /// \brief Copies the peer's bytes into CUDA tensors this process owns.
  static IpcArrays Copying() { return IpcArrays(Mode::kCopy); }
  /// \brief CUDA tensors read the peer's memory in place (cuda::BorrowIpc),
  /// for readers that finish with them before the peer may reuse it; each
  /// keeps `lease` alive (a client acknowledges the exports when the last goes).
  static IpcArrays Borrowing(std::shared_ptr<void> lease = nullptr) {
    IpcArrays arrays(Mode::kBorrow);
    arrays.lease_ = std::move(lease);
    return arrays;
  }
  /// \brief Exports CUDA tensors; what the peer may read stays in pins()
  /// until the owner of this object lets it go. VMM memory goes by reference
  /// when `vmm_peer` says the peer maps it.
  static IpcArrays Exporting(cuda::ExportOrdering ordering = cuda::ExportOrdering::kSynchronised,
                             cuda::VmmPeer vmm_peer = cuda::VmmPeer::kCannot) {
    IpcArrays arrays(Mode::kExport);
    arrays.ordering_ = ordering;
    arrays.vmm_peer_ = vmm_peer;
    return arrays;
  }

  bool Reads(std::string_view encoding) const override;
  /// \brief Parses the descriptor (cuda_ipc_buffer.h), then imports or borrows.
  Result<Tensor> Import(std::string_view encoding, std::string_view descriptor, Dtype dtype,
                        const Shape& shape) override;
  std::string_view encoding() const override;
  /// \brief Device tensors (host ones are written with the host encoding).
  bool Carries(const Tensor& tensor) const override;
  Result<std::string> Export(const Tensor& tensor) override;

  std::vector<std::shared_ptr<void>>& pins() { return pins_; }

 private:
  enum class Mode { kCopy, kBorrow, kExport };
  explicit IpcArrays(Mode mode) : mode_(mode) {}

  Mode mode_;
  std::shared_ptr<void> lease_;
  cuda::ExportOrdering ordering_ = cuda::ExportOrdering::kSynchronised;
  cuda::VmmPeer vmm_peer_ = cuda::VmmPeer::kCannot;
  std::vector<std::shared_ptr<void>> pins_;
};

}  // namespace tesscpp::gpu_transport
