// softmax / log_softmax: forward against a float64 loop reference over every dim (negative too)
// and non-contiguous inputs, stability for huge logits, NaN/-inf rows, dtypes, gradients
// (hand-computed, gradcheck, gradgradcheck) and errors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "ops/ops.h"
#include "tests/ops/ops_test_util.h"

namespace aclgrad {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

using autograd::tensor_list;
using testing::expect_gradients_correct;
using testing::expect_tensor;
using testing::message_of;
using testing::uniform_var;

// softmax (or log_softmax) of x along dim, from the definition, in float64 loops: every row along
// dim is read with at<double>() indexing.
Tensor ref_softmax(const Tensor& x_in, int64_t dim, bool log) {
  const Tensor x = x_in.to(Dtype::Float64);
  const int64_t d = dim < 0 ? dim + x.dim() : dim;
  Tensor out = zeros(x.sizes(), Dtype::Float64);
  const int64_t K = x.size(d), rows = x.numel() / std::max<int64_t>(K, 1);
  for (int64_t r = 0; r < rows; ++r) {
    Shape idx(x.dim());  // row r's index with dim d left at 0
    for (int64_t q = x.dim() - 1, rem = r; q >= 0; --q) {
      if (q == d) continue;
      idx[q] = rem % x.size(q);
      rem /= x.size(q);
    }
    double mx = -kInf;
    for (int64_t k = 0; k < K; ++k) mx = std::max(mx, x.at<double>((idx[d] = k, idx)));
    double s = 0;
    for (int64_t k = 0; k < K; ++k) s += std::exp(x.at<double>((idx[d] = k, idx)) - mx);
    for (int64_t k = 0; k < K; ++k) {
      idx[d] = k;
      const double v = x.at<double>(idx) - mx;
      out.at<double>(idx) = log ? v - std::log(s) : std::exp(v) / s;
    }
  }
  return out;
}

void expect_close(const Tensor& got, const Tensor& want, double tol) {
  ASSERT_EQ(got.sizes(), want.sizes());
  const std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) {
    EXPECT_NEAR(g[i], w[i], tol * (1 + std::abs(w[i]))) << "element " << i;
  }
}

Tensor apply(bool log, const Tensor& x, int64_t dim) {
  return log ? log_softmax(x, dim) : softmax(x, dim);
}

TEST(Softmax, ForwardMatchesTheFloat64ReferenceOnEveryDim) {
  const Tensor x = uniform_var({3, 4, 5}, -5, 5, 1).detach();
  const Tensor xt = uniform_var({5, 4, 3}, -5, 5, 2).detach().permute({2, 1, 0});  // strided
  for (bool log : {false, true}) {
    for (int64_t dim : {0, 1, 2, -1, -3}) {
      SCOPED_TRACE(std::string(log ? "log_softmax" : "softmax") + " dim " + std::to_string(dim));
      expect_close(apply(log, x, dim), ref_softmax(x, dim, log), 1e-14);
      expect_close(apply(log, xt, dim), ref_softmax(xt, dim, log), 1e-14);
      const Tensor y32 = apply(log, x.to(Dtype::Float32), dim);
      EXPECT_EQ(y32.dtype(), Dtype::Float32);
      expect_close(y32, ref_softmax(x, dim, log), 1e-6);
      const Tensor yh = apply(log, x.to(Dtype::Float16), dim);
      EXPECT_EQ(yh.dtype(), Dtype::Float16);
      expect_close(yh, ref_softmax(x.to(Dtype::Float16), dim, log), 2e-3);
    }
  }
}

TEST(Softmax, HandComputedAndStableForHugeLogits) {
  // softmax([0, ln 3]) = [1/4, 3/4]; log_softmax = [-ln 4, ln 3 - ln 4].
  expect_tensor(softmax(tensor({0.0, std::log(3.0)}), 0), {2}, {0.25, 0.75}, 1e-15);
  expect_tensor(log_softmax(tensor({0.0, std::log(3.0)}), 0), {2},
                {-std::log(4.0), std::log(3.0) - std::log(4.0)}, 1e-15);
  // exp(1000) overflows; the max-subtracted form does not: [1000, 1000 - ln 3] -> [3/4, 1/4].
  expect_tensor(softmax(tensor({1000.0, 1000.0 - std::log(3.0)}), 0), {2}, {0.75, 0.25}, 1e-12);
  // float32 too (1000 - ln 3 rounds to a float32 step of 6e-5, hence the tolerance).
  expect_tensor(softmax(tensor({1000.f, 1000.f - std::log(3.f)}), 0), {2}, {0.75, 0.25}, 2e-5);
  expect_tensor(log_softmax(tensor({-1000.0, 0.0}), 0), {2}, {-1000, 0}, 1e-12);
  // Rows sum to 1 along dim 0 of a [3, 2] tensor.
  const Tensor y = softmax(tensor({1.0, 2.0, 3.0, 4.0, 5.0, 6.0}, {3, 2}), 0);
  expect_tensor(sum(y, {0}), {2}, {1, 1}, 1e-15);
  // A 0-dim input is one row of one element.
  expect_tensor(softmax(tensor({5.0}, {}), 0), {}, {1});
  expect_tensor(log_softmax(tensor({5.0}, {}), -1), {}, {0});
  // Empty rows and empty tensors.
  expect_tensor(softmax(zeros({0, 3}), 1), {0, 3}, {});
}

