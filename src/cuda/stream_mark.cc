// stream_mark.cc: cuda::StreamMark, an event on a device's legacy default stream.
#include <cuda_runtime.h>

#include <memory>
#include <utility>

#include "cuda/cuda_api.h"
#include "tesscpp/cuda.h"

namespace tesscpp::cuda {
namespace {

const internal::CudaEvent& EventOf(const std::shared_ptr<void>& event) {
  return *static_cast<const internal::CudaEvent*>(event.get());
}

}  // namespace

Result<StreamMark> StreamMark::OnLegacyStream(int ordinal) {
  TESS_RETURN_IF_ERROR(CheckAvailable());
  // The event belongs to the device of the stream it is recorded on.
  TESS_ASSIGN_OR_RETURN(internal::DeviceGuard guard, internal::DeviceGuard::Enter(ordinal));
  TESS_ASSIGN_OR_RETURN(internal::CudaEvent event, internal::CreateEvent());
  TESS_CUDA_RETURN_IF_ERROR(cudaEventRecord(event.get(), cudaStreamLegacy));
  return StreamMark(std::make_shared<internal::CudaEvent>(std::move(event)));
}

Result<bool> StreamMark::Reached() const {
  const cudaError_t state = cudaEventQuery(EventOf(event_).get());
  if (state == cudaErrorNotReady) {
    (void)cudaGetLastError();  // not an error: leave none pending for the next call to find
    return false;
  }
  TESS_CUDA_RETURN_IF_ERROR(state);
  return true;
}

Status StreamMark::Wait() const {
  return internal::CudaStatus(cudaEventSynchronize(EventOf(event_).get()), "cudaEventSynchronize");
}

}  // namespace tesscpp::cuda
