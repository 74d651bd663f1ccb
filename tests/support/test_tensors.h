// test_tensors.h: float64 vectors as Tensors and back, for client tests.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "tesscpp/tensor.h"
#include "tesscpp/value.h"

namespace tesscpp::testing {

/// \brief A 1-d float64 Tensor holding `values`.
inline Tensor Vector(std::vector<double> values) {
  auto t = Tensor::Allocate(Dtype::kFloat64, *Shape::Make({static_cast<int64_t>(values.size())}));
  std::copy(values.begin(), values.end(), t->data_as<double>());
  return *t;
}

/// \brief The elements of a float64 Tensor value.
inline std::vector<double> Values(const Value& v) {
  const Tensor& t = v.as_tensor();
  EXPECT_EQ(t.dtype(), Dtype::kFloat64);
  return {t.data_as<double>(), t.data_as<double>() + t.num_elements()};
}

}  // namespace tesscpp::testing