TEST(Softmax, InfAndNanRowsFollowPyTorch) {
  // -inf entries get probability 0; an all -inf row is NaN (0/0); a NaN poisons its row only.
  expect_tensor(softmax(tensor({-kInf, 0.0, 0.0}), 0), {3}, {0, 0.5, 0.5});
  const std::vector<double> v =
      softmax(tensor({-kInf, -kInf, kNan, 1.0, 2.0, 2.0}, {3, 2}), 1).to_vector<double>();
  EXPECT_TRUE(std::isnan(v[0]) && std::isnan(v[1]) && std::isnan(v[2]) && std::isnan(v[3]));
  EXPECT_DOUBLE_EQ(v[4], 0.5);
  EXPECT_DOUBLE_EQ(v[5], 0.5);
  const std::vector<double> l = log_softmax(tensor({-kInf, 0.0}), 0).to_vector<double>();
  EXPECT_EQ(l[0], -kInf);
  EXPECT_EQ(l[1], 0.0);
}

TEST(Softmax, HandGradients) {
  // y = softmax([0, ln 3]) = [1/4, 3/4]; L = y_0: dL/dx = y_0 (e_0 - y) = [3/16, -3/16].
  Tensor x = tensor({0.0, std::log(3.0)});
  x.requires_grad_();
  select(softmax(x, 0), 0, 0).backward();
  expect_tensor(x.grad(), {2}, {3.0 / 16, -3.0 / 16}, 1e-15);
  // L = log_softmax(x)_1: dL/dx = e_1 - y = [-1/4, 1/4].
  x.zero_grad();
  select(log_softmax(x, 0), 0, 1).backward();
  expect_tensor(x.grad(), {2}, {-0.25, 0.25}, 1e-15);
  EXPECT_STREQ(softmax(x, 0).grad_fn()->name(), "SoftmaxBackward");
  EXPECT_STREQ(log_softmax(x, 0).grad_fn()->name(), "LogSoftmaxBackward");
}

TEST(Softmax, GradientsPassGradcheckAndGradgradcheck) {
  Tensor x = uniform_var({2, 3, 4}, -2, 2, 10);
  Tensor xt = uniform_var({4, 3}, -2, 2, 11).detach().t();
  xt.requires_grad_();
  // A weight so that the loss is not invariant (sum(softmax) = 1 would hide errors).
  const Tensor w = uniform_var({2, 3, 4}, -1, 1, 12).detach();
  for (bool log : {false, true}) {
    for (int64_t dim : {0, 1, -1}) {
      SCOPED_TRACE(std::string(log ? "log_softmax" : "softmax") + " dim " + std::to_string(dim));
      expect_gradients_correct([&](const tensor_list& in) { return apply(log, in[0], dim); }, {x});
      expect_gradients_correct(
          [&](const tensor_list& in) { return mul(apply(log, in[0], dim), w); }, {x});
      expect_gradients_correct([&](const tensor_list& in) { return apply(log, in[0], dim); }, {xt});
    }
    Tensor s = uniform_var({}, -1, 1, 13);
    expect_gradients_correct([&](const tensor_list& in) { return apply(log, in[0], 0); }, {s});
  }
}

TEST(Softmax, Errors) {
  const std::string m = message_of<IndexError>([] { softmax(zeros({2, 3}), 2); });
  EXPECT_NE(m.find("softmax: dimension 2 is out of range for a tensor of 2 dims"),
            std::string::npos)
      << m;
  const std::string l = message_of<IndexError>([] { log_softmax(zeros({2, 3}), -3); });
  EXPECT_NE(l.find("log_softmax: dimension -3"), std::string::npos) << l;
  const std::string d = message_of<DtypeError>([] { softmax(zeros({2}, Dtype::Int64), 0); });
  EXPECT_NE(d.find("softmax: expected a floating point dtype, got int64"), std::string::npos) << d;
}

}  // namespace
}  // namespace aclgrad
