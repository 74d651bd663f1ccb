// shape.cc: Shape validation and printing.
#include "tesscpp/shape.h"

#include <algorithm>

namespace tesscpp {

Result<Shape> Shape::Make(std::vector<int64_t> dims) {
  for (int64_t d : dims) {
    if (d < 0) return Status::ValidationError("shape dimension ", d, " is negative");
  }
  Shape shape;
  shape.dims_ = std::move(dims);
  if (std::find(shape.dims_.begin(), shape.dims_.end(), 0) != shape.dims_.end()) {
    shape.num_elements_ = 0;
    return shape;
  }
  int64_t count = 1;
  for (int64_t d : shape.dims_) {
    if (count > kMaxElements / d) {
      return Status::OutOfRange("shape ", shape.ToString(), " has 2^59 elements or more");
    }
    count *= d;
  }
  shape.num_elements_ = count;
  return shape;
}

std::string FormatShape(std::span<const int64_t> dims) {
  std::string out = "(";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(dims[i]);
  }
  if (dims.size() == 1) out += ",";
  out += ")";
  return out;
}

}  // namespace tesscpp
