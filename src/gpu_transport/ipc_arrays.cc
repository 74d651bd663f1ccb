// ipc_arrays.cc: cuda_ipc arrays read and written through the CUDA layer.
#include "gpu_transport/ipc_arrays.h"

#include "gpu_transport/cuda_ipc_buffer.h"

namespace tesscpp::gpu_transport {

bool IpcArrays::Reads(std::string_view encoding) const { return encoding == kCudaIpcName; }

Result<Tensor> IpcArrays::Import(std::string_view /*encoding*/, std::string_view descriptor, Dtype dtype,
                                 const Shape& shape) {
  TESS_ASSIGN_OR_RETURN(const cuda::IpcDescriptor parsed, ParseCudaIpcBuffer(descriptor));
  switch (mode_) {
    case Mode::kCopy: return cuda::ImportIpc(parsed, dtype, shape);
    case Mode::kBorrow: return cuda::BorrowIpc(parsed, dtype, shape, lease_);
    case Mode::kExport: break;
  }
  return Status::Internal("cuda_ipc arrays read through an exporting transport");
}

std::string_view IpcArrays::encoding() const { return kCudaIpcName; }

bool IpcArrays::Carries(const Tensor& tensor) const { return !tensor.device().host_accessible(); }

Result<std::string> IpcArrays::Export(const Tensor& tensor) {
  if (mode_ != Mode::kExport) return Status::Internal("CUDA tensors written through a reading transport");
  TESS_ASSIGN_OR_RETURN(const cuda::IpcDescriptor descriptor,
                        cuda::ExportIpc(tensor, pins_, ordering_, vmm_peer_));
  return FormatCudaIpcBuffer(descriptor);
}

}  // namespace tesscpp::gpu_transport
