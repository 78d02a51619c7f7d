// Reductions: sum/mean/max/min values (hand-computed), indices and tie rules, gradients.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ops/ops.h"
#include "tests/ops/ops_test_util.h"

namespace aclgrad {
namespace {

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

using autograd::tensor_list;
using testing::expect_gradients_correct;
using testing::expect_tensor;
using testing::message_of;
using testing::uniform_var;

// [[[0, 1, 2], [3, 4, 5]], [[6, 7, 8], [9, 10, 11]]]
Tensor iota234() {
  return arange(12, Dtype::Float64).view({2, 2, 3});
}

TEST(Reduction, SumAndMeanValues) {
  const Tensor x = iota234();
  expect_tensor(sum(x), {}, {66});
  expect_tensor(sum(x, {0}), {2, 3}, {6, 8, 10, 12, 14, 16});
  expect_tensor(sum(x, {-1}, true), {2, 2, 1}, {3, 12, 21, 30});
  expect_tensor(sum(x, {0, 2}), {2}, {0 + 1 + 2 + 6 + 7 + 8, 3 + 4 + 5 + 9 + 10 + 11});
  expect_tensor(mean(x), {}, {5.5});
  expect_tensor(mean(x, {1}), {2, 3}, {1.5, 2.5, 3.5, 7.5, 8.5, 9.5});
  // Non-contiguous input, unsorted dims, keepdim.
  expect_tensor(mean(x.transpose(0, 2), {2, 0}, true), {1, 2, 1}, {4, 7});
  EXPECT_TRUE(std::isnan(mean(zeros({0})).item<double>()));
  expect_tensor(sum(zeros({2, 0}), {1}), {2}, {0, 0});
}

TEST(Reduction, Float32SumsAccumulateInDouble) {
  const Tensor x = full({1000000}, 0.1f);
  // 0.1f is 0.100000001490116...; a float32 running sum would drift by about 1%.
  EXPECT_EQ(sum(x).item<float>(), static_cast<float>(1000000 * static_cast<double>(0.1f)));
  EXPECT_EQ(sum(ones({3}, Dtype::BFloat16)).dtype(), Dtype::BFloat16);
  EXPECT_EQ(sum(ones({3}, Dtype::BFloat16)).item<float>(), 3.0f);
}

TEST(Reduction, BadDimsAreRejected) {
  const Tensor x = iota234();
  const std::string msg = message_of<IndexError>([&] { sum(x, {1, -2}); });
  EXPECT_NE(msg.find("sum: dim 1 appears more than once"), std::string::npos) << msg;
  EXPECT_THROW(sum(x, {3}), IndexError);
  EXPECT_THROW(sum(x, {}), IndexError);
  EXPECT_THROW(max(x, 3), IndexError);
  EXPECT_THROW(max(zeros({2, 0}), 1), IndexError);
  EXPECT_THROW(max(zeros({0})), IndexError);
}

TEST(Reduction, SumAndMeanHandGradients) {
  Tensor x = uniform_var({2, 3}, -1, 1, 21);
  sum(mean(x, {1}) * tensor({1.0, 2.0}, {2})).backward();
  const double t = 1.0 / 3, s = 2.0 / 3;
  expect_tensor(x.grad(), {2, 3}, {t, t, t, s, s, s}, 1e-15);
}

TEST(Reduction, SumMeanSumToBroadcastToPassGradcheckAndGradgradcheck) {
  Tensor x = uniform_var({2, 3, 4}, -1, 1, 22);
  expect_gradients_correct([](const tensor_list& in) { return sum(in[0]); }, {x});
  expect_gradients_correct([](const tensor_list& in) { return mean(in[0]); }, {x});
  expect_gradients_correct([](const tensor_list& in) { return sum(in[0], {0, 2}); }, {x});
  expect_gradients_correct([](const tensor_list& in) { return mean(in[0], {-1}, true); }, {x});
  // A product, so the second derivative is not trivially zero.
  expect_gradients_correct([](const tensor_list& in) { return sum(in[0] * in[0], {1}); }, {x});
  expect_gradients_correct([](const tensor_list& in) { return sum_to(in[0], {3, 1}); }, {x});
  Tensor y = uniform_var({3, 1}, -1, 1, 23);
  expect_gradients_correct(
      [](const tensor_list& in) {
        return broadcast_to(in[0], {2, 3, 4});
      },
      {y});
}

TEST(Reduction, SumToAndBroadcastTo) {
  const Tensor x = iota234();
  expect_tensor(sum_to(x, {2, 1}), {2, 1}, {3 + 21, 12 + 30});
  expect_tensor(sum_to(x, {3}), {3}, {18, 22, 26});
  EXPECT_EQ(sum_to(x, {2, 2, 3}).impl(), x.impl());
  EXPECT_THROW(sum_to(x, {4}), ShapeError);
  const Tensor b = broadcast_to(tensor({1.0, 2.0}, {2, 1}), {3, 2, 2});
  expect_tensor(b, {3, 2, 2}, {1, 1, 2, 2, 1, 1, 2, 2, 1, 1, 2, 2});
}

TEST(Reduction, MaxMinAlongADimReturnValuesAndFirstIndices) {
  const Tensor x = tensor({3.0, 1.0, 3.0, -2.0, 5.0, 5.0, 0.0, 0.0}, {2, 4});
  auto [v, i] = max(x, 1);
  expect_tensor(v, {2}, {3, 5});
  EXPECT_EQ(i.dtype(), Dtype::Int64);
  EXPECT_EQ(i.to_vector<int64_t>(), (std::vector<int64_t>{0, 0}));  // ties -> first
  auto [mv, mi] = min(x, 0, /*keepdim=*/true);
  expect_tensor(mv, {1, 4}, {3, 1, 0, -2});
  EXPECT_EQ(mi.sizes(), (Shape{1, 4}));
  EXPECT_EQ(mi.to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 1, 0}));
  // NaN wins, at its first position.
  auto [nv, ni] = max(tensor({1.0, kNan, 7.0, kNan}, {4}), 0);
  EXPECT_TRUE(std::isnan(nv.item<double>()));
  EXPECT_EQ(ni.item<int64_t>(), 1);
  // A non-contiguous input (transposed) along dim 0.
  auto [tv, ti] = max(x.t(), 0);
  expect_tensor(tv, {2}, {3, 5});
  EXPECT_EQ(ti.to_vector<int64_t>(), (std::vector<int64_t>{0, 0}));
  // float32 and a 0-dim input.
  auto [fv, fi] = min(x.to(Dtype::Float32), -1);
  expect_tensor(fv, {2}, {-2, 0});
  EXPECT_EQ(fi.to_vector<int64_t>(), (std::vector<int64_t>{3, 2}));
  auto [sv, si] = max(tensor({4.0}, {}), 0);
  expect_tensor(sv, {}, {4});
  EXPECT_EQ(si.item<int64_t>(), 0);
}

