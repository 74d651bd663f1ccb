// ipc_arrays.cc: cuda_ipc arrays read and written through the CUDA layer.
#include "gpu_transport/ipc_arrays.h"

namespace tesscpp::gpu_transport {

Result<Tensor> IpcArrays::Import(const cuda::IpcDescriptor& descriptor, Dtype dtype, const Shape& shape) {
  switch (mode_) {
    case Mode::kCopy: return cuda::ImportIpc(descriptor, dtype, shape);
    case Mode::kBorrow: return cuda::BorrowIpc(descriptor, dtype, shape, lease_);
    case Mode::kExport: break;
  }
  return Status::Internal("cuda_ipc arrays read through an exporting transport");
}

Result<cuda::IpcDescriptor> IpcArrays::Export(const Tensor& tensor) {
  if (mode_ != Mode::kExport) return Status::Internal("CUDA tensors written through a reading transport");
  return cuda::ExportIpc(tensor, pins_, ordering_, vmm_peer_);
}

}  // namespace tesscpp::gpu_transport
