// result.h: Result<T>, a value or the Status that explains why there is none.
//
//   tesscpp::Result<Dtype> DtypeFromName(std::string_view name);
//
//   tesscpp::Status Use() {
//     TESS_ASSIGN_OR_RETURN(Dtype dtype, DtypeFromName("float32"));
//     ...
//   }
//
// std::expected is not usable with clang 14 + libstdc++ 12, so
// this is a small variant-based equivalent in the style of arrow::Result.
#pragma once

#include <cstdlib>
#include <iostream>
#include <type_traits>
#include <utility>
#include <variant>

#include "tesscpp/status.h"

namespace tesscpp {

/// \brief Holds either a T or a non-OK Status.
///
/// Accessing the value of an error Result aborts with the status printed: that is
/// a programming error, checked always (not only in debug builds).
template <typename T>
class [[nodiscard]] Result {
  static_assert(!std::is_same_v<T, Status>, "use Status directly");

 public:
  /// \brief An error result. `status` must not be OK.
  Result(Status status) : storage_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    if (std::get<Status>(storage_).ok()) {
      storage_ = Status::Internal("Result constructed from an OK Status without a value");
    }
  }
  /// \brief A value result.
  Result(T value) : storage_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  /// \brief A value result from anything T is constructible from.
  template <typename U,
            typename = std::enable_if_t<
                std::is_constructible_v<T, U&&> && !std::is_same_v<std::decay_t<U>, T> &&
                !std::is_same_v<std::decay_t<U>, Status> && !std::is_same_v<std::decay_t<U>, Result>>>
  // NOLINTNEXTLINE(google-explicit-constructor)
  Result(U&& value) : storage_(std::in_place_type<T>, std::forward<U>(value)) {}

  bool ok() const noexcept { return std::holds_alternative<T>(storage_); }

  /// \brief OK if a value is held, the error otherwise.
  Status status() const { return ok() ? Status::OK() : std::get<Status>(storage_); }

  const T& value() const& { return CheckedValue(); }
  T& value() & { return const_cast<T&>(CheckedValue()); }
  T&& value() && { return std::move(const_cast<T&>(CheckedValue())); }

  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

  /// \brief The value, or `fallback` when this is an error.
  T value_or(T fallback) const& { return ok() ? std::get<T>(storage_) : std::move(fallback); }

 private:
  const T& CheckedValue() const {
    if (!ok()) {
      std::cerr << "tesscpp: value() of an error Result: " << std::get<Status>(storage_) << "\n";
      std::abort();
    }
    return std::get<T>(storage_);
  }

  std::variant<Status, T> storage_;
};

}  // namespace tesscpp

#define TESS_CONCAT_IMPL(a, b) a##b
#define TESS_CONCAT(a, b) TESS_CONCAT_IMPL(a, b)

/// \brief Evaluates `rexpr` (a Result<T>); on error returns its Status from the
/// enclosing function, otherwise moves the value into `lhs` (a declaration or an
/// existing variable).
#define TESS_ASSIGN_OR_RETURN(lhs, rexpr) \
  TESS_ASSIGN_OR_RETURN_IMPL(TESS_CONCAT(tess_result_, __LINE__), lhs, rexpr)

// `lhs` may be a declaration ("Dtype d"), so it cannot be parenthesised.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define TESS_ASSIGN_OR_RETURN_IMPL(result_name, lhs, rexpr) \
  auto result_name = (rexpr);                               \
  if (!result_name.ok()) return result_name.status();       \
  lhs = std::move(result_name).value()
// NOLINTEND(bugprone-macro-parentheses)