TEST(Reduction, MaxAlongADimSendsTheGradientToTheFirstArgmax) {
  Tensor x = tensor({3.0, 1.0, 3.0, -2.0, 5.0, 5.0}, {2, 3});
  x.requires_grad_();
  auto [v, i] = max(x, 1);
  EXPECT_STREQ(v.grad_fn()->name(), "MaxBackward");
  EXPECT_FALSE(i.requires_grad());
  sum(v * tensor({10.0, 20.0}, {2})).backward();
  expect_tensor(x.grad(), {2, 3}, {10, 0, 0, 0, 20, 0});
}

TEST(Reduction, FullMaxMinShareTheGradientAmongTies) {
  Tensor x = tensor({1.0, 4.0, 4.0, -3.0}, {2, 2});
  x.requires_grad_();
  Tensor m = max(x);
  expect_tensor(m, {}, {4});
  (m * 3.0).backward();
  expect_tensor(x.grad(), {2, 2}, {0, 1.5, 1.5, 0});
  x.zero_grad();
  min(x).backward();
  expect_tensor(x.grad(), {2, 2}, {0, 0, 0, 1});
  EXPECT_TRUE(std::isnan(max(tensor({1.0, kNan}, {2})).item<double>()));
  EXPECT_EQ(min(tensor({2.f, -1.f}, {2})).item<float>(), -1.f);
}

TEST(Reduction, MaxMinPassGradcheckAndGradgradcheck) {
  Tensor x = uniform_var({3, 4}, -1, 1, 24);  // distinct values, no ties
  for (bool keepdim : {false, true}) {
    expect_gradients_correct(
        [keepdim](const tensor_list& in) { return std::get<0>(max(in[0], 1, keepdim)); }, {x});
    expect_gradients_correct(
        [keepdim](const tensor_list& in) { return std::get<0>(min(in[0], 0, keepdim)); }, {x});
  }
  // Second derivative through a product: d/dx of max(x * x) along a dim.
  expect_gradients_correct(
      [](const tensor_list& in) { return std::get<0>(max(in[0] * in[0], -1)); }, {x});
  expect_gradients_correct([](const tensor_list& in) { return max(in[0]) * min(in[0]); }, {x});
}

}  // namespace
}  // namespace aclgrad
