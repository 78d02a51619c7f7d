// Gradient clipping against hand-computed norms and coefficients.
#include <gtest/gtest.h>

#include <cmath>

#include "autograd/autograd.h"
#include "nn/clip.h"
#include "tensor/creation.h"

namespace aclgrad::nn::utils {
namespace {

using Vec = std::vector<double>;

Tensor with_grad(const Vec& g, Dtype dtype = Dtype::Float64) {
  const Shape shape{static_cast<int64_t>(g.size())};
  Tensor p = zeros(shape, dtype);
  p.requires_grad_();
  p.set_grad(from_vector(g, shape, dtype));
  return p;
}

Vec grad_of(const Tensor& p) {
  return p.grad().to_vector<double>();
}

TEST(ClipGradNorm, TwoNormScalesEveryGradientByOneCoefficient) {
  Tensor a = with_grad({3, 4}), b = with_grad({12});  // total sqrt(9 + 16 + 144) = 13
  const double total = clip_grad_norm_({a, b}, 6.5);
  EXPECT_DOUBLE_EQ(total, 13.0);
  const double coef = 6.5 / (13.0 + 1e-6);
  EXPECT_DOUBLE_EQ(grad_of(a)[0], 3 * coef);
  EXPECT_DOUBLE_EQ(grad_of(a)[1], 4 * coef);
  EXPECT_DOUBLE_EQ(grad_of(b)[0], 12 * coef);
}

TEST(ClipGradNorm, BelowMaxNormLeavesGradientsUntouched) {
  Tensor a = with_grad({3, 4});
  const uint64_t version = a.grad().version();
  EXPECT_DOUBLE_EQ(clip_grad_norm_({a}, 5.0), 5.0);  // coef = 5 / (5 + 1e-6) < 1: scaled
  EXPECT_LT(grad_of(a)[0], 3.0);
  EXPECT_GT(a.grad().version(), version);
  Tensor c = with_grad({3, 4});
  EXPECT_DOUBLE_EQ(clip_grad_norm_({c}, 5.00001), 5.0);  // coef > 1: untouched
  EXPECT_EQ(grad_of(c), (Vec{3, 4}));
}

TEST(ClipGradNorm, InfinityAndOneNorms) {
  Tensor a = with_grad({-7, 2}), b = with_grad({5});
  EXPECT_DOUBLE_EQ(clip_grad_norm_({a, b}, 100, kInfNorm), 7.0);
  EXPECT_DOUBLE_EQ(clip_grad_norm_({a, b}, 100, 1.0), 14.0);
  EXPECT_DOUBLE_EQ(clip_grad_norm_({a, b}, 1.0, kInfNorm), 7.0);
  EXPECT_NEAR(grad_of(a)[0], -7.0 / (7.0 + 1e-6), 1e-15);
  EXPECT_NEAR(grad_of(b)[0], 5.0 / (7.0 + 1e-6), 1e-15);
  Tensor c = with_grad({1, 2, 2});
  EXPECT_NEAR(clip_grad_norm_({c}, 100, 3.0), std::cbrt(1 + 8 + 8), 1e-14);
}

TEST(ClipGradNorm, Float32AndNonContiguousGradients) {
  Tensor p = zeros({2, 2});
  p.requires_grad_();
  p.set_grad(from_vector(Vec{1, 2, 3, 4}, {2, 2}, Dtype::Float32).t());  // strides [1, 2]
  ASSERT_FALSE(p.grad().is_contiguous());
  const double total = clip_grad_norm_({p}, 1.0);
  EXPECT_NEAR(total, std::sqrt(30.0), 1e-12);
  const float coef = static_cast<float>(1.0 / (std::sqrt(30.0) + 1e-6));
  EXPECT_EQ(p.grad().to_vector<float>(),
            (std::vector<float>{1 * coef, 3 * coef, 2 * coef, 4 * coef}));
}

TEST(ClipGradNorm, LongGradientsUseEveryElement) {
  Vec g(101);
  for (int i = 0; i < 101; ++i) g[i] = i;  // sum of squares 0..100 = 338350
  for (Dtype dtype : {Dtype::Float64, Dtype::Float32}) {
    Tensor a = with_grad(g, dtype);
    EXPECT_DOUBLE_EQ(clip_grad_norm_({a}, 1e9), std::sqrt(338350.0));
    EXPECT_DOUBLE_EQ(clip_grad_norm_({a}, 1e9, kInfNorm), 100.0);
    EXPECT_DOUBLE_EQ(clip_grad_norm_({a}, 1e9, 1.0), 5050.0);
  }
}

TEST(ClipGradNorm, SkipsParametersWithoutGradients) {
  Tensor none = zeros({3});
  none.requires_grad_();
  EXPECT_EQ(clip_grad_norm_({none}, 1.0), 0.0);
  Tensor a = with_grad({6, 8});
  EXPECT_DOUBLE_EQ(clip_grad_norm_({none, a}, 1.0), 10.0);
  EXPECT_FALSE(none.grad().defined());
}

TEST(ClipGradNorm, NonFiniteNorm) {
  Tensor a = with_grad({NAN, 1});
  EXPECT_THROW(clip_grad_norm_({a}, 1.0, 2.0, /*error_if_nonfinite=*/true), Error);
  EXPECT_EQ(grad_of(a)[1], 1.0);  // unchanged on error
  EXPECT_TRUE(std::isnan(clip_grad_norm_({a}, 1.0, kInfNorm)));
  Tensor b = with_grad({INFINITY, 1});
  EXPECT_THROW(clip_grad_norm_({b}, 1.0, kInfNorm, true), Error);
  EXPECT_THROW(clip_grad_norm_({b}, 1.0, -1.0), Error);
}

TEST(ClipGradValue, ClampsEveryElement) {
  Tensor a = with_grad({-3, -0.5, 0.5, 3}), b = with_grad({2.5}, Dtype::Float32);
  clip_grad_value_({a, b}, 1.0);
  EXPECT_EQ(grad_of(a), (Vec{-1, -0.5, 0.5, 1}));
  EXPECT_EQ(grad_of(b), (Vec{1}));
}

}  // namespace
}  // namespace aclgrad::nn::utils
