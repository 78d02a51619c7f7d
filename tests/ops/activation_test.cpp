// Activations: forward against float64 formulas, PyTorch conventions at the edges, gradients.
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

double gelu_erf_ref(double x) {
  return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
}
double gelu_tanh_ref(double x) {
  const double k = std::sqrt(2.0 / M_PI);
  return 0.5 * x * (1 + std::tanh(k * (x + 0.044715 * x * x * x)));
}

struct ActivationCase {
  const char* name;
  std::function<Tensor(const Tensor&)> op;
  std::function<double(double)> ref;
};

std::vector<ActivationCase> cases() {
  return {
      {"relu", [](const Tensor& x) { return relu(x); }, [](double v) { return v > 0 ? v : 0; }},
      {"leaky_relu", [](const Tensor& x) { return leaky_relu(x, 0.2); },
       [](double v) { return v > 0 ? v : 0.2 * v; }},
      {"sigmoid", [](const Tensor& x) { return sigmoid(x); },
       [](double v) { return 1 / (1 + std::exp(-v)); }},
      {"tanh", [](const Tensor& x) { return tanh(x); }, [](double v) { return std::tanh(v); }},
      {"gelu", [](const Tensor& x) { return gelu(x); }, gelu_erf_ref},
      {"gelu_tanh", [](const Tensor& x) { return gelu(x, "tanh"); }, gelu_tanh_ref},
      {"softplus", [](const Tensor& x) { return softplus(x); },
       [](double v) { return std::log1p(std::exp(v)); }},
      {"softplus_beta2_threshold3", [](const Tensor& x) { return softplus(x, 2, 3); },
       [](double v) { return 2 * v > 3 ? v : std::log1p(std::exp(2 * v)) / 2; }},
  };
}

TEST(Activation, ForwardMatchesFloat64Formulas) {
  for (const ActivationCase& c : cases()) {
    SCOPED_TRACE(c.name);
    const Tensor x = uniform_var({4, 5}, -3, 3, 31).detach();
    const std::vector<double> xv = x.to_vector<double>();
    const std::vector<double> y64 = c.op(x).to_vector<double>();
    const std::vector<double> y32 = c.op(x.to(Dtype::Float32)).to_vector<double>();
    for (size_t i = 0; i < xv.size(); ++i) {
      EXPECT_NEAR(y64[i], c.ref(xv[i]), 1e-14) << "x = " << xv[i];
      EXPECT_NEAR(y32[i], c.ref(xv[i]), 2e-6) << "x = " << xv[i];
    }
  }
}

TEST(Activation, GradientsPassGradcheckAndGradgradcheck) {
  for (const ActivationCase& c : cases()) {
    SCOPED_TRACE(c.name);
    // Values in [-3, 3] but away from the kinks of relu/leaky_relu at 0 and softplus's threshold
    // (2 x = 3): the seed gives none within 1e-3 of them.
    Tensor x = uniform_var({3, 4}, -3, 3, 32);
    expect_gradients_correct([&](const tensor_list& in) { return c.op(in[0]); }, {x});
  }
}

TEST(Activation, EdgeValuesFollowPyTorch) {
  const Tensor x = tensor({-1000.0, -30.0, 0.0, 30.0, 1000.0, kNan}, {6});
  const std::vector<double> s = sigmoid(x).to_vector<double>();
  EXPECT_EQ(s[0], 0.0);
  EXPECT_NEAR(s[1], std::exp(-30.0), 1e-25);
  EXPECT_EQ(s[2], 0.5);
  EXPECT_EQ(s[4], 1.0);
  EXPECT_TRUE(std::isnan(s[5]));
  const std::vector<double> sp = softplus(x).to_vector<double>();
  EXPECT_EQ(sp[3], 30.0);  // above the threshold: x itself
  EXPECT_EQ(sp[4], 1000.0);
  EXPECT_NEAR(sp[1], std::log1p(std::exp(-30.0)), 1e-25);
  EXPECT_TRUE(std::isnan(relu(x).to_vector<double>()[5]));
  EXPECT_EQ(relu(x).to_vector<double>()[0], 0.0);
  const std::string msg = message_of<Error>([&] { gelu(x, "fast"); });
  EXPECT_NE(msg.find("gelu: approximate must be \"none\" or \"tanh\", got \"fast\""),
            std::string::npos)
      << msg;
}

TEST(Activation, HandComputedGradients) {
  Tensor x = tensor({-2.0, 0.0, 3.0}, {3});
  x.requires_grad_();
  sum(relu(x)).backward();
  expect_tensor(x.grad(), {3}, {0, 0, 1});  // 0 at 0, like PyTorch
  x.zero_grad();
  sum(leaky_relu(x)).backward();
  expect_tensor(x.grad(), {3}, {0.01, 0.01, 1});
  x.zero_grad();
  sum(sigmoid(x)).backward();
  const double s = 1 / (1 + std::exp(2.0)), t = 1 / (1 + std::exp(-3.0));
  expect_tensor(x.grad(), {3}, {s * (1 - s), 0.25, t * (1 - t)}, 1e-15);
  x.zero_grad();
  sum(gelu(x)).backward();  // gelu'(0) = 1/2
  EXPECT_NEAR(x.grad().to_vector<double>()[1], 0.5, 1e-15);
  x.zero_grad();
  sum(softplus(x, 1, 2.5)).backward();  // above the threshold: 1
  expect_tensor(x.grad(), {3}, {1 / (1 + std::exp(2.0)), 0.5, 1}, 1e-15);
}

