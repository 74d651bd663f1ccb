// status.h: the error vocabulary of tesscpp.
//
// Every function that can fail across a module boundary returns a Status (or a
// Result<T>, see result.h). A Status is either OK or carries a code and a message
// that names what was wrong ("inputs.a: dtype 'float8' is not one of ...").
// Codes map to HTTP statuses and to Python exceptions in one table each (see
// docs/architecture.md). No exception crosses a module boundary.
//
//   tesscpp::Status Check(int n) {
//     if (n < 0) return tesscpp::Status::InvalidArgument("n must be >= 0, got ", n);
//     return tesscpp::Status::OK();
//   }
#pragma once

#include <memory>
#include <ostream>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>

namespace tesscpp {

/// \brief What kind of failure a Status reports. Stable: each code has one
/// HTTP status and one Python exception per context.
enum class StatusCode : int {
  kOk = 0,
  kInvalidArgument,    ///< the caller passed something malformed (a bad path, a bad option)
  kDecodeError,        ///< wire data could not be decoded (base64, lz4, JSON, array bytes)
  kValidationError,    ///< data decoded but does not fit its schema
  kNotFound,           ///< a named thing (file, key, endpoint) does not exist
  kOutOfRange,         ///< a size, index or value outside what is representable or allowed
  kUnimplemented,      ///< the feature exists in the protocol but not in this build or component
  kNotAcceptable,      ///< an encoding or content type the peer cannot produce
  kPayloadTooLarge,    ///< a body or array above a configured limit
  kIoError,            ///< an operating-system call failed
  kResourceExhausted,  ///< memory could not be obtained
  kDeadlineExceeded,   ///< a timeout expired
  kUnavailable,        ///< the peer could not be reached
  kInternal,           ///< a broken invariant inside tesscpp
};

/// \brief The lowercase name of a code ("invalid_argument", ...).
std::string_view StatusCodeName(StatusCode code);

/// \brief Structured information a Status can carry beside its message (Arrow's
/// StatusDetail idiom): e.g. the list of pydantic-shaped validation issues that
/// the runtime turns into a 422 body. Immutable once attached.
class StatusDetail {
 public:
  virtual ~StatusDetail() = default;
  /// \brief A stable name of the detail's type, to recognise it.
  virtual std::string_view type_id() const = 0;
  virtual std::string ToString() const = 0;
};

/// \brief The outcome of an operation: OK, or a code with a message.
///
/// Cheap to copy and move: an OK status holds no allocation; an error shares its
/// immutable state between copies. Thread-compatible.
class [[nodiscard]] Status {
 public:
  /// \brief Constructs OK.
  Status() noexcept = default;
  /// \brief Constructs an error; `code` must not be kOk.
  Status(StatusCode code, std::string message);

  static Status OK() noexcept { return Status(); }

  /// \name Error factories. The arguments are streamed into the message.
  /// @{
  template <typename... Args>
  static Status InvalidArgument(Args&&... args) {
    return Make(StatusCode::kInvalidArgument, std::forward<Args>(args)...);
  }
  template <typename... Args>
  static Status DecodeError(Args&&... args) {
    return Make(StatusCode::kDecodeError, std::forward<Args>(args)...);
  }
  template <typename... Args>
  static Status ValidationError(Args&&... args) {
    return Make(StatusCode::kValidationError, std::forward<Args>(args)...);
  }
  template <typename... Args>
  static Status NotFound(Args&&... args) {
    return Make(StatusCode::kNotFound, std::forward<Args>(args)...);
  }
  template <typename... Args>
  static Status OutOfRange(Args&&... args) {
    return Make(StatusCode::kOutOfRange, std::forward<Args>(args)...);
  }
  template <typename... Args>
  static Status Unimplemented(Args&&... args) {
    return Make(StatusCode::kUnimplemented, std::forward<Args>(args)...);
  }
  template <typename... Args>
  static Status NotAcceptable(Args&&... args) {
    return Make(StatusCode::kNotAcceptable, std::forward<Args>(args)...);
  }
  template <typename... Args>
  static Status PayloadTooLarge(Args&&... args) {
    return Make(StatusCode::kPayloadTooLarge, std::forward<Args>(args)...);
  }
  template <typename... Args>
  static Status IoError(Args&&... args) {
    return Make(StatusCode::kIoError, std::forward<Args>(args)...);
  }
  template <typename... Args>
  static Status ResourceExhausted(Args&&... args) {
    return Make(StatusCode::kResourceExhausted, std::forward<Args>(args)...);
  }
  template <typename... Args>
  static Status DeadlineExceeded(Args&&... args) {
    return Make(StatusCode::kDeadlineExceeded, std::forward<Args>(args)...);
  }
  template <typename... Args>
  static Status Unavailable(Args&&... args) {
    return Make(StatusCode::kUnavailable, std::forward<Args>(args)...);
  }
  template <typename... Args>
  static Status Internal(Args&&... args) {
    return Make(StatusCode::kInternal, std::forward<Args>(args)...);
  }
  /// @}

  bool ok() const noexcept { return state_ == nullptr; }
  StatusCode code() const noexcept { return ok() ? StatusCode::kOk : state_->code; }
  /// \brief The message; empty for OK. Valid while this Status (or a copy) lives.
  const std::string& message() const noexcept;

  /// \brief A copy whose message is prefixed with `context` and ": ", e.g. the
  /// path of the field being decoded. OK stays OK. The detail is kept.
  Status WithContext(std::string_view context) const;

  /// \brief The attached detail, or nullptr.
  const std::shared_ptr<const StatusDetail>& detail() const noexcept;
  /// \brief A copy carrying `detail` (OK stays OK).
  Status WithDetail(std::shared_ptr<const StatusDetail> detail) const;

  /// \brief "OK" or "<code name>: <message>".
  std::string ToString() const;

  friend bool operator==(const Status& a, const Status& b) noexcept {
    return a.code() == b.code() && a.message() == b.message();
  }

 private:
  struct State {
    StatusCode code;
    std::string message;
    std::shared_ptr<const StatusDetail> detail;
  };

  template <typename... Args>
  static Status Make(StatusCode code, Args&&... args) {
    std::ostringstream out;
    (out << ... << std::forward<Args>(args));
    return Status(code, std::move(out).str());
  }

  std::shared_ptr<const State> state_;
};

std::ostream& operator<<(std::ostream& os, const Status& status);

}  // namespace tesscpp

/// \brief Returns from the enclosing function if `expr` (a Status) is not OK.
#define TESS_RETURN_IF_ERROR(expr)               \
  do {                                           \
    ::tesscpp::Status tess_status_ = (expr);     \
    if (!tess_status_.ok()) return tess_status_; \
  } while (false)
