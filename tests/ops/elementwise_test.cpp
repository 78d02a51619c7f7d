// Elementwise ops: forward against std:: references, broadcasting, dtypes, gradients
// (hand-computed, gradcheck, gradgradcheck).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <functional>

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

// Unary ops against a double reference, in float64 and float32, on a non-contiguous input.
struct UnaryCase {
  const char* name;
  std::function<Tensor(const Tensor&)> op;
  std::function<double(double)> ref;
  double lo, hi;
};

std::vector<UnaryCase> unary_cases() {
  return {
      {"neg", [](const Tensor& x) { return neg(x); }, [](double v) { return -v; }, -2, 2},
      {"exp", [](const Tensor& x) { return exp(x); }, [](double v) { return std::exp(v); }, -2, 2},
      {"log", [](const Tensor& x) { return log(x); }, [](double v) { return std::log(v); }, 0.1, 3},
      {"sqrt", [](const Tensor& x) { return sqrt(x); }, [](double v) { return std::sqrt(v); }, 0.1,
       3},
      {"abs", [](const Tensor& x) { return abs(x); }, [](double v) { return std::abs(v); }, -2, 2},
      {"reciprocal", [](const Tensor& x) { return reciprocal(x); }, [](double v) { return 1 / v; },
       0.5, 2},
      {"pow_scalar", [](const Tensor& x) { return pow(x, 2.5); },
       [](double v) { return std::pow(v, 2.5); }, 0.1, 2},
      {"square", [](const Tensor& x) { return pow(x, 2); }, [](double v) { return v * v; }, -2, 2},
      {"clamp", [](const Tensor& x) { return clamp(x, -0.5, 0.7); },
       [](double v) { return std::min(std::max(v, -0.5), 0.7); }, -2, 2},
      {"clamp_min", [](const Tensor& x) { return clamp_min(x, 0.3); },
       [](double v) { return std::max(v, 0.3); }, -2, 2},
      {"scalar_ops", [](const Tensor& x) { return (2.0 - x) * 3 / 4.0 + 1; },
       [](double v) { return (2.0 - v) * 3 / 4.0 + 1; }, -2, 2},
      {"rdiv", [](const Tensor& x) { return 2.0 / x; }, [](double v) { return 2.0 / v; }, 0.5, 2},
  };
}

TEST(Elementwise, UnaryForwardMatchesReferenceInFloat64AndFloat32) {
  for (const UnaryCase& c : unary_cases()) {
    SCOPED_TRACE(c.name);
    // A transposed (non-contiguous) view.
    const Tensor x = uniform_var({3, 4}, c.lo, c.hi, 7).detach().t();
    const std::vector<double> xv = x.to_vector<double>();
    const std::vector<double> y64 = c.op(x).to_vector<double>();
    const std::vector<double> y32 = c.op(x.to(Dtype::Float32)).to_vector<double>();
    for (size_t i = 0; i < xv.size(); ++i) {
      EXPECT_NEAR(y64[i], c.ref(xv[i]), 1e-14 * (1 + std::abs(c.ref(xv[i]))));
      EXPECT_NEAR(y32[i], c.ref(xv[i]), 1e-6 * (1 + std::abs(c.ref(xv[i]))));
    }
  }
}

TEST(Elementwise, UnaryGradientsPassGradcheckAndGradgradcheck) {
  for (const UnaryCase& c : unary_cases()) {
    SCOPED_TRACE(c.name);
    Tensor x = uniform_var({2, 3}, c.lo, c.hi, 11);
    expect_gradients_correct([&](const tensor_list& in) { return c.op(in[0]); }, {x});
  }
}

