// dropout: mask statistics, scaling, reproducibility from a seeded Generator, gradients, the
// identity cases and errors.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "ops/ops.h"
#include "tests/ops/ops_test_util.h"

namespace aclgrad {
namespace {

using autograd::tensor_list;
using testing::expect_gradients_correct;
using testing::expect_tensor;
using testing::message_of;
using testing::uniform_var;

TEST(Dropout, MaskFractionAndScaling) {
  constexpr int64_t n = 200000;
  const Tensor x = ones({n / 4, 4});
  for (double p : {0.1, 0.5, 0.8}) {
    SCOPED_TRACE(p);
    Generator gen(7);
    const std::vector<double> y = dropout(x, p, true, &gen).to_vector<double>();
    int64_t dropped = 0;
    for (double v : y) {
      if (v == 0) {
        ++dropped;
      } else {
        EXPECT_FLOAT_EQ(v, 1 / (1 - p));
      }
    }
    // Binomial: 5 standard deviations of the dropped fraction.
    const double sd = std::sqrt(p * (1 - p) / n);
    EXPECT_NEAR(static_cast<double>(dropped) / n, p, 5 * sd);
  }
}

TEST(Dropout, ValuesAreInputTimesMaskAndReproducibleForASeed) {
  const Tensor x = uniform_var({50, 30}, -2, 2, 1).detach();
  Generator g1(123), g2(123), g3(124);
  const Tensor a = dropout(x, 0.3, true, &g1), b = dropout(x, 0.3, true, &g2);
  EXPECT_EQ(a.to_vector<double>(), b.to_vector<double>());
  EXPECT_NE(a.to_vector<double>(), dropout(x, 0.3, true, &g3).to_vector<double>());
  // The generator advances: a second call gives a different mask.
  EXPECT_NE(a.to_vector<double>(), dropout(x, 0.3, true, &g1).to_vector<double>());
  const std::vector<double> xv = x.to_vector<double>(), av = a.to_vector<double>();
  for (size_t i = 0; i < xv.size(); ++i) {
    EXPECT_TRUE(av[i] == 0 || std::abs(av[i] - xv[i] / 0.7) < 1e-15) << i;
  }
  // The default generator follows manual_seed; a non-contiguous input uses row-major order.
  manual_seed(99);
  const Tensor d1 = dropout(x.t(), 0.5);
  manual_seed(99);
  EXPECT_EQ(d1.to_vector<double>(), dropout(x.t().contiguous(), 0.5).to_vector<double>());
  Generator h(5);
  EXPECT_EQ(dropout(x.to(Dtype::Float32), 0.5, true, &h).dtype(), Dtype::Float32);
}

TEST(Dropout, GradientIsMaskTimesScale) {
  Tensor x = uniform_var({40, 25}, -1, 1, 2);
  Generator gen(11);
  const Tensor y = dropout(x, 0.4, true, &gen);
  EXPECT_STREQ(y.grad_fn()->name(), "DropoutBackward");
  const Tensor g = uniform_var({40, 25}, -1, 1, 3).detach();
  y.backward(g);
  const std::vector<double> yv = y.to_vector<double>(), gv = g.to_vector<double>();
  const std::vector<double> dx = x.grad().to_vector<double>();
  for (size_t i = 0; i < yv.size(); ++i) {
    EXPECT_EQ(dx[i], yv[i] == 0 ? 0.0 : gv[i] / 0.6) << i;
  }
  // gradcheck with a fixed mask: reseed inside fn so every evaluation draws the same one.
  Tensor z = uniform_var({6, 5}, -1, 1, 4);
  expect_gradients_correct(
      [](const tensor_list& in) {
        Generator fixed(21);
        return dropout(in[0], 0.3, true, &fixed);
      },
      {z});
}

TEST(Dropout, IdentityAndZeroCases) {
  Tensor x = uniform_var({3, 4}, -1, 1, 5);
  EXPECT_EQ(dropout(x, 0.5, false).impl(), x.impl());  // eval: x itself
  EXPECT_EQ(dropout(x, 0.0, true).impl(), x.impl());   // p = 0: x itself
  const Tensor z = dropout(x, 1.0, true);
  expect_tensor(z, {3, 4}, std::vector<double>(12, 0.0), 0);
  sum(z).backward();
  expect_tensor(x.grad(), {3, 4}, std::vector<double>(12, 0.0), 0);
  EXPECT_EQ(dropout(zeros({0, 3}), 0.5).sizes(), Shape({0, 3}));
}

TEST(Dropout, Errors) {
  const Tensor x = zeros({2, 2});
  auto has = [](const std::string& m, const std::string& want) {
    EXPECT_NE(m.find(want), std::string::npos) << m;
  };
  has(message_of<Error>([&] { dropout(x, 1.5); }),
      "dropout: dropout probability has to be between 0 and 1, but got 1.5");
  has(message_of<Error>([&] { dropout(x, -0.5); }),
      "dropout: dropout probability has to be between 0 and 1, but got -0.5");
  has(message_of<Error>([&] { dropout(x, std::nan("")); }), "but got nan");
  has(message_of<DtypeError>([&] { dropout(zeros({2}, Dtype::Int64), 0.5); }),
      "dropout: expected a floating point dtype, got int64");
}

}  // namespace
}  // namespace aclgrad