// relu's backward without create_graph is one fused pass (split over threads for large
// tensors): g where y > 0 (NaN inputs pass g through, like masked_fill(g, y <= 0, 0)), +0
// elsewhere. Against a float64 reference, the composed (create_graph) backward, and 1 vs 2
// threads, bit for bit.
TEST(Activation, ReluFusedBackwardMatchesReferenceComposedAndThreadCount) {
  const Shape shape{300, 701};
  std::vector<double> xv = uniform_var(shape, -1, 1, 40).detach().to_vector<double>();
  for (size_t i = 0; i < xv.size(); i += 53) xv[i] = 0.0;
  for (size_t i = 7; i < xv.size(); i += 59) xv[i] = -0.0;
  for (size_t i = 11; i < xv.size(); i += 61) xv[i] = kNan;
  const Tensor g = uniform_var(shape, -1, 1, 41).detach().to(Dtype::Float32);
  const std::vector<unsigned char> g_before = testing::bytes_of(g);
  auto run = [&](int threads, bool create_graph) {
    return testing::with_threads(threads, [&] {
      Tensor x = from_vector(xv, shape).to(Dtype::Float32);
      x.requires_grad_();
      return autograd::grad({relu(x)}, {x}, {g}, std::nullopt, create_graph)[0].detach();
    });
  };
  const Tensor dx = run(2, false);
  const std::vector<double> gv = g.to_vector<double>(), got = dx.to_vector<double>();
  int64_t wrong = 0;
  for (size_t i = 0; i < xv.size(); ++i) {
    const double want = std::isnan(xv[i]) || xv[i] > 0 ? gv[i] : 0.0;
    wrong += got[i] != want || std::signbit(got[i]) != std::signbit(want);
  }
  EXPECT_EQ(wrong, 0) << "of " << xv.size();
  EXPECT_EQ(testing::bytes_of(g), g_before);  // the caller's gradient is not dx's buffer
  EXPECT_EQ(testing::bytes_of(run(1, false)), testing::bytes_of(dx));
  EXPECT_EQ(testing::bytes_of(run(2, true)), testing::bytes_of(dx));
}

// The gradient reaching relu's backward here is mul's fresh 3 g, which no one else sees: the
// fused backward writes dx into that buffer (autograd::gradient_buffer). The caller's g and the
// retained y.grad must stay as they were.
TEST(Activation, ReluFusedBackwardIntoTheIncomingBufferLeavesOtherTensorsAlone) {
  const Shape shape{64, 257};
  std::vector<double> xv = uniform_var(shape, -1, 1, 42).detach().to_vector<double>();
  for (size_t i = 0; i < xv.size(); i += 31) xv[i] = 0.0;
  const Tensor g = uniform_var(shape, -1, 1, 43).detach().to(Dtype::Float32);
  const std::vector<unsigned char> g_before = testing::bytes_of(g);
  Tensor x = from_vector(xv, shape).to(Dtype::Float32);
  x.requires_grad_();
  const Tensor y = relu(x);
  y.retain_grad();
  (y * 3.0).backward(g);
  const std::vector<double> gv = g.to_vector<double>(), dx = x.grad().to_vector<double>();
  const std::vector<double> dy = y.grad().to_vector<double>();
  int64_t wrong = 0;
  for (size_t i = 0; i < xv.size(); ++i) {
    const double g3 = static_cast<double>(static_cast<float>(3.0 * gv[i]));
    wrong += dx[i] != (xv[i] > 0 ? g3 : 0.0) || dy[i] != g3;
  }
  EXPECT_EQ(wrong, 0) << "of " << xv.size();
  EXPECT_EQ(testing::bytes_of(g), g_before);
}

TEST(Activation, FusedBackwardsSupportExactlyOneMoreDerivative) {
  Tensor x = uniform_var({3}, -2, 2, 33);
  Tensor g1 = autograd::grad({sum(gelu(x))}, {x}, {}, std::nullopt, true)[0];
  EXPECT_STREQ(g1.grad_fn()->name(), "GeluBackwardBackward");
  // gelu''(x) = phi(x) (2 - x^2).
  Tensor g2 = autograd::grad({sum(g1)}, {x}, {}, true)[0];
  const std::vector<double> xv = x.to_vector<double>(), g2v = g2.to_vector<double>();
  for (size_t i = 0; i < xv.size(); ++i) {
    EXPECT_NEAR(g2v[i], std::exp(-xv[i] * xv[i] / 2) / std::sqrt(2 * M_PI) * (2 - xv[i] * xv[i]),
                1e-14);
  }
  const std::string msg = message_of<AutogradError>(
      [&] { autograd::grad({sum(g1)}, {x}, {}, std::nullopt, /*create_graph=*/true); });
  EXPECT_NE(msg.find("GeluBackwardBackward does not support double backward"), std::string::npos)
      << msg;
}

TEST(Activation, ComposedBackwardsSupportThirdDerivatives) {
  Tensor x = uniform_var({3}, -2, 2, 34);
  Tensor y = sum(tanh(x));
  Tensor g1 = autograd::grad({y}, {x}, {}, std::nullopt, true)[0];
  Tensor g2 = autograd::grad({sum(g1)}, {x}, {}, std::nullopt, true)[0];
  Tensor g3 = autograd::grad({sum(g2)}, {x})[0];
  // tanh''' = -2 (1 - t^2)(1 - 3 t^2)
  const std::vector<double> xv = x.to_vector<double>(), g3v = g3.to_vector<double>();
  for (size_t i = 0; i < xv.size(); ++i) {
    const double t = std::tanh(xv[i]);
    EXPECT_NEAR(g3v[i], -2 * (1 - t * t) * (1 - 3 * t * t), 1e-13);
  }
}

}  // namespace
}  // namespace aclgrad