TEST(Elementwise, BinaryForwardBroadcasts) {
  const Tensor a = tensor({1.0, 2.0, 3.0, 4.0, 5.0, 6.0}, {2, 1, 3});
  const Tensor b = tensor({10.0, 20.0}, {2, 1});
  expect_tensor(a + b, {2, 2, 3}, {11, 12, 13, 21, 22, 23, 14, 15, 16, 24, 25, 26});
  expect_tensor(a - b, {2, 2, 3}, {-9, -8, -7, -19, -18, -17, -6, -5, -4, -16, -15, -14});
  expect_tensor(a * b, {2, 2, 3}, {10, 20, 30, 20, 40, 60, 40, 50, 60, 80, 100, 120});
  expect_tensor(b / a, {2, 2, 3},
                {10, 5, 10.0 / 3, 20, 10, 20.0 / 3, 2.5, 2, 10.0 / 6, 5, 4, 20.0 / 6}, 1e-12);
  expect_tensor(pow(a, b / 10), {2, 2, 3}, {1, 2, 3, 1, 4, 9, 4, 5, 6, 16, 25, 36}, 1e-12);
}

TEST(Elementwise, BroadcastGradientsAreSummedToTheInputShape) {
  Tensor a = uniform_var({2, 1, 3}, -1, 1, 1);
  Tensor b = uniform_var({4, 1}, -1, 1, 2);
  sum(a * b).backward();
  // d/da = sum over the broadcast dim of b; d/db = sum of a over its broadcast positions.
  const double sb = sum(b).item<double>();
  const std::vector<double> av = a.to_vector<double>();
  ASSERT_EQ(a.grad().sizes(), (Shape{2, 1, 3}));
  for (double g : a.grad().to_vector<double>()) EXPECT_NEAR(g, sb, 1e-12);
  double sa = 0;
  for (double v : av) sa += v;
  expect_tensor(b.grad(), {4, 1}, {sa, sa, sa, sa}, 1e-12);
}

TEST(Elementwise, BinaryGradientsPassGradcheckAndGradgradcheck) {
  const Shape sa{2, 1, 3}, sb{4, 1};
  using Op = std::function<Tensor(const Tensor&, const Tensor&)>;
  const std::vector<std::pair<const char*, Op>> ops = {
      {"add", [](const Tensor& a, const Tensor& b) { return a + b; }},
      {"sub", [](const Tensor& a, const Tensor& b) { return a - b; }},
      {"mul", [](const Tensor& a, const Tensor& b) { return a * b; }},
      {"div", [](const Tensor& a, const Tensor& b) { return a / b; }},
      {"pow", [](const Tensor& a, const Tensor& b) { return pow(a, b); }},
  };
  for (const auto& [name, op] : ops) {
    SCOPED_TRACE(name);
    Tensor a = uniform_var(sa, 0.5, 2, 3);  // positive: pow's log(a), div's 1/b
    Tensor b = uniform_var(sb, 0.5, 2, 4);
    expect_gradients_correct([&](const tensor_list& in) { return op(in[0], in[1]); }, {a, b});
    // Same shapes, the second operand a non-contiguous (transposed) leaf.
    Tensor c = uniform_var({3, 2}, 0.5, 2, 5);
    Tensor e = uniform_var({2, 3}, 0.5, 2, 6).detach().t();
    e.requires_grad_();
    ASSERT_FALSE(e.is_contiguous());
    expect_gradients_correct([&](const tensor_list& in) { return op(in[0], in[1]); }, {c, e});
  }
}

TEST(Elementwise, HandComputedGradients) {
  Tensor x = tensor({-1.0, 0.0, 2.0}, {3});
  x.requires_grad_();
  sum(abs(x)).backward();
  expect_tensor(x.grad(), {3}, {-1, 0, 1});  // sign(0) = 0
  x.zero_grad();
  sum(clamp(x, -1, 1)).backward();
  expect_tensor(x.grad(), {3}, {1, 1, 0});  // bounds are inside
  x.zero_grad();
  sum(pow(x, 3)).backward();
  expect_tensor(x.grad(), {3}, {3, 0, 12});
  x.zero_grad();
  sum(pow(x, 0)).backward();
  expect_tensor(x.grad(), {3}, {0, 0, 0});
}

