// status.cc: Status construction, printing and code names.
#include "tesscpp/status.h"

namespace tesscpp {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "ok";
    case StatusCode::kInvalidArgument: return "invalid_argument";
    case StatusCode::kDecodeError: return "decode_error";
    case StatusCode::kValidationError: return "validation_error";
    case StatusCode::kNotFound: return "not_found";
    case StatusCode::kOutOfRange: return "out_of_range";
    case StatusCode::kUnimplemented: return "unimplemented";
    case StatusCode::kNotAcceptable: return "not_acceptable";
    case StatusCode::kPayloadTooLarge: return "payload_too_large";
    case StatusCode::kIoError: return "io_error";
    case StatusCode::kResourceExhausted: return "resource_exhausted";
    case StatusCode::kDeadlineExceeded: return "deadline_exceeded";
    case StatusCode::kUnavailable: return "unavailable";
    case StatusCode::kInternal: return "internal";
  }
  return "unknown";
}

Status::Status(StatusCode code, std::string message) {
  if (code == StatusCode::kOk) return;  // an OK status carries no message
  state_ = std::make_shared<const State>(State{code, std::move(message), nullptr});
}

const std::string& Status::message() const noexcept {
  static const std::string kEmpty;
  return ok() ? kEmpty : state_->message;
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  std::string message(context);
  message += ": ";
  message += state_->message;
  return Status(state_->code, std::move(message)).WithDetail(state_->detail);
}

const std::shared_ptr<const StatusDetail>& Status::detail() const noexcept {
  static const std::shared_ptr<const StatusDetail> kNone;
  return ok() ? kNone : state_->detail;
}

Status Status::WithDetail(std::shared_ptr<const StatusDetail> detail) const {
  if (ok()) return *this;
  Status out;
  out.state_ = std::make_shared<const State>(State{state_->code, state_->message, std::move(detail)});
  return out;
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string out(StatusCodeName(state_->code));
  out += ": ";
  out += state_->message;
  return out;
}

std::ostream& operator<<(std::ostream& os, const Status& status) { return os << status.ToString(); }

}  // namespace tesscpp
