// Helpers shared by the ops tests.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>

#include "autograd/autograd.h"
#include "tensor/creation.h"
#include "tensor/random.h"
#include "tests/autograd/test_util.h"

namespace aclgrad::testing {

/// A float64 leaf that requires grad, uniform in [lo, hi), reproducible from seed.
inline Tensor uniform_var(const Shape& shape, double lo, double hi, uint64_t seed) {
  Generator gen(seed);
  Tensor t = rand(shape, Dtype::Float64, &gen);
  Tensor out = empty(shape, Dtype::Float64);
  const std::vector<double> v = t.to_vector<double>();
  for (int64_t i = 0; i < out.numel(); ++i) out.data_ptr<double>()[i] = lo + (hi - lo) * v[i];
  out.requires_grad_();
  return out;
}

/// gradcheck and gradgradcheck of fn at inputs (both throw a descriptive error on failure).
template <typename F>
void expect_gradients_correct(F fn, const autograd::tensor_list& inputs, bool second = true) {
  EXPECT_NO_THROW(EXPECT_TRUE(autograd::gradcheck(fn, inputs)));
  if (second) {
    EXPECT_NO_THROW(EXPECT_TRUE(autograd::gradgradcheck(fn, inputs)));
  }
}

}  // namespace aclgrad::testing
