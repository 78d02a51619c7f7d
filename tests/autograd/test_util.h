// Helpers shared by the autograd and ops tests.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace aclgrad::testing {

/// Runs f, expects it to throw E (or a subclass), and returns what(); records a test failure
/// when nothing or something else is thrown.
template <typename E, typename F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw a different exception type: " << e.what();
    return {};
  }
  ADD_FAILURE() << "did not throw";
  return {};
}

/// Elements of t as doubles, row-major.
inline std::vector<double> values(const Tensor& t) {
  return t.to_vector<double>();
}

/// Expects t to have the given shape and values (within tol).
inline void expect_tensor(const Tensor& t, const Shape& shape, const std::vector<double>& want,
                          double tol = 1e-6) {
  ASSERT_TRUE(t.defined());
  ASSERT_EQ(t.sizes(), shape);
  const std::vector<double> got = values(t);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}

}  // namespace aclgrad::testing
