// Batch transforms against hand-computed outputs. The random offsets and coin flips are
// predicted by a copy of the generator, drawing in the documented order.
#include <gtest/gtest.h>

#include <vector>

#include "nn/transforms.h"
#include "tensor/creation.h"

namespace aclgrad::data::transforms {
namespace {

using F = std::vector<float>;

// [N, C, H, W] with values 1, 2, 3, ... (so a zero can only come from padding).
Tensor counting(const Shape& shape, Dtype dtype = Dtype::Float32) {
  return arange(1, 1 + static_cast<double>(checked_numel(shape, "counting")), 1, dtype)
      .reshape(shape);
}

TEST(Normalize, PerChannelMeanAndStd) {
  const Tensor x = from_vector(F{1, 2, 3, 4, 5, 6, 7, 8}, {1, 2, 2, 2});
  const Tensor y = normalize(x, {0.5, 1.0}, {0.5, 2.0});
  // channel 0: (v - 0.5) / 0.5; channel 1: (v - 1) / 2
  EXPECT_EQ(y.to_vector<float>(), (F{1, 3, 5, 7, 2, 2.5, 3, 3.5}));
  const Tensor z = normalize(x.to(Dtype::Float64), {1.0}, {4.0});  // one value for all channels
  EXPECT_EQ(z.to_vector<double>(), (std::vector<double>{0, 0.25, 0.5, 0.75, 1, 1.25, 1.5, 1.75}));
  EXPECT_EQ(z.dtype(), Dtype::Float64);
  // float32: (x - float(mean)) / float(std), as torchvision
  const Tensor w = normalize(from_vector(F{0.7f}, {1, 1, 1, 1}), {0.1307}, {0.3081});
  EXPECT_EQ(w.item<float>(), (0.7f - 0.1307f) / 0.3081f);
}

TEST(Normalize, SingleImageAndErrors) {
  const Tensor x = from_vector(F{2, 4}, {2, 1, 1});
  EXPECT_EQ(normalize(x, {1, 2}, {1, 2}).sizes(), (Shape{2, 1, 1}));
  EXPECT_EQ(normalize(x, {1, 2}, {1, 2}).to_vector<float>(), (F{1, 1}));
  EXPECT_THROW(normalize(x, {1, 2, 3}, {1}), ShapeError);
  EXPECT_THROW(normalize(x, {1}, {0}), Error);
  EXPECT_THROW(normalize(from_vector(F{1, 2}, {2}), {0}, {1}), ShapeError);
}

TEST(RandomCrop, FullPaddedSizeIsTheZeroPaddedImage) {
  // size == H + 2p leaves only offset 0: the output is the image with a zero border.
  const Tensor x = counting({1, 1, 2, 2});
  Generator gen(5);
  const Tensor y = random_crop(x, 4, 1, gen);
  EXPECT_EQ(y.to_vector<float>(), (F{0, 0, 0, 0,  //
                                     0, 1, 2, 0,  //
                                     0, 3, 4, 0,  //
                                     0, 0, 0, 0}));
}

TEST(RandomCrop, OffsetsFollowTheGeneratorPerExample) {
  const int64_t N = 6, C = 2, H = 5, W = 4, size = 3, pad = 2;
  const Tensor x = counting({N, C, H, W});
  const std::vector<float> xv = x.to_vector<float>();
  Generator gen(123), predict(123);
  const Tensor y = random_crop(x, size, pad, gen);
  EXPECT_EQ(y.sizes(), (Shape{N, C, size, size}));
  const std::vector<float> yv = y.to_vector<float>();
  for (int64_t n = 0; n < N; ++n) {
    const int64_t top = static_cast<int64_t>(predict.below(H + 2 * pad - size + 1));
    const int64_t left = static_cast<int64_t>(predict.below(W + 2 * pad - size + 1));
    for (int64_t c = 0; c < C; ++c) {
      for (int64_t i = 0; i < size; ++i) {
        for (int64_t j = 0; j < size; ++j) {
          const int64_t r = top + i - pad, q = left + j - pad;  // in the unpadded image
          const float expected =
              r >= 0 && r < H && q >= 0 && q < W ? xv[((n * C + c) * H + r) * W + q] : 0.0f;
          EXPECT_EQ(yv[((n * C + c) * size + i) * size + j], expected)
              << "n " << n << " c " << c << " i " << i << " j " << j;
        }
      }
    }
  }
}

TEST(RandomCrop, DeterministicForASeedAndErrors) {
  const Tensor x = counting({8, 1, 6, 6}, Dtype::Float64);
  Generator a(9), b(9), c(10);
  const auto ya = random_crop(x, 4, 2, a).to_vector<double>();
  EXPECT_EQ(ya, random_crop(x, 4, 2, b).to_vector<double>());
  EXPECT_NE(ya, random_crop(x, 4, 2, c).to_vector<double>());
  Generator g(1);
  EXPECT_THROW(random_crop(x, 11, 2, g), ShapeError);
  EXPECT_THROW(random_crop(x.to(Dtype::Int64), 2, 0, g), DtypeError);
}

TEST(RandomHorizontalFlip, AlwaysNeverAndPredicted) {
  const Tensor x = counting({3, 1, 2, 3});
  Generator gen(4);
  EXPECT_EQ(random_horizontal_flip(x, 1.0, gen).to_vector<float>(),
            (F{3, 2, 1, 6, 5, 4, 9, 8, 7, 12, 11, 10, 15, 14, 13, 18, 17, 16}));
  EXPECT_EQ(random_horizontal_flip(x, 0.0, gen).to_vector<float>(), x.to_vector<float>());
  const Tensor big = counting({64, 2, 1, 2});
  Generator g(77), predict(77);
  const std::vector<float> y = random_horizontal_flip(big, 0.5, g).to_vector<float>();
  int flipped = 0;
  for (int64_t n = 0; n < 64; ++n) {
    const bool flip = predict.uniform() < 0.5;
    flipped += flip;
    for (int64_t c = 0; c < 2; ++c) {
      const float a = static_cast<float>(n * 4 + c * 2 + 1), b = a + 1;
      EXPECT_EQ(y[n * 4 + c * 2], flip ? b : a);
      EXPECT_EQ(y[n * 4 + c * 2 + 1], flip ? a : b);
    }
  }
  EXPECT_GT(flipped, 10);
  EXPECT_LT(flipped, 54);
}

TEST(Compose, AppliesInOrderWithOneGeneratorAndKeepsTheTarget) {
  const Tensor x = counting({4, 1, 3, 3});
  const Tensor target = from_vector(std::vector<int64_t>{1, 2, 3, 4});
  const BatchTransform t =
      compose({RandomCrop(3, 1), RandomHorizontalFlip(0.5), Normalize({1.0}, {2.0})});
  Generator g1(5), g2(5);
  const Example out = t({x, target}, g1);
  // The same steps by hand, with the same generator sequence.
  Tensor expected = random_crop(x, 3, 1, g2);
  expected = random_horizontal_flip(expected, 0.5, g2);
  expected = normalize(expected, {1.0}, {2.0});
  EXPECT_EQ(out.data.to_vector<float>(), expected.to_vector<float>());
  EXPECT_EQ(out.target.to_vector<int64_t>(), target.to_vector<int64_t>());
}

}  // namespace
}  // namespace aclgrad::data::transforms
