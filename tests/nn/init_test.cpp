// nn::init: PyTorch's gains and fans, bounds and sample statistics of every initialiser,
// seeding, and that initialisation records no autograd history.
#include <gtest/gtest.h>

#include <cmath>

#include "nn/nn.h"
#include "tensor/creation.h"
#include "tests/autograd/test_util.h"

namespace aclgrad {
namespace {

using namespace nn::init;  // NOLINT: the test is about this namespace
using testing::message_of;

struct Stats {
  double mean = 0, var = 0, max_abs = 0;
};

Stats stats_of(const Tensor& t) {
  const auto v = t.to_vector<double>();
  Stats s;
  for (double x : v) s.mean += x;
  s.mean /= static_cast<double>(v.size());
  for (double x : v) {
    s.var += (x - s.mean) * (x - s.mean);
    s.max_abs = std::max(s.max_abs, std::abs(x));
  }
  s.var /= static_cast<double>(v.size());
  return s;
}

TEST(Init, CalculateGainMatchesPyTorch) {
  for (const char* linear : {"linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
                             "conv_transpose2d", "conv_transpose3d", "sigmoid"})
    EXPECT_EQ(calculate_gain(linear), 1.0) << linear;
  EXPECT_DOUBLE_EQ(calculate_gain("tanh"), 5.0 / 3.0);
  EXPECT_DOUBLE_EQ(calculate_gain("relu"), std::sqrt(2.0));
  EXPECT_DOUBLE_EQ(calculate_gain("leaky_relu"), std::sqrt(2.0 / (1.0 + 0.01 * 0.01)));
  EXPECT_DOUBLE_EQ(calculate_gain("leaky_relu", std::sqrt(5.0)), std::sqrt(1.0 / 3.0));
  EXPECT_DOUBLE_EQ(calculate_gain("selu"), 0.75);
  EXPECT_NE(
      message_of<Error>([] { calculate_gain("swish"); }).find("unsupported nonlinearity 'swish'"),
      std::string::npos);
}

TEST(Init, FansFollowPyTorch) {
  EXPECT_EQ(calculate_fan_in_and_fan_out(empty({256, 400})),
            std::make_pair(int64_t{400}, int64_t{256}));
  // Conv weight [C_out, C_in, kH, kW]: receptive field 25.
  EXPECT_EQ(_calculate_fan_in_and_fan_out(empty({16, 3, 5, 5})),
            std::make_pair(int64_t{75}, int64_t{400}));
  // ConvTranspose weight [C_in, C_out / groups, k]: fan_in is size(1) * k.
  EXPECT_EQ(calculate_fan_in_and_fan_out(empty({6, 2, 3})),
            std::make_pair(int64_t{6}, int64_t{18}));
  EXPECT_NE(message_of<ShapeError>([] {
              calculate_fan_in_and_fan_out(empty({5}));
            }).find("fewer than 2 dimensions"),
            std::string::npos);
}

TEST(Init, KaimingUniformWithSqrt5IsOneOverSqrtFanIn) {
  Generator gen(1);
  Tensor w = empty({128, 400});
  kaiming_uniform_(w, std::sqrt(5.0), FanMode::FanIn, "leaky_relu", &gen);
  const Stats s = stats_of(w);
  const double bound = 1.0 / std::sqrt(400.0);
  EXPECT_LE(s.max_abs, bound);
  EXPECT_GE(s.max_abs, 0.999 * bound);
  EXPECT_NEAR(s.mean, 0.0, 3e-4);
  EXPECT_NEAR(s.var / (bound * bound / 3.0), 1.0, 0.02);
  // fan_out mode with relu: bound = sqrt(2) * sqrt(3 / fan_out).
  Tensor c = empty({64, 16, 3, 3});
  kaiming_uniform_(c, 0.0, FanMode::FanOut, "relu", &gen);
  const double b2 = std::sqrt(2.0) * std::sqrt(3.0 / (64 * 9));
  EXPECT_LE(stats_of(c).max_abs, b2);
  EXPECT_GE(stats_of(c).max_abs, 0.99 * b2);
}

TEST(Init, KaimingNormalStandardDeviation) {
  Generator gen(2);
  Tensor w = empty({200, 500}, Dtype::Float64);
  kaiming_normal_(w, 0.0, FanMode::FanIn, "relu", &gen);
  const Stats s = stats_of(w);
  const double std = std::sqrt(2.0) / std::sqrt(500.0);
  EXPECT_NEAR(s.mean, 0.0, 5e-4);
  EXPECT_NEAR(std::sqrt(s.var) / std, 1.0, 0.01);
  Tensor v = empty({300, 100});
  kaiming_normal_(v, 0.0, FanMode::FanOut, "linear", &gen);
  EXPECT_NEAR(std::sqrt(stats_of(v).var) * std::sqrt(300.0), 1.0, 0.01);
}

TEST(Init, XavierUniformAndNormal) {
  Generator gen(3);
  Tensor w = empty({300, 200});
  xavier_uniform_(w, calculate_gain("tanh"), &gen);
  const double bound = 5.0 / 3.0 * std::sqrt(6.0 / 500.0);
  EXPECT_LE(stats_of(w).max_abs, bound);
  EXPECT_GE(stats_of(w).max_abs, 0.999 * bound);
  Tensor n = empty({16, 8, 5, 5}, Dtype::Float64);  // fans 200 and 400
  xavier_normal_(n, 1.0, &gen);
  EXPECT_NEAR(std::sqrt(stats_of(n).var) / std::sqrt(2.0 / 600.0), 1.0, 0.03);
}

TEST(Init, UniformNormalAndConstants) {
  Generator gen(4);
  Tensor u = empty({100000}, Dtype::Float64);
  nn::init::uniform_(u, -2.0, 3.0, &gen);
  const Stats su = stats_of(u);
  for (double v : u.to_vector<double>()) ASSERT_TRUE(v >= -2.0 && v < 3.0);
  EXPECT_NEAR(su.mean, 0.5, 0.02);
  EXPECT_NEAR(su.var, 25.0 / 12.0, 0.03);
  Tensor n = empty({100000}, Dtype::Float64);
  nn::init::normal_(n, 1.5, 0.5, &gen);
  const Stats sn = stats_of(n);
  EXPECT_NEAR(sn.mean, 1.5, 0.01);
  EXPECT_NEAR(std::sqrt(sn.var), 0.5, 0.005);
  Tensor c = empty({3, 2});
  constant_(c, 0.25);
  EXPECT_EQ(c.to_vector<float>(), std::vector<float>(6, 0.25f));
  zeros_(c);
  EXPECT_EQ(c.to_vector<float>(), std::vector<float>(6, 0.0f));
  ones_(c);
  EXPECT_EQ(c.to_vector<float>(), std::vector<float>(6, 1.0f));
}

TEST(Init, SeedsMakeInitReproducible) {
  Generator a(42), b(42), c(43);
  Tensor x = empty({5, 10}), y = empty({5, 10}), z = empty({5, 10});
  kaiming_uniform_(x, std::sqrt(5.0), FanMode::FanIn, "leaky_relu", &a);
  kaiming_uniform_(y, std::sqrt(5.0), FanMode::FanIn, "leaky_relu", &b);
  kaiming_uniform_(z, std::sqrt(5.0), FanMode::FanIn, "leaky_relu", &c);
  EXPECT_EQ(x.to_vector<float>(), y.to_vector<float>());
  EXPECT_NE(y.to_vector<float>(), z.to_vector<float>());
  EXPECT_THROW(kaiming_uniform_(empty({50})), ShapeError);  // 1-d: no fans
  // Layers draw from the default generator: same seed, same model.
  manual_seed(7);
  nn::Conv2d m1(3, 4, 3);
  manual_seed(7);
  nn::Conv2d m2(3, 4, 3);
  EXPECT_EQ(m1.weight.to_vector<float>(), m2.weight.to_vector<float>());
  EXPECT_EQ(m1.bias.to_vector<float>(), m2.bias.to_vector<float>());
  Generator g1(5), g2(5);
  m1.reset_parameters(&g1);
  m2.reset_parameters(&g2);
  EXPECT_EQ(m1.weight.to_vector<float>(), m2.weight.to_vector<float>());
}

TEST(Init, RecordsNoHistoryAndBumpsTheVersion) {
  nn::Linear fc(3, 2);
  const uint64_t v = fc.weight.version();
  xavier_uniform_(fc.weight);
  EXPECT_TRUE(fc.weight.is_leaf());
  EXPECT_TRUE(fc.weight.requires_grad());
  EXPECT_GT(fc.weight.version(), v);
  // An empty weight is left alone by kaiming (PyTorch warns and returns).
  Tensor e = empty({0, 3});
  EXPECT_NO_THROW(kaiming_uniform_(e));
  EXPECT_NO_THROW(nn::Linear(0, 3));
}

}  // namespace
}  // namespace aclgrad
