// AutocastGuard (nesting, disabling, per thread, bad dtype), the recorded cast op, the cast
// cache of the outermost scope, backward inside a scope, and batch_norm's mixed precision
// (16-bit input, float32 parameters and statistics).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <thread>

#include "ops/ops.h"
#include "tests/ops/ops_test_util.h"

namespace aclgrad {
namespace {

using testing::message_of;

TEST(AutocastGuard, IsOffByDefaultNestsAndRestoresOnExit) {
  EXPECT_FALSE(AutocastMode::is_enabled());
  {
    AutocastGuard outer(Dtype::BFloat16);
    EXPECT_TRUE(AutocastMode::is_enabled());
    EXPECT_EQ(AutocastMode::dtype(), Dtype::BFloat16);
    {
      AutocastGuard inner(Dtype::Float16);
      EXPECT_EQ(AutocastMode::dtype(), Dtype::Float16);
      EXPECT_EQ(linear(randn({2, 3}), randn({4, 3})).dtype(), Dtype::Float16);
      {
        AutocastGuard off(false);
        EXPECT_FALSE(AutocastMode::is_enabled());
        EXPECT_EQ(linear(randn({2, 3}), randn({4, 3})).dtype(), Dtype::Float32);
      }
      EXPECT_TRUE(AutocastMode::is_enabled());
    }
    EXPECT_EQ(AutocastMode::dtype(), Dtype::BFloat16);
    EXPECT_EQ(linear(randn({2, 3}), randn({4, 3})).dtype(), Dtype::BFloat16);
  }
  EXPECT_FALSE(AutocastMode::is_enabled());
  EXPECT_EQ(linear(randn({2, 3}), randn({4, 3})).dtype(), Dtype::Float32);
}

TEST(AutocastGuard, IsPerThread) {
  AutocastGuard autocast(Dtype::BFloat16);
  bool other_thread_enabled = true;
  Dtype other_dtype = Dtype::Float64;
  std::thread t([&] {
    other_thread_enabled = AutocastMode::is_enabled();
    other_dtype = linear(randn({2, 3}), randn({4, 3})).dtype();
  });
  t.join();
  EXPECT_FALSE(other_thread_enabled);
  EXPECT_EQ(other_dtype, Dtype::Float32);
  EXPECT_EQ(linear(randn({2, 3}), randn({4, 3})).dtype(), Dtype::BFloat16);
}

TEST(AutocastGuard, RefusesADtypeOtherThanFloat16OrBFloat16) {
  const std::string msg = message_of<DtypeError>([] { AutocastGuard g(Dtype::Float32); });
  EXPECT_NE(msg.find("AutocastGuard: dtype must be bfloat16 or float16"), std::string::npos) << msg;
  EXPECT_NE(msg.find("got float32"), std::string::npos) << msg;
  EXPECT_FALSE(AutocastMode::is_enabled());
}

TEST(Cast, ForwardRoundsAndBackwardCastsTheGradientBack) {
  const Tensor x = from_vector(std::vector<float>{1.0f, 1.00390625f, -3.0f}, {3}).requires_grad_();
  const Tensor y = cast(x, Dtype::BFloat16);
  EXPECT_EQ(y.dtype(), Dtype::BFloat16);
  // 1 + 2^-8 is a tie between bfloat16 neighbours 1 and 1 + 2^-7: to even gives 1.
  EXPECT_EQ(y.to_vector<double>(), (std::vector<double>{1.0, 1.0, -3.0}));
  const Tensor g =
      from_vector(std::vector<float>{0.5f, 2.0f, -1.0f}, {3}).to(Dtype::BFloat16).requires_grad_();
  const Tensor gx = autograd::grad({y}, {x}, {g}, /*retain_graph=*/true, /*create_graph=*/true)[0];
  EXPECT_EQ(gx.dtype(), Dtype::Float32);
  EXPECT_EQ(gx.to_vector<double>(), (std::vector<double>{0.5, 2.0, -1.0}));
  // The gradient's cast is recorded (double backward): it depends on g.
  ASSERT_NE(gx.grad_fn(), nullptr);
  EXPECT_STREQ(gx.grad_fn()->name(), "CastBackward");
  EXPECT_EQ(cast(x, Dtype::Float32).impl(), x.impl());  // same dtype: x itself
}

TEST(AutocastCache, CastsAParameterOncePerOutermostScope) {
  const Tensor w = randn({4, 3}).requires_grad_(), b = randn({4}).requires_grad_();
  const Tensor x = randn({2, 3});
  Tensor y1, y2, y3;
  {
    AutocastGuard autocast(Dtype::BFloat16);
    y1 = linear(x, w, b);
    {
      AutocastGuard nested(Dtype::BFloat16);
      y2 = linear(x, w, b);
      EXPECT_EQ(autocast_detail::cached_cast_count(), 2u);  // w and b, not the input
    }
    EXPECT_EQ(autocast_detail::cached_cast_count(), 2u);  // kept until the outermost exits
  }
  EXPECT_EQ(autocast_detail::cached_cast_count(), 0u);
  {
    AutocastGuard autocast(Dtype::BFloat16);
    y3 = linear(x, w, b);
  }
  // y = matmul(...) + cast(b): the bias's cast node is shared within a scope only.
  const auto bias_cast = [](const Tensor& y) { return y.grad_fn()->next_edges()[1].node; };
  EXPECT_STREQ(bias_cast(y1)->name(), "CastBackward");
  EXPECT_EQ(bias_cast(y1), bias_cast(y2));
  EXPECT_NE(bias_cast(y1), bias_cast(y3));
  // Both uses reach w through the one cast: its float32 gradient is the sum of both.
  add(sum(cast(y1, Dtype::Float32)), sum(cast(y2, Dtype::Float32))).backward();
  EXPECT_EQ(w.grad().dtype(), Dtype::Float32);
  // d/dw sum(x w^T) = the column sums of x (as bfloat16) in every row; twice for two uses.
  const std::vector<double> xs = x.to(Dtype::BFloat16).to_vector<double>();
  const std::vector<double> gw = w.grad().to_vector<double>();
  for (int64_t o = 0; o < 4; ++o) {
    for (int64_t i = 0; i < 3; ++i) {
      const double want = 2 * (xs[i] + xs[3 + i]);
      EXPECT_NEAR(gw[o * 3 + i], want, 2e-2 * std::max(1.0, std::fabs(want))) << o << "," << i;
    }
  }
}

TEST(AutocastCache, AnInPlaceUpdateOfTheParameterMakesANewCast) {
  const Tensor w = ones({2, 2}).requires_grad_();
  AutocastGuard autocast(Dtype::BFloat16);
  const Tensor x = ones({1, 2});
  EXPECT_EQ(linear(x, w).to_vector<double>(), (std::vector<double>{2, 2}));
  {
    NoGradGuard no_grad;
    w.fill_(3.0);  // as an optimizer step would, inside the scope
  }
  EXPECT_EQ(linear(x, w).to_vector<double>(), (std::vector<double>{6, 6}));
}

TEST(AutocastCache, NothingIsCachedWithoutGradMode) {
  const Tensor w = randn({4, 3}).requires_grad_();
  AutocastGuard autocast(Dtype::BFloat16);
  {
    NoGradGuard no_grad;
    (void)linear(randn({2, 3}), w);
  }
  EXPECT_EQ(autocast_detail::cached_cast_count(), 0u);
  // A later recorded use gets a cast with history, so the gradient reaches w.
  sum(cast(linear(randn({2, 3}), w), Dtype::Float32)).backward();
  EXPECT_TRUE(w.grad().defined());
}

TEST(AutocastBackward, RunsInTheForwardsDtypesEvenInsideAScope) {
  const Tensor x = randn({3, 5}), w = randn({4, 5}).requires_grad_();
  Tensor grads[2];
  for (int in_scope = 0; in_scope < 2; ++in_scope) {
    w.zero_grad();
    AutocastGuard autocast(Dtype::BFloat16);
    Tensor loss;
    {
      AutocastGuard fp32(false);  // a float32 region: its matmul's backward must stay float32
      loss = sum(matmul(x, transpose(w, 0, 1)));
    }
    if (in_scope) {
      loss.backward();
    } else {
      AutocastGuard off(false);
      loss.backward();
    }
    grads[in_scope] = w.grad().clone();
  }
  EXPECT_EQ(grads[1].dtype(), Dtype::Float32);
  EXPECT_EQ(testing::bytes_of(grads[1]), testing::bytes_of(grads[0]));
}

// max |a - b| / max(1, max |b|), both read as doubles.
double rel_diff(const Tensor& a, const Tensor& b) {
  const Tensor d = a.to(Dtype::Float64), r = b.to(Dtype::Float64);
  return max(abs(sub(d, r))).item<double>() / std::max(1.0, max(abs(r)).item<double>());
}

// batch_norm with a 16-bit input and float32 weight, bias and running statistics.
TEST(BatchNormMixed, BFloat16InputWithFloat32ParametersMatchesFloat32) {
  const Tensor x = randn({4, 3, 5, 5}).to(Dtype::BFloat16);
  const Tensor w = add(rand({3}), 0.5), b = randn({3});
  Tensor rm = zeros({3}), rv = ones({3});
  Tensor rm32 = zeros({3}), rv32 = ones({3});
  const Tensor wl = w.clone().requires_grad_(), bl = b.clone().requires_grad_();
  const Tensor xl = x.clone().requires_grad_();
  const Tensor y = batch_norm(xl, rm, rv, wl, bl, true, 0.1, 1e-5);
  EXPECT_EQ(y.dtype(), Dtype::BFloat16);
  const Tensor x32 = x.to(Dtype::Float32).requires_grad_();
  const Tensor w32 = w.clone().requires_grad_(), b32 = b.clone().requires_grad_();
  const Tensor y32 = batch_norm(x32, rm32, rv32, w32, b32, true, 0.1, 1e-5);
  EXPECT_LT(rel_diff(y, y32), 2e-2);
  // The running statistics stay float32 and see the same batch statistics (kept in double).
  EXPECT_EQ(rm.dtype(), Dtype::Float32);
  EXPECT_EQ(testing::bytes_of(rm), testing::bytes_of(rm32));
  EXPECT_EQ(testing::bytes_of(rv), testing::bytes_of(rv32));

  const Tensor g = randn(y.sizes());
  y.backward(g.to(Dtype::BFloat16));
  y32.backward(g);
  EXPECT_EQ(xl.grad().dtype(), Dtype::BFloat16);
  EXPECT_EQ(wl.grad().dtype(), Dtype::Float32);
  EXPECT_EQ(bl.grad().dtype(), Dtype::Float32);
  EXPECT_LT(rel_diff(xl.grad(), x32.grad()), 2e-2);
  EXPECT_LT(rel_diff(wl.grad(), w32.grad()), 2e-2);
  EXPECT_LT(rel_diff(bl.grad(), b32.grad()), 2e-2);
}

TEST(BatchNormMixed, ComposedBackwardAgreesWithTheFusedOne) {
  const Tensor x = randn({3, 2, 4}).to(Dtype::BFloat16).requires_grad_();
  const Tensor w = add(rand({2}), 0.5).requires_grad_(), b = randn({2}).requires_grad_();
  const Tensor g = randn({3, 2, 4}).to(Dtype::BFloat16);
  for (bool training : {true, false}) {
    SCOPED_TRACE(training ? "training" : "eval");
    const Tensor rm = full({2}, 0.1), rv = full({2}, 1.5);
    const Tensor y = batch_norm(x, rm, rv, w, b, training);
    const auto fused = autograd::grad({y}, {x, w, b}, {g}, /*retain_graph=*/true);
    const auto composed = autograd::grad({y}, {x, w, b}, {g}, true, /*create_graph=*/true);
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_EQ(composed[i].dtype(), fused[i].dtype()) << i;
      EXPECT_LT(rel_diff(composed[i], fused[i]), 2e-2) << i;
    }
    EXPECT_NE(composed[1].grad_fn(), nullptr);  // differentiable again
  }
}

TEST(BatchNormMixed, RefusesParametersOfAnotherDtype) {
  const std::string msg = message_of<DtypeError>([] {
    (void)batch_norm(randn({2, 3, 4}), {}, {}, ones({3}, Dtype::BFloat16), {}, true);
  });
  EXPECT_NE(msg.find("batch_norm: expected weight to have the input's dtype float32, got bfloat16"),
            std::string::npos)
      << msg;
  const std::string msg16 = message_of<DtypeError>([] {
    (void)batch_norm(randn({2, 3, 4}).to(Dtype::Float16), {}, {}, ones({3}, Dtype::BFloat16), {},
                     true);
  });
  EXPECT_NE(msg16.find("input's dtype float16 or float32, got bfloat16"), std::string::npos)
      << msg16;
}

}  // namespace
}  // namespace aclgrad
