// Helpers shared by the ops tests.
#pragma once

#include <gtest/gtest.h>
#include <tbb/task_arena.h>

#include <cstdint>
#include <cstring>
#include <vector>

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

/// Runs f inside a oneTBB arena of the given number of threads and returns its result (ops split
/// large tensors over the calling arena's threads).
template <typename F>
auto with_threads(int threads, F f) {
  tbb::task_arena arena(threads);
  return arena.execute(f);
}

/// The bytes of a float32 or float64 tensor, to compare results bit for bit.
inline std::vector<unsigned char> bytes_of(const Tensor& t) {
  const Tensor c = t.contiguous();
  const auto* p = static_cast<const unsigned char*>(c.data_ptr());
  return std::vector<unsigned char>(p, p + c.numel() * c.element_size());
}

}  // namespace aclgrad::testing
