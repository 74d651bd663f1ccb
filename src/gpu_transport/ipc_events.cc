// ipc_events.cc: the IPC-event extension's header grammar, recorded and waited for.
#include "gpu_transport/ipc_events.h"

#include "codec/base64.h"
#include "gpu_transport/cuda_ipc_buffer.h"

namespace tesscpp::gpu_transport {

std::string FormatIpcEvents(const std::vector<cuda::IpcEvent>& events) {
  std::string text;
  for (const cuda::IpcEvent& event : events) {
    if (!text.empty()) text += ',';
    text += event.device_uuid + ":" + codec::Base64String(event.handle);
  }
  return text;
}

Result<std::vector<cuda::IpcEvent>> ParseIpcEvents(std::string_view text) {
  std::vector<cuda::IpcEvent> events;
  for (std::string_view item : SplitFields(text, ',')) {
    const std::vector<std::string_view> fields = SplitFields(item, ':');
    if (fields.size() != 2) {
      return Status::ValidationError("an IPC event is '<device uuid>:<handle>', got '", item, "'");
    }
    TESS_RETURN_IF_ERROR(CheckDeviceUuid(fields[0]));
    cuda::IpcEvent event;
    event.device_uuid = std::string(fields[0]);
    TESS_RETURN_IF_ERROR(DecodeIpcHandle(fields[1], event.handle));
    events.push_back(std::move(event));
  }
  return events;
}

Result<std::string> RecordIpcEvents(const std::vector<int>& devices) {
  std::vector<cuda::IpcEvent> events;
  for (int device : devices) {
    TESS_ASSIGN_OR_RETURN(cuda::IpcEvent event, cuda::RecordIpcEvent(device));
    events.push_back(std::move(event));
  }
  return FormatIpcEvents(events);
}

Status WaitForIpcEvents(std::string_view header, cuda::IpcEventWait how) {
  TESS_ASSIGN_OR_RETURN(std::vector<cuda::IpcEvent> events, ParseIpcEvents(header));
  for (const cuda::IpcEvent& event : events) TESS_RETURN_IF_ERROR(cuda::WaitIpcEvent(event, how));
  return Status::OK();
}

}  // namespace tesscpp::gpu_transport