TEST(Elementwise, PowExponentGradientIsZeroAtAZeroBase) {
  Tensor base = tensor({0.0, 0.0, 2.0}, {3});
  Tensor e = tensor({2.0, 0.0, 3.0}, {3});
  base.requires_grad_();
  e.requires_grad_();
  sum(pow(base, e)).backward();
  expect_tensor(e.grad(), {3}, {0, 0, 8 * std::log(2.0)}, 1e-12);
  expect_tensor(base.grad(), {3}, {0, 0, 12});  // e x^(e-1), and 0 where e == 0
}

TEST(Elementwise, NanPropagates) {
  const Tensor x = tensor({kNan, 1.0}, {2});
  EXPECT_TRUE(std::isnan(clamp(x, 0, 0.5).to_vector<double>()[0]));
  EXPECT_TRUE(std::isnan(sign(x).to_vector<double>()[0]));
  EXPECT_EQ(clamp(x, 0, 0.5).to_vector<double>()[1], 0.5);
  // masked_fill's branch-free select keeps unmasked values bit for bit (NaN, -0.0).
  const Tensor y =
      masked_fill(tensor({kNan, -0.0, 1.0}, {3}), tensor({false, false, true}, {3}), 7);
  const std::vector<double> yv = y.to_vector<double>();
  EXPECT_TRUE(std::isnan(yv[0]));
  EXPECT_TRUE(std::signbit(yv[1]));
  EXPECT_EQ(yv[2], 7.0);
}

TEST(Elementwise, HalfPrecisionComputesInFloat32AndRoundsOnce) {
  const Tensor h = tensor({0.5f, -1.25f, 3.0f}, {3}, Dtype::Float16);
  const Tensor y = exp(h) * h;
  EXPECT_EQ(y.dtype(), Dtype::Float16);
  const std::vector<float> hv = h.to_vector<float>();
  const std::vector<float> yv = y.to_vector<float>();
  for (size_t i = 0; i < hv.size(); ++i) {
    // exp rounded to half, then the product rounded to half.
    const float e = static_cast<float>(Half(std::exp(hv[i])));
    EXPECT_EQ(yv[i], static_cast<float>(Half(e * hv[i])));
  }
  const Tensor b = tensor({1.5f, 2.5f}, {2}, Dtype::BFloat16);
  expect_tensor(b * b, {2}, {2.25, 6.25});
}

TEST(Elementwise, RejectsIntegerMixedDtypesAndBadShapes) {
  const Tensor i = arange(3, Dtype::Int64);
  const Tensor f = ones({3});
  const Tensor d = ones({3}, Dtype::Float64);
  std::string msg = message_of<DtypeError>([&] { exp(i); });
  EXPECT_NE(msg.find("exp: expected a floating point dtype, got int64"), std::string::npos) << msg;
  msg = message_of<DtypeError>([&] { f + d; });
  EXPECT_NE(msg.find("add: expected both operands to have the same dtype, got float32 and "
                     "float64"),
            std::string::npos)
      << msg;
  EXPECT_THROW(f * ones({4}), ShapeError);
  EXPECT_THROW(clamp(f, std::nullopt, std::nullopt), Error);
}

TEST(Elementwise, MasksAndMaskedFill) {
  const Tensor x = tensor({-1.0, 0.0, 2.0}, {3});
  EXPECT_EQ(gt(x, 0).to_vector<bool>(), (std::vector<bool>{false, false, true}));
  EXPECT_EQ(le(x, 0).to_vector<bool>(), (std::vector<bool>{true, true, false}));
  EXPECT_EQ(eq(x, tensor({-1.0}, {1})).to_vector<bool>(), (std::vector<bool>{true, false, false}));
  Tensor v = uniform_var({3}, -1, 1, 9);
  Tensor y = masked_fill(v, gt(x, 0), 5);
  EXPECT_EQ(y.to_vector<double>()[2], 5);
  sum(y * 2).backward();
  expect_tensor(v.grad(), {3}, {2, 2, 0});
  expect_gradients_correct([&](const tensor_list& in) { return masked_fill(in[0], lt(x, 0), 1); },
                           {uniform_var({3}, -1, 1, 10)});
}

}  // namespace
}  // namespace aclgrad
