// Engine behaviour: graph shapes (diamond, shared subexpressions), accumulation, retain_graph,
// grad mode, detach, saved-tensor versions, gradient validation, deep graphs.
#include <gtest/gtest.h>

#include <cmath>
#include <thread>

#include "autograd/autograd.h"
#include "autograd/function.h"
#include "ops/ops.h"
#include "tensor/creation.h"
#include "tensor/half.h"
#include "tests/autograd/test_util.h"

namespace aclgrad {
namespace {

using testing::expect_tensor;
using testing::message_of;

Tensor leaf(std::initializer_list<double> v, const Shape& shape, Dtype dtype = Dtype::Float64) {
  Tensor t = tensor(v, shape, dtype);
  t.requires_grad_();
  return t;
}

TEST(Engine, MulAddGradientsMatchHandDerivatives) {
  Tensor x = leaf({1, 2, 3}, {3});
  Tensor w = leaf({4, 5, 6}, {3});
  Tensor y = sum(x * w + x);  // dy/dx = w + 1, dy/dw = x
  EXPECT_FALSE(y.is_leaf());
  ASSERT_NE(y.grad_fn(), nullptr);
  EXPECT_STREQ(y.grad_fn()->name(), "SumBackward");
  EXPECT_DOUBLE_EQ(y.item<double>(), 1 * 4 + 2 * 5 + 3 * 6 + 6);
  y.backward();
  expect_tensor(x.grad(), {3}, {5, 6, 7});
  expect_tensor(w.grad(), {3}, {1, 2, 3});
}

TEST(Engine, DiamondSumsBothPaths) {
  Tensor x = leaf({1, -2}, {2});
  Tensor a = x * 2;
  Tensor b = x * 3;
  sum(a * b).backward();  // y = 6 x^2 -> 12 x
  expect_tensor(x.grad(), {2}, {12, -24});
}

TEST(Engine, SharedSubexpressionIsRunOnceWithSummedGradient) {
  Tensor x = leaf({0.5, -1}, {2});
  Tensor s = exp(x);
  sum(s * s + s).backward();  // d/dx (s^2 + s) = (2 s + 1) s
  const double s0 = std::exp(0.5), s1 = std::exp(-1.0);
  expect_tensor(x.grad(), {2}, {(2 * s0 + 1) * s0, (2 * s1 + 1) * s1}, 1e-12);
}

TEST(Engine, GradientsAccumulateAcrossBackwardCallsInPlace) {
  Tensor x = leaf({1, 2}, {2});
  sum(x * x).backward();
  Tensor g = x.grad();  // a handle to the same buffer
  expect_tensor(g, {2}, {2, 4});
  sum(x * 3).backward();
  expect_tensor(x.grad(), {2}, {5, 7});
  expect_tensor(g, {2}, {5, 7});  // accumulated in place, as in PyTorch
  x.zero_grad(/*set_to_none=*/false);
  expect_tensor(g, {2}, {0, 0});
  x.zero_grad();
  EXPECT_FALSE(x.grad().defined());
}

TEST(Engine, RetainGraphAllowsASecondBackwardAndItsAbsenceIsAnError) {
  Tensor x = leaf({0, 1}, {2});
  Tensor y = sum(exp(x));
  y.backward(Tensor(), /*retain_graph=*/true);
  y.backward();
  expect_tensor(x.grad(), {2}, {2, 2 * std::exp(1.0)}, 1e-12);
  const std::string msg = message_of<AutogradError>([&] { y.backward(); });
  EXPECT_NE(msg.find("backward through the graph a second time"), std::string::npos) << msg;
  EXPECT_NE(msg.find("SumBackward"), std::string::npos) << msg;
  EXPECT_NE(msg.find("retain_graph=true"), std::string::npos) << msg;
}

TEST(Engine, NoGradGuardRecordsNothingAndRestoresTheMode) {
  Tensor x = leaf({1, 2}, {2});
  Tensor y;
  {
    NoGradGuard guard;
    EXPECT_FALSE(GradMode::is_enabled());
    y = x * 2;
    {
      EnableGradGuard enable;
      EXPECT_TRUE((x * 2).requires_grad());
    }
    EXPECT_FALSE(GradMode::is_enabled());
  }
  EXPECT_TRUE(GradMode::is_enabled());
  EXPECT_FALSE(y.requires_grad());
  EXPECT_EQ(y.grad_fn(), nullptr);
  expect_tensor(y, {2}, {2, 4});
  const std::string msg = message_of<AutogradError>([&] { sum(y).backward(); });
  EXPECT_NE(msg.find("does not require grad"), std::string::npos) << msg;
}

TEST(Engine, DetachCutsTheGraphButSharesDataAndVersion) {
  Tensor x = leaf({1, 2, 3}, {3});
  Tensor d = x.detach();
  EXPECT_FALSE(d.requires_grad());
  EXPECT_TRUE(d.is_leaf());
  EXPECT_TRUE(d.shares_storage(x));
  sum(d * x).backward();  // d is a constant: gradient d, not 2 x
  expect_tensor(x.grad(), {3}, {1, 2, 3});
  const uint64_t v = x.version();
  d.fill_(0);
  EXPECT_EQ(x.version(), v + 1);
}

TEST(Engine, InPlaceModificationOfASavedTensorIsReportedWithTheNode) {
  Tensor x = leaf({1, 2, 3}, {3}, Dtype::Float32);
  Tensor w = tensor({4.f, 5.f, 6.f}, {3});
  Tensor y = sum(x * w);  // MulBackward saves w for dy/dx
  w.fill_(2);
  const std::string msg = message_of<AutogradError>([&] { y.backward(); });
  EXPECT_NE(msg.find("modified by an inplace operation: [float32 [3]] saved by MulBackward is at "
                     "version 1; expected version 0 instead"),
            std::string::npos)
      << msg;
}

TEST(Engine, InPlaceModificationOfASavedOutputIsReported) {
  Tensor x = leaf({1, 2}, {2});
  Tensor e = exp(x);  // ExpBackward saves its output
  Tensor y = sum(e);
  e.fill_(0);
  const std::string msg = message_of<AutogradError>([&] { y.backward(); });
  EXPECT_NE(msg.find("saved by ExpBackward is at version 1; expected version 0"), std::string::npos)
      << msg;
}

// A node whose backward returns a gradient of a fixed (wrong) shape or dtype.
struct BrokenBackward final : autograd::Node {
  BrokenBackward(Shape shape, Dtype dtype) : Node("BrokenBackward"), shape(shape), dtype(dtype) {}
  Shape shape;
  Dtype dtype;
  autograd::tensor_list apply(autograd::tensor_list&&) override { return {ones(shape, dtype)}; }
};

Tensor broken(const Tensor& x, Shape shape, Dtype dtype) {
  Tensor out = x.detach().clone();
  if (auto node = autograd::make_node<BrokenBackward>({x}, shape, dtype)) node->set_history(out);
  return out;
}

TEST(Engine, AnInvalidGradientIsReportedWithTheNodeAndIndex) {
  Tensor x = leaf({1, 2, 3}, {3});
  std::string msg =
      message_of<AutogradError>([&] { sum(broken(x, {2}, Dtype::Float64)).backward(); });
  EXPECT_NE(msg.find("BrokenBackward returned an invalid gradient at index 0 — got [2] expected "
                     "[3]"),
            std::string::npos)
      << msg;
  msg = message_of<AutogradError>([&] { sum(broken(x, {3}, Dtype::Float32)).backward(); });
  EXPECT_NE(msg.find("BrokenBackward returned an invalid gradient at index 0 — got float32 "
                     "expected float64"),
            std::string::npos)
      << msg;
}

// A node that computes its gradient with a raw kernel and says so.
struct RawBackward final : autograd::Node {
  RawBackward() : Node("RawBackward", /*supports_double_backward=*/false) {}
  autograd::tensor_list apply(autograd::tensor_list&& g) override {
    return {g[0].detach().clone()};
  }
};

TEST(Engine, CreateGraphThroughANodeWithoutDoubleBackwardIsAnError) {
  Tensor x = leaf({1, 2}, {2});
  Tensor out = x.detach().clone();
  if (auto node = autograd::make_node<RawBackward>({x})) node->set_history(out);
  const std::string msg = message_of<AutogradError>(
      [&] { autograd::grad({sum(out)}, {x}, {}, std::nullopt, /*create_graph=*/true); });
  EXPECT_NE(msg.find("RawBackward does not support double backward"), std::string::npos) << msg;
  // Without create_graph it works.
  expect_tensor(autograd::grad({sum(out)}, {x})[0], {2}, {1, 1});
}

TEST(Engine, BackwardOfANonScalarNeedsAGradient) {
  Tensor x = leaf({1, 2}, {2});
  Tensor y = x * 3;
  const std::string msg = message_of<AutogradError>([&] { y.backward(); });
  EXPECT_NE(msg.find("grad can be implicitly created only for scalar outputs"), std::string::npos)
      << msg;
  y.backward(tensor({1.0, 10.0}, {2}));
  expect_tensor(x.grad(), {2}, {3, 30});
  EXPECT_THROW(y.backward(tensor({1.0, 2.0, 3.0}, {3})), AutogradError);
}

TEST(Engine, RequiresGradFlagsOnlyChangeOnLeaves) {
  Tensor x = leaf({1}, {1});
  Tensor y = x * 2;
  EXPECT_THROW(y.requires_grad_(false), AutogradError);
  EXPECT_NO_THROW(y.requires_grad_(true));
  x.requires_grad_(false);
  EXPECT_FALSE((x * 2).requires_grad());
  EXPECT_THROW(arange(3, Dtype::Int64).requires_grad_(), DtypeError);
}

TEST(Engine, RetainGradKeepsTheGradientOfANonLeaf) {
  Tensor x = leaf({1, 2}, {2});
  Tensor h = x * 3;
  Tensor u = x * 4;
  h.retain_grad();
  EXPECT_TRUE(h.retains_grad());
  sum(h * h + u).backward();  // d/dh = 2 h; d/dx = 6 h + 4 = 18 x + 4
  expect_tensor(h.grad(), {2}, {6, 12});
  EXPECT_FALSE(u.grad().defined());
  expect_tensor(x.grad(), {2}, {22, 40});
}

TEST(Engine, BackwardOnALeafScalarSetsItsGradToOne) {
  Tensor x = leaf({5}, {});
  x.backward();
  expect_tensor(x.grad(), {}, {1});
}

TEST(Engine, DotGradIsADenseBufferEvenWhenTheGradientIsABroadcastView) {
  Tensor x = leaf({1, 2, 3, 4}, {2, 2});
  sum(x).backward();  // SumBackward hands out a stride-0 view
  EXPECT_TRUE(x.grad().is_contiguous());
  expect_tensor(x.grad(), {2, 2}, {1, 1, 1, 1});
  x.zero_grad();
  sum(x * x).backward(Tensor(), std::nullopt, /*create_graph=*/true);
  Tensor g = x.grad();  // 2 x, with history
  EXPECT_TRUE(g.is_contiguous());
  EXPECT_TRUE(g.requires_grad());
  expect_tensor(g, {2, 2}, {2, 4, 6, 8});
  expect_tensor(autograd::grad({sum(g * g)}, {x})[0], {2, 2}, {8, 16, 24, 32});  // d(4x^2)/dx
  x.zero_grad(/*set_to_none=*/false);
  EXPECT_FALSE(x.grad().requires_grad());
  expect_tensor(x.grad(), {2, 2}, {0, 0, 0, 0});
}

TEST(Engine, SetGradChecksShapeAndAccumulatesOutOfPlace) {
  Tensor x = leaf({1, 2}, {2});
  Tensor mine = tensor({10.0, 20.0}, {2});
  x.set_grad(mine);
  sum(x).backward();
  expect_tensor(x.grad(), {2}, {11, 21});
  expect_tensor(mine, {2}, {10, 20});  // the caller's tensor is not written to
  EXPECT_THROW(x.set_grad(zeros({3}, Dtype::Float64)), AutogradError);
}

// (x * 2, x * 3) from one node: apply() gets one gradient per output, undefined if unused.
struct TwoOutputBackward final : autograd::Node {
  TwoOutputBackward() : Node("TwoOutputBackward") {}
  int undefined_seen = 0;
  autograd::tensor_list apply(autograd::tensor_list&& g) override {
    Tensor total = zeros(input_sizes(0), input_meta(0).dtype);
    if (g[0].defined()) total = total + g[0] * 2.0;
    if (g[1].defined()) total = total + g[1] * 3.0;
    undefined_seen += !g[0].defined() + !g[1].defined();
    return {total};
  }
};

std::pair<Tensor, Tensor> two_outputs(const Tensor& x, std::shared_ptr<TwoOutputBackward>* keep) {
  Tensor a = x.detach() * 2.0, b = x.detach() * 3.0;
  if (auto node = autograd::make_node<TwoOutputBackward>({x})) {
    node->set_history(a);
    node->set_history(b);
    *keep = node;
  }
  return {a, b};
}

TEST(Engine, MultiOutputNodesGetOneGradientPerOutput) {
  Tensor x = leaf({1, 2}, {2});
  std::shared_ptr<TwoOutputBackward> node;
  auto [a, b] = two_outputs(x, &node);
  ASSERT_NE(node, nullptr);
  EXPECT_EQ(node->num_outputs(), 2u);
  EXPECT_EQ(a.output_nr(), 0u);
  EXPECT_EQ(b.output_nr(), 1u);
  sum(a * b).backward(Tensor(), true);  // d/dx (2x * 3x) = 12 x
  expect_tensor(x.grad(), {2}, {12, 24});
  EXPECT_EQ(node->undefined_seen, 0);
  x.zero_grad();
  sum(b).backward();  // output 0 unused
  expect_tensor(x.grad(), {2}, {3, 3});
  EXPECT_EQ(node->undefined_seen, 1);
}

TEST(Engine, GradModeIsPerThread) {
  NoGradGuard guard;
  bool other_thread_enabled = false;
  std::thread t([&] { other_thread_enabled = GradMode::is_enabled(); });
  t.join();
  EXPECT_TRUE(other_thread_enabled);
  EXPECT_FALSE(GradMode::is_enabled());
}

// ---- grad() ----

TEST(EngineGrad, ReturnsGradientsWithoutTouchingDotGrad) {
  Tensor x = leaf({1, 2}, {2});
  Tensor w = leaf({3, 4}, {2});
  Tensor y = sum(x * w);
  auto g = autograd::grad({y}, {w, x});
  expect_tensor(g[0], {2}, {1, 2});
  expect_tensor(g[1], {2}, {3, 4});
  EXPECT_FALSE(x.grad().defined());
  EXPECT_FALSE(w.grad().defined());
}

TEST(EngineGrad, GradientWithRespectToANonLeaf) {
  Tensor x = leaf({1, 2}, {2});
  Tensor h = x * 3;
  Tensor y = sum(h * h);
  expect_tensor(autograd::grad({y}, {h})[0], {2}, {6, 12});
}

TEST(EngineGrad, UnusedInputsNeedAllowUnused) {
  Tensor x = leaf({1, 2}, {2});
  Tensor z = leaf({1, 2}, {2});
  Tensor y = sum(x * 2);
  const std::string msg = message_of<AutogradError>([&] {
    autograd::grad({y}, {x, z}, {}, /*retain_graph=*/true);
  });
  EXPECT_NE(msg.find("input 1 of shape [2] appears to not have been used in the graph"),
            std::string::npos)
      << msg;
  auto g = autograd::grad({y}, {x, z}, {}, std::nullopt, false, /*allow_unused=*/true);
  expect_tensor(g[0], {2}, {2, 2});
  EXPECT_FALSE(g[1].defined());
  EXPECT_THROW(autograd::grad({sum(x * 2)}, {tensor({1.0}, {1})}), AutogradError);
}

TEST(EngineGrad, CreateGraphGivesHigherDerivatives) {
  Tensor x = leaf({2, -1}, {2});
  Tensor y = sum(x * x * x);                                        // x^3
  Tensor d1 = autograd::grad({y}, {x}, {}, std::nullopt, true)[0];  // 3 x^2
  expect_tensor(d1, {2}, {12, 3});
  EXPECT_TRUE(d1.requires_grad());
  Tensor d2 = autograd::grad({sum(d1)}, {x}, {}, std::nullopt, true)[0];  // 6 x
  expect_tensor(d2, {2}, {12, -6});
  Tensor d3 = autograd::grad({sum(d2)}, {x})[0];  // 6
  expect_tensor(d3, {2}, {6, 6});
}

TEST(EngineGrad, SeveralOutputsAndGradOutputs) {
  Tensor x = leaf({1, 2}, {2});
  Tensor a = x * 2;
  Tensor b = x * x;
  auto g = autograd::grad({a, b}, {x}, {tensor({1.0, 1.0}, {2}), tensor({10.0, 100.0}, {2})});
  expect_tensor(g[0], {2}, {2 + 20, 2 + 400});
}

// ---- deep graphs ----

constexpr int kChain = 100000;

TEST(GradientBuffer, ReusesOnlyADenseBufferNoOneElseSees) {
  auto reused = [](const Tensor& g) { return autograd::gradient_buffer(g).impl() == g.impl(); };
  NoGradGuard no_grad;
  EXPECT_TRUE(reused(ones({2, 3})));  // a temporary: the argument is its only handle
  const Tensor fresh = ones({2, 3});
  EXPECT_TRUE(reused(fresh));
  const Tensor other_handle = fresh;  // a second handle on the impl
  EXPECT_FALSE(reused(fresh));
  const Tensor viewed = ones({2, 3});
  const Tensor view = viewed.view({3, 2});  // a second impl on the storage
  EXPECT_FALSE(reused(viewed));
  EXPECT_FALSE(reused(view));
  EXPECT_FALSE(reused(ones({2, 3}).t()));  // the storage's only view, but not contiguous
  double user_memory[6] = {1, 2, 3, 4, 5, 6};
  EXPECT_FALSE(reused(Tensor::make(Storage::wrap(user_memory, sizeof user_memory),
                                   Layout::contiguous({2, 3}), Dtype::Float64)));
  EXPECT_FALSE(reused(ones({2, 3}).requires_grad_()));  // autograd state
  {
    EnableGradGuard grad;  // create_graph: the gradient may be part of a graph
    EXPECT_FALSE(reused(ones({2, 3})));
  }
  // A new buffer has g's shape and dtype.
  const Tensor g = ones({4, 5}, Dtype::Float32), shared = g;
  const Tensor buffer = autograd::gradient_buffer(g);
  EXPECT_EQ(buffer.sizes(), Shape({4, 5}));
  EXPECT_EQ(buffer.dtype(), Dtype::Float32);
  EXPECT_FALSE(buffer.shares_storage(g));
}

TEST(EngineDeep, A100kOpChainBackpropagatesAndIsDestroyedWithoutRecursion) {
  Tensor x = leaf({1}, {});
  Tensor w = leaf({1.00001}, {});
  Tensor y = x;
  for (int i = 0; i < kChain; ++i) y = y * w;  // y = x w^N, each node saves y_i and w
  y.backward();
  const double wn = std::pow(1.00001, kChain);
  EXPECT_NEAR(x.grad().item<double>(), wn, 1e-9 * wn);
  EXPECT_NEAR(w.grad().item<double>(), kChain * wn / 1.00001, 1e-7 * kChain * wn);
  y = Tensor();  // releases the (already released) chain
}

TEST(EngineDeep, A100kOpChainWithSavedTensorsIsDestroyedIteratively) {
  Tensor x = leaf({0.5}, {});
  Tensor w = leaf({1}, {});
  Tensor y = x;
  for (int i = 0; i < kChain; ++i) y = exp(y * w) * 0.5;
  std::weak_ptr<autograd::Node> first;
  {
    Tensor probe = y;
    first = probe.grad_fn();
  }
  EXPECT_FALSE(first.expired());
  y = Tensor();  // nodes hold saved inputs whose grad_fn is the previous node
  EXPECT_TRUE(first.expired());
}

// 16-bit gradients add in float32 and round once (the bulk conversions on contiguous runs,
// chunks gathered from strided ones): a leaf reached twice in one backward, once through a
// transpose (the sum of a contiguous and a strided gradient), then accumulated into .grad by a
// second backward; against the sums computed element by element here.
TEST(Engine, SixteenBitGradientSumsRoundOnce) {
  for (Dtype dt : {Dtype::Float16, Dtype::BFloat16}) {
    manual_seed(7);
    const int64_t rows = 40, cols = 300;
    const Tensor g1 = randn({rows, cols}).to(dt), g2 = randn({cols, rows}).to(dt);
    const Tensor g3 = randn({rows, cols}).to(dt);
    Tensor x = randn({rows, cols}).to(dt);
    x.requires_grad_();
    autograd::backward({mul(x, 1.0), transpose(x, 0, 1)}, {g1, g2});
    autograd::backward({mul(x, 1.0)}, {g3});
    const std::vector<double> got = x.grad().to(Dtype::Float64).contiguous().to_vector<double>();
    const std::vector<double> a = g1.to(Dtype::Float64).to_vector<double>();
    const std::vector<double> b = g2.to(Dtype::Float64).to_vector<double>();
    const std::vector<double> c = g3.to(Dtype::Float64).to_vector<double>();
    auto round16 = [dt](float v) {
      return dt == Dtype::Float16 ? static_cast<float>(Half(v)) : static_cast<float>(BFloat16(v));
    };
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        const float s1 = static_cast<float>(a[i * cols + j]) + static_cast<float>(b[j * rows + i]);
        const float s2 = round16(s1) + static_cast<float>(c[i * cols + j]);
        ASSERT_EQ(got[i * cols + j], static_cast<double>(round16(s2)))
            << "dtype " << static_cast<int>(dt) << " at " << i << ", " << j;
      }
  }
}

}  // namespace
}  // namespace aclgrad
