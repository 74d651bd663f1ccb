// shape.h: the dimensions of an n-d array.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include "tesscpp/result.h"

namespace tesscpp {

/// \brief NumPy's tuple spelling of dimensions, as used in error messages:
/// "()", "(3,)", "(2, 3)".
std::string FormatShape(std::span<const int64_t> dims);

/// \brief Dimensions of an array, validated at construction: every dimension is
/// >= 0 and the element count times the largest item size (16 bytes) fits int64.
/// A rank-0 Shape (`Shape()`) is a scalar with one element.
class Shape {
 public:
  /// \brief The maximum number of elements any Shape may describe (2^59 - 1),
  /// so that byte sizes of every dtype (16 bytes at most) fit in int64.
  static constexpr int64_t kMaxElements = (int64_t{1} << 59) - 1;
  static_assert(kMaxElements <= INT64_MAX / 16, "the bytes of a complex128 array must fit in int64");

  /// \brief A scalar (rank 0).
  Shape() = default;

  /// \brief Validates `dims`. kValidationError for a negative dimension or an
  /// element count above kMaxElements.
  static Result<Shape> Make(std::vector<int64_t> dims);
  static Result<Shape> Make(std::initializer_list<int64_t> dims) { return Make(std::vector<int64_t>(dims)); }

  int rank() const { return static_cast<int>(dims_.size()); }
  std::span<const int64_t> dims() const { return dims_; }
  int64_t operator[](int axis) const { return dims_[static_cast<size_t>(axis)]; }
  int64_t num_elements() const { return num_elements_; }

  /// \brief FormatShape(dims()).
  std::string ToString() const { return FormatShape(dims_); }

  friend bool operator==(const Shape& a, const Shape& b) { return a.dims_ == b.dims_; }

 private:
  std::vector<int64_t> dims_;
  int64_t num_elements_ = 1;
};

}  // namespace tesscpp
