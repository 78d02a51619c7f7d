// gradcheck / gradgradcheck: they pass correct ops and, above all, catch broken ones.
#include <gtest/gtest.h>

#include "autograd/autograd.h"
#include "autograd/function.h"
#include "ops/ops.h"
#include "tensor/creation.h"
#include "tests/autograd/test_util.h"

namespace aclgrad {
namespace {

using autograd::gradcheck;
using autograd::GradcheckOptions;
using autograd::gradgradcheck;
using autograd::tensor_list;
using testing::message_of;

Tensor var(std::initializer_list<double> v, const Shape& shape) {
  Tensor t = tensor(v, shape, Dtype::Float64);
  t.requires_grad_();
  return t;
}

// y = x^2 with a deliberately wrong backward: g * x instead of 2 g x.
struct WrongSquareBackward final : autograd::Node {
  WrongSquareBackward() : Node("WrongSquareBackward") {}
  size_t x = 0;
  autograd::tensor_list apply(autograd::tensor_list&& g) override { return {g[0] * saved(x)}; }
};

Tensor wrong_square(const Tensor& x) {
  Tensor out;
  {
    NoGradGuard no_grad;
    out = x * x;
  }
  if (auto node = autograd::make_node<WrongSquareBackward>({x})) {
    node->x = node->save(x);
    node->set_history(out);
  }
  return out;
}

TEST(Gradcheck, PassesACorrectComposite) {
  Tensor x = var({0.3, -1.2, 2.0, 0.7}, {2, 2});
  Tensor w = var({1.5, -0.5}, {2});
  EXPECT_TRUE(
      gradcheck([](const tensor_list& in) { return exp(in[0]) * in[1] + in[0] / in[1]; }, {x, w}));
}

TEST(Gradcheck, CatchesADeliberatelyWrongBackward) {
  Tensor x = var({1, 2, 3}, {3});
  const std::string msg = message_of<AutogradError>(
      [&] { gradcheck([](const tensor_list& in) { return wrong_square(in[0]); }, {x}); });
  // The worst element is the last diagonal entry: numerical 2 * 3 = 6, analytical 3.
  EXPECT_NE(msg.find("Jacobian mismatch for output 0 with respect to input 0"), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("worst element at output index [2], input index [2]"), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("numerical 6"), std::string::npos) << msg;
  EXPECT_NE(msg.find("analytical 3"), std::string::npos) << msg;
}

TEST(Gradcheck, ReturnsFalseInsteadOfThrowingWhenAsked) {
  Tensor x = var({1, 2, 3}, {3});
  GradcheckOptions opt;
  opt.raise_exception = false;
  EXPECT_FALSE(gradcheck([](const tensor_list& in) { return wrong_square(in[0]); }, {x}, opt));
  EXPECT_TRUE(gradcheck([](const tensor_list& in) { return in[0] * in[0]; }, {x}, opt));
}

TEST(Gradcheck, NamesTheOutputAndInputOfTheMismatch) {
  Tensor a = var({0.5, 1.5}, {2});
  Tensor b = var({2, -1}, {2});
  const std::string msg = message_of<AutogradError>([&] {
    gradcheck(
        [](const tensor_list& in) {
          return tensor_list{in[0] * in[1], wrong_square(in[1])};
        },
        {a, b});
  });
  EXPECT_NE(msg.find("output 1 with respect to input 1"), std::string::npos) << msg;
}

TEST(Gradcheck, ConstantInputsAreNotPerturbed) {
  Tensor x = var({0.5, 1.5}, {2});
  Tensor c = tensor({3.0, 4.0}, {2});
  EXPECT_TRUE(gradcheck([](const tensor_list& in) { return in[0] * in[1]; }, {x, c}));
}

// A backward whose result changes every time it runs.
struct NondeterministicBackward final : autograd::Node {
  NondeterministicBackward() : Node("NondeterministicBackward") {}
  int calls = 0;
  autograd::tensor_list apply(autograd::tensor_list&& g) override {
    return {g[0] * (1.0 + 1e-9 * ++calls)};
  }
};

TEST(Gradcheck, CatchesANonReentrantBackward) {
  Tensor x = var({1, 2}, {2});
  const std::string msg = message_of<AutogradError>([&] {
    gradcheck(
        [](const tensor_list& in) {
          Tensor out = in[0].detach().clone();
          if (auto n = autograd::make_node<NondeterministicBackward>({in[0]})) n->set_history(out);
          return out;
        },
        {x});
  });
  EXPECT_NE(msg.find("not reentrant"), std::string::npos) << msg;
}

// y = x, but the backward adds 1 when grad_output is all zeros (still right for one-hot rows).
struct NotScaledBackward final : autograd::Node {
  NotScaledBackward() : Node("NotScaledBackward") {}
  autograd::tensor_list apply(autograd::tensor_list&& g) override {
    const bool all_zero = max(abs(g[0])).item<double>() == 0;
    return {all_zero ? g[0] + 1.0 : g[0]};
  }
};

TEST(Gradcheck, CatchesABackwardNotMultipliedByGradOutput) {
  Tensor x = var({1, 2}, {2});
  const std::string msg = message_of<AutogradError>([&] {
    gradcheck(
        [](const tensor_list& in) {
          Tensor out = in[0].detach().clone();
          if (auto n = autograd::make_node<NotScaledBackward>({in[0]})) n->set_history(out);
          return out;
        },
        {x});
  });
  EXPECT_NE(msg.find("not multiplied by grad_output"), std::string::npos) << msg;
}

TEST(Gradcheck, RejectsFloat32AndOverlappingInputs) {
  Tensor f = tensor({1.f, 2.f}, {2});
  f.requires_grad_();
  EXPECT_THROW(gradcheck([](const tensor_list& in) { return in[0] * 2; }, {f}), DtypeError);
  Tensor e = tensor({1.0}, {1}).expand({3});
  e.requires_grad_();
  EXPECT_THROW(gradcheck([](const tensor_list& in) { return in[0] * 2; }, {e}), Error);
}

// y = x^3 whose backward g * 3 x^2 is computed without recording: first order is right, the
// second derivative silently comes out as zero.
struct CubeBackward final : autograd::Node {
  CubeBackward() : Node("CubeBackward") {}
  size_t x = 0;
  autograd::tensor_list apply(autograd::tensor_list&& g) override {
    Tensor d;
    {
      NoGradGuard no_grad;
      const Tensor xv = saved(x);
      d = xv * xv * 3.0;
    }
    return {g[0] * d};
  }
};

TEST(Gradgradcheck, CatchesABackwardThatIsNotDifferentiable) {
  Tensor x = var({1, -2, 0.5}, {3});
  auto cube = [](const tensor_list& in) {
    Tensor out;
    {
      NoGradGuard no_grad;
      out = in[0] * in[0] * in[0];
    }
    if (auto n = autograd::make_node<CubeBackward>({in[0]})) {
      n->x = n->save(in[0]);
      n->set_history(out);
    }
    return out;
  };
  EXPECT_TRUE(gradcheck(cube, {x}));
  const std::string msg = message_of<AutogradError>([&] { gradgradcheck(cube, {x}); });
  EXPECT_NE(msg.find("gradgradcheck: Jacobian mismatch for output 0 with respect to input 0"),
            std::string::npos)
      << msg;
}

TEST(Gradgradcheck, PassesACorrectComposite) {
  Tensor x = var({0.3, -1.2, 2.0}, {3});
  Tensor w = var({1.5}, {1});
  EXPECT_TRUE(
      gradgradcheck([](const tensor_list& in) { return exp(in[0] * in[1]) / in[1]; }, {x, w}));
  // Explicit grad_outputs.
  EXPECT_TRUE(gradgradcheck([](const tensor_list& in) { return in[0] * in[0] * in[1]; }, {x, w},
                            {tensor({1.0, -2.0, 0.5}, {3})}));
}

}  // namespace
}  // namespace aclgrad
