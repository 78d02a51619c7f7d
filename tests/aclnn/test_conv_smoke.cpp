// Hand-computed convolution cases through the public API: the spec sample, 1d / dilated / strided /
// asymmetric-padding / transposed / ConvTbc forward and backward worked out on paper, every dtype,
// cubeMathType rounding, non-contiguous operands, masked outputs, repeatable executors and the
// workspace contract. The float64-reference sweep lives in test_conv_sweep*.cpp.
#include <cmath>
#include <cstdlib>
#include <vector>

#include <gtest/gtest.h>

#include "acl/acl.h"
#include "aclnnop/aclnn_convolution.h"
#include "aclnnop/aclnn_convolution_backward.h"
#include "support/acl_test_util.h"

namespace {

using acltest::CallResult;
using acltest::Layout;
using acltest::TestTensor;
using V = std::vector<double>;
using Shape = std::vector<int64_t>;

struct Attrs {
  Shape stride, padding, dilation, output_padding;
  bool transposed = false;
  int groups = 1;
  std::vector<bool> mask{true, true, true};
  int8_t cube = 0;
};

// Attributes of an n-d convolution with unit stride/dilation and no padding.
Attrs Plain(size_t n) {
  return Attrs{Shape(n, 1), Shape(n, 0), Shape(n, 1), Shape(n, 0)};
}

// aclnnConvolutionBackward over test tensors; null outputs for null pointers.
CallResult Backward(const TestTensor& gy, const TestTensor& x, const TestTensor& w, const Attrs& a,
                    TestTensor* gx, TestTensor* gw, TestTensor* gb) {
  const int64_t c_out = a.transposed ? w.shape()[1] * a.groups : w.shape()[0];
  auto bias_sizes = acltest::MakeIntArray({c_out});
  auto stride = acltest::MakeIntArray(a.stride);
  auto padding = acltest::MakeIntArray(a.padding);
  auto dilation = acltest::MakeIntArray(a.dilation);
  auto op = acltest::MakeIntArray(a.output_padding);
  auto mask = acltest::MakeBoolArray(a.mask);
  return acltest::RunTwoPhase(
      [&](uint64_t* ws, aclOpExecutor** ex) {
        return aclnnConvolutionBackwardGetWorkspaceSize(
            gy.get(), x.get(), w.get(), bias_sizes.get(), stride.get(), padding.get(),
            dilation.get(), a.transposed, op.get(), a.groups, mask.get(), a.cube,
            gx ? gx->get() : nullptr, gw ? gw->get() : nullptr, gb ? gb->get() : nullptr, ws, ex);
      },
      aclnnConvolutionBackward);
}

CallResult Forward(const TestTensor& x, const TestTensor& w, const TestTensor* b, const Attrs& a,
                   TestTensor& y) {
  auto stride = acltest::MakeIntArray(a.stride);
  auto padding = acltest::MakeIntArray(a.padding);
  auto dilation = acltest::MakeIntArray(a.dilation);
  auto op = acltest::MakeIntArray(a.output_padding);
  return acltest::RunTwoPhase(
      [&](uint64_t* ws, aclOpExecutor** ex) {
        return aclnnConvolutionGetWorkspaceSize(
            x.get(), w.get(), b ? b->get() : nullptr, stride.get(), padding.get(), dilation.get(),
            a.transposed, op.get(), a.groups, y.get(), a.cube, ws, ex);
      },
      aclnnConvolution);
}

TestTensor Filled(const Shape& shape, const V& values, aclDataType dt = ACL_FLOAT,
                  Layout layout = Layout::kContiguous, uint64_t seed = 0) {
  TestTensor t(shape, dt, layout, seed);
  t.Fill(values);
  return t;
}

TestTensor Constant(const Shape& shape, double v, aclDataType dt = ACL_FLOAT,
                    Layout layout = Layout::kContiguous, uint64_t seed = 0) {
  return Filled(shape, V(acltest::Numel(shape), v), dt, layout, seed);
}

TestTensor Out(const Shape& shape, aclDataType dt = ACL_FLOAT, Layout layout = Layout::kContiguous,
               uint64_t seed = 0) {
  return TestTensor::Output(shape, dt, layout, seed);
}

V Rep(size_t n, double v) {
  return V(n, v);
}

// The spec sample: all-ones [2, 2, 7, 7] input and gradOutput, [2, 2, 1, 1] weight of ones.
// dx = sum over 2 output channels of 1 = 2; dw = sum over N and 7x7 = 98; db = 98.
void ExpectSpecSample(aclDataType dt, int8_t cube) {
  TestTensor gy = Constant({2, 2, 7, 7}, 1, dt), x = Constant({2, 2, 7, 7}, 1, dt);
  TestTensor w = Constant({2, 2, 1, 1}, 1, dt);
  TestTensor gx = Out({2, 2, 7, 7}, dt), gw = Out({2, 2, 1, 1}, dt);
  TestTensor gb = Out({2}, dt);
  Attrs a = Plain(2);
  a.cube = cube;
  CallResult r = Backward(gy, x, w, a, &gx, &gw, &gb);
  ASSERT_TRUE(r.ok()) << r.Describe();
  EXPECT_EQ(gx.Read(), Rep(2 * 2 * 7 * 7, 2.0)) << acltest::DtypeName(dt);
  EXPECT_EQ(gw.Read(), Rep(4, 98.0)) << acltest::DtypeName(dt);
  EXPECT_EQ(gb.Read(), Rep(2, 98.0)) << acltest::DtypeName(dt);
}

TEST(ConvSmoke, SpecSampleEveryDtype) {
  ExpectSpecSample(ACL_FLOAT, 1);  // the sample's cubeMathType
  ExpectSpecSample(ACL_FLOAT, 0);
  ExpectSpecSample(ACL_FLOAT16, 0);
  ExpectSpecSample(ACL_BF16, 1);
  ExpectSpecSample(ACL_DOUBLE, 3);
}

// 1d: x = [1 2 3 4 5], w = [1 0 -1], pad 1. y[t] = x[t-1] - x[t+1] = [-2 -2 -2 -2 4].
// Backward with g = [1 2 3 4 5]: dx[i] = g[i+1] - g[i-1] = [2 2 2 2 -4];
// dw[k] = sum_t g[t] x[t+k-1] = [40 55 40]; db = 15.
TEST(ConvSmoke, Conv1dByHand) {
  TestTensor x = Filled({1, 1, 5}, {1, 2, 3, 4, 5}), w = Filled({1, 1, 3}, {1, 0, -1});
  TestTensor gy = Filled({1, 1, 5}, {1, 2, 3, 4, 5});
  Attrs a = Plain(1);
  a.padding = {1};
  TestTensor y = Out({1, 1, 5});
  CallResult r = Forward(x, w, nullptr, a, y);
  ASSERT_TRUE(r.ok()) << r.Describe();
  EXPECT_EQ(y.Read(), (V{-2, -2, -2, -2, 4}));

  TestTensor gx = Out({1, 1, 5}), gw = Out({1, 1, 3}), gb = Out({1});
  r = Backward(gy, x, w, a, &gx, &gw, &gb);
  ASSERT_TRUE(r.ok()) << r.Describe();
  EXPECT_EQ(gx.Read(), (V{2, 2, 2, 2, -4}));
  EXPECT_EQ(gw.Read(), (V{40, 55, 40}));
  EXPECT_EQ(gb.Read(), (V{15}));
}

// Stride 2, dilation 2: x = 1..7, w = [1 10]: L_out = (7 - 2 - 1) / 2 + 1 = 3,
// y[t] = x[2t] + 10 x[2t+2] = [31 53 75]. Backward with g = [1 1 1]: dx[i] = sum over (t, k) with
// 2t + 2k = i of w[k] = [1 0 11 0 11 0 10]; dw = [x0+x2+x4, x2+x4+x6] = [9 15]; bias adds 0.5.
TEST(ConvSmoke, StridedDilated1dByHand) {
  TestTensor x = Filled({1, 1, 7}, {1, 2, 3, 4, 5, 6, 7}), w = Filled({1, 1, 2}, {1, 10});
  TestTensor b = Filled({1}, {0.5});
  Attrs a = Plain(1);
  a.stride = {2};
  a.dilation = {2};
  TestTensor y = Out({1, 1, 3});
  CallResult r = Forward(x, w, &b, a, y);
  ASSERT_TRUE(r.ok()) << r.Describe();
  EXPECT_EQ(y.Read(), (V{31.5, 53.5, 75.5}));

  TestTensor gy = Constant({1, 1, 3}, 1), gx = Out({1, 1, 7}), gw = Out({1, 1, 2});
  a.mask = {true, true, false};
  r = Backward(gy, x, w, a, &gx, &gw, nullptr);
  ASSERT_TRUE(r.ok()) << r.Describe();
  EXPECT_EQ(gx.Read(), (V{1, 0, 11, 0, 11, 0, 10}));
  EXPECT_EQ(gw.Read(), (V{9, 15}));
}

// 2d with padding [top 1, bottom 0, left 0, right 1] and a 1x1 weight of 2: the output is the
// input shifted down one row, with a zero right column.
TEST(ConvSmoke, AsymmetricPadding2dByHand) {
  TestTensor x = Filled({1, 1, 2, 2}, {1, 2, 3, 4}), w = Constant({1, 1, 1, 1}, 2);
  Attrs a = Plain(2);
  a.padding = {1, 0, 0, 1};
  TestTensor y = Out({1, 1, 3, 3});
  CallResult r = Forward(x, w, nullptr, a, y);
  ASSERT_TRUE(r.ok()) << r.Describe();
  EXPECT_EQ(y.Read(), (V{0, 0, 0, 2, 4, 0, 6, 8, 0}));
  // Backward with gradOutput of ones: only the 4 positions that saw the input get 1 * 2.
  TestTensor gy = Constant({1, 1, 3, 3}, 1), gx = Out({1, 1, 2, 2}), gw = Out({1, 1, 1, 1});
  TestTensor gb = Out({1});
  r = Backward(gy, x, w, a, &gx, &gw, &gb);
  ASSERT_TRUE(r.ok()) << r.Describe();
  EXPECT_EQ(gx.Read(), (V{2, 2, 2, 2}));
  EXPECT_EQ(gw.Read(), (V{10}));
  EXPECT_EQ(gb.Read(), (V{9}));
}

// Grouped 2d: 2 groups of one channel each, 1x1 weights [3] and [5]: channel c is scaled by its
// own weight only.
TEST(ConvSmoke, Groups2dByHand) {
  TestTensor x = Filled({1, 2, 1, 2}, {1, 2, 10, 20}), w = Filled({2, 1, 1, 1}, {3, 5});
  Attrs a = Plain(2);
  a.groups = 2;
  TestTensor y = Out({1, 2, 1, 2});
  CallResult r = Forward(x, w, nullptr, a, y);
  ASSERT_TRUE(r.ok()) << r.Describe();
  EXPECT_EQ(y.Read(), (V{3, 6, 50, 100}));
  TestTensor gy = Filled({1, 2, 1, 2}, {1, 1, 2, 2}), gx = Out({1, 2, 1, 2}),
             gw = Out({2, 1, 1, 1});
  a.mask = {true, true, false};
  r = Backward(gy, x, w, a, &gx, &gw, nullptr);
  ASSERT_TRUE(r.ok()) << r.Describe();
  EXPECT_EQ(gx.Read(), (V{3, 3, 10, 10}));
  EXPECT_EQ(gw.Read(), (V{3, 60}));
}

// Transposed 1d: x = [1 2 3], w = [1 10] ([C_in_t = 1, C_out_t = 1, K = 2]), stride 2, output
// padding 1: L_out = (3-1)*2 + (2-1) + 1 + 1 = 7, y[2i + k] += x[i] w[k] = [1 10 2 20 3 30 0].
// Backward with g = ones(7): dx[i] = g[2i] + 10 g[2i+1] = 11; dw[k] = sum_i x[i] = 6; db = 7.
TEST(ConvSmoke, Transposed1dByHand) {
  TestTensor x = Filled({1, 1, 3}, {1, 2, 3}), w = Filled({1, 1, 2}, {1, 10});
  TestTensor b = Filled({1}, {-1});
  Attrs a = Plain(1);
  a.transposed = true;
  a.stride = {2};
  a.output_padding = {1};
  TestTensor y = Out({1, 1, 7});
  CallResult r = Forward(x, w, &b, a, y);
  ASSERT_TRUE(r.ok()) << r.Describe();
  EXPECT_EQ(y.Read(), (V{0, 9, 1, 19, 2, 29, -1}));

  TestTensor gy = Constant({1, 1, 7}, 1), gx = Out({1, 1, 3}), gw = Out({1, 1, 2}), gb = Out({1});
  r = Backward(gy, x, w, a, &gx, &gw, &gb);
  ASSERT_TRUE(r.ok()) << r.Describe();
  EXPECT_EQ(gx.Read(), (V{11, 11, 11}));
  EXPECT_EQ(gw.Read(), (V{6, 6}));
  EXPECT_EQ(gb.Read(), (V{7}));
}

// Transposed with channels: weight [C_in_t = 2, C_out_t = 1, 1]: y = 2 * x0 + 3 * x1 per position;
// gradWeight[c] = sum of x_c * g.
TEST(ConvSmoke, TransposedChannelsByHand) {
  TestTensor x = Filled({1, 2, 2}, {1, 2, 10, 20}), w = Filled({2, 1, 1}, {2, 3});
  Attrs a = Plain(1);
  a.transposed = true;
  TestTensor y = Out({1, 1, 2});
  CallResult r = Forward(x, w, nullptr, a, y);
  ASSERT_TRUE(r.ok()) << r.Describe();
  EXPECT_EQ(y.Read(), (V{32, 64}));
  TestTensor gy = Filled({1, 1, 2}, {1, 2}), gx = Out({1, 2, 2}), gw = Out({2, 1, 1}),
             gb = Out({1});
  r = Backward(gy, x, w, a, &gx, &gw, &gb);
  ASSERT_TRUE(r.ok()) << r.Describe();
  EXPECT_EQ(gx.Read(), (V{2, 4, 3, 6}));
  EXPECT_EQ(gw.Read(), (V{5, 50}));
  EXPECT_EQ(gb.Read(), (V{3}));
}

// ConvTbc: x = [1 2 3] ([T = 3, B = 1, C = 1]), w = [1 10] ([K = 2, 1, 1]), bias 0.5, pad 0:
// T_out = 2, out[t] = x[t] + 10 x[t+1] + 0.5 = [21.5 32.5]. Backward with g = [1 2]:
// dx = [g0, 10 g0 + g1, 10 g1] = [1 12 20], dw[k] = sum_t g[t] x[t+k] = [5 8], db = 3.
TEST(ConvSmoke, ConvTbcByHand) {
  TestTensor x = Filled({3, 1, 1}, {1, 2, 3}, ACL_FLOAT, Layout::kContiguous);
  TestTensor w = Filled({2, 1, 1}, {1, 10}), b = Filled({1}, {0.5});
  TestTensor y = Out({2, 1, 1});
  CallResult r = acltest::RunTwoPhase(
      [&](uint64_t* ws, aclOpExecutor** ex) {
        return aclnnConvTbcGetWorkspaceSize(x.get(), w.get(), b.get(), 0, y.get(), 0, ws, ex);
      },
      aclnnConvTbc);
  ASSERT_TRUE(r.ok()) << r.Describe();
  EXPECT_EQ(y.Read(), (V{21.5, 32.5}));

  TestTensor g = Filled({2, 1, 1}, {1, 2});
  TestTensor gx = Out({3, 1, 1}), gw = Out({2, 1, 1}), gb = Out({1});
  r = acltest::RunTwoPhase(
      [&](uint64_t* ws, aclOpExecutor** ex) {
        return aclnnConvTbcBackwardGetWorkspaceSize(g.get(), x.get(), w.get(), b.get(), 0, 0,
                                                    gx.get(), gw.get(), gb.get(), ws, ex);
      },
      aclnnConvTbcBackward);
  ASSERT_TRUE(r.ok()) << r.Describe();
  EXPECT_EQ(gx.Read(), (V{1, 12, 20}));
  EXPECT_EQ(gw.Read(), (V{5, 8}));
  EXPECT_EQ(gb.Read(), (V{3}));
}

// ConvTbc with batch 2, 2 input channels, pad 1, K = 1: out[t, b, o] = sum_c x[t-1, b, c] w[0, c,
// o] (the pad shifts nothing for K = 1 but adds a zero row at both ends), checked by a loop here.
TEST(ConvSmoke, ConvTbcBatchChannelsPadded) {
  const V xv = {1, 2, 3, 4, 5, 6, 7, 8};  // [T = 2, B = 2, C = 2]
  TestTensor x = Filled({2, 2, 2}, xv, ACL_FLOAT, Layout::kPadded, 3);
  TestTensor w = Filled({1, 2, 3}, {1, 2, 3, 4, 5, 6}), b = Filled({3}, {0, 0, 100});
  TestTensor y = Out({4, 2, 3}, ACL_FLOAT, Layout::kPermuted, 5);
  CallResult r = acltest::RunTwoPhase(
      [&](uint64_t* ws, aclOpExecutor** ex) {
        return aclnnConvTbcGetWorkspaceSize(x.get(), w.get(), b.get(), 1, y.get(), 0, ws, ex);
      },
      aclnnConvTbc);
  ASSERT_TRUE(r.ok()) << r.Describe();
  V want(4 * 2 * 3);
  for (int t = 0; t < 4; ++t)
    for (int bb = 0; bb < 2; ++bb)
      for (int o = 0; o < 3; ++o) {
        double acc = o == 2 ? 100 : 0;
        if (t >= 1 && t <= 2)
          for (int c = 0; c < 2; ++c) acc += xv[((t - 1) * 2 + bb) * 2 + c] * (c * 3 + o + 1);
        want[(t * 2 + bb) * 3 + o] = acc;
      }
  EXPECT_EQ(y.Read(), want);
}

// cubeMathType on FLOAT: 1 + 2^-20 survives KEEP_DTYPE, becomes 1 under HF32 (11 mantissa bits,
// modes 1 and 3) and under USE_FP16 (mode 2); 1 + 2^-11 is kept by HF32 but ties to 1 in fp16, and
// 1 + 2^-11 + 2^-12 ties to even in HF32. DOUBLE keeps 1 + 2^-40 whatever the mode.
TEST(ConvSmoke, CubeMathTypeRoundsOperands) {
  struct Case {
    aclDataType dt;
    double v;
    int8_t cube;
    double want;
  };
  const double e20 = std::ldexp(1.0, -20), e11 = std::ldexp(1.0, -11), e12 = std::ldexp(1.0, -12);
  const Case cases[] = {
      {ACL_FLOAT, 1 + e20, 0, 1 + e20},
      {ACL_FLOAT, 1 + e20, 1, 1},
      {ACL_FLOAT, 1 + e20, 3, 1},
      {ACL_FLOAT, 1 + e20, 2, 1},
      {ACL_FLOAT, 1 + e11, 2, 1},
      {ACL_FLOAT, 1 + e11, 3, 1 + e11},
      {ACL_FLOAT, 1 + e11 + e12, 3, 1 + 2 * e11},
      {ACL_DOUBLE, 1 + std::ldexp(1.0, -40), 2, 1 + std::ldexp(1.0, -40)},
  };
  for (const Case& c : cases) {
    TestTensor x = Constant({1, 1, 1}, c.v, c.dt), w = Constant({1, 1, 1}, 1, c.dt);
    TestTensor b = Constant({1}, 0, c.dt), y = Out({1, 1, 1}, c.dt);
    Attrs a = Plain(1);
    a.cube = c.cube;
    CallResult r = Forward(x, w, &b, a, y);
    ASSERT_TRUE(r.ok()) << r.Describe();
    EXPECT_EQ(y.Read(), (V{c.want})) << acltest::DtypeName(c.dt) << " cube " << int(c.cube);
  }
}

// Mixed operand dtypes are computed in the promoted dtype (FLOAT) and each output is written in
// its source's dtype (the spec's rule; issue #12 replaced a test of outputs in arbitrary dtypes):
// f16 input -> f16 gradInput, bf16 weight -> bf16 gradWeight, f32 gradOutput -> f32 gradBias.
TEST(ConvSmoke, OutputsInTheirSourcesDtype) {
  TestTensor gy = Constant({1, 1, 3}, 1), x = Filled({1, 1, 3}, {1, 2, 3}, ACL_FLOAT16);
  TestTensor w = Filled({1, 1, 1}, {1.0 / 3}, ACL_BF16);
  TestTensor gx = Out({1, 1, 3}, ACL_FLOAT16), gw = Out({1, 1, 1}, ACL_BF16), gb = Out({1});
  CallResult r = Backward(gy, x, w, Plain(1), &gx, &gw, &gb);
  ASSERT_TRUE(r.ok()) << r.Describe();
  EXPECT_EQ(gx.Read(), Rep(3, acltest::RoundToF16(acltest::RoundToBF16(1.0 / 3))));
  EXPECT_EQ(gw.Read(), (V{6}));
  EXPECT_EQ(gb.Read(), (V{3}));
}

// A problem with every feature (3d, groups, stride, dilation, padding), run on contiguous and on
// permuted+offset+padded (non-contiguous) operands and outputs: bit-identical results.
void ExpectLayoutInvariant(aclDataType dt, bool transposed) {
  const Shape x_shape = transposed ? Shape{2, 4, 3, 4, 3} : Shape{2, 4, 5, 6, 5};
  const Shape w_shape = transposed ? Shape{4, 3, 2, 3, 2} : Shape{6, 2, 2, 3, 2};
  const Shape y_shape = transposed ? Shape{2, 6, 5, 9, 5} : Shape{2, 6, 3, 2, 3};
  Attrs a{{2, 1, 2}, {1, 0, 1}, {1, 2, 1}, {0, 0, 0}, transposed, 2};
  if (transposed) a.stride = {2, 2, 2}, a.dilation = {1, 1, 1}, a.output_padding = {1, 0, 1};
  acltest::Rng rng(7);
  const V xv = rng.Uniform(acltest::Numel(x_shape)), wv = rng.Uniform(acltest::Numel(w_shape));
  const V gv = rng.Uniform(acltest::Numel(y_shape));
  std::vector<V> results[2];
  for (int pass = 0; pass < 2; ++pass) {
    const Layout l = pass == 0 ? Layout::kContiguous : Layout::kPadded;
    TestTensor x = Filled(x_shape, xv, dt, l, 11), w = Filled(w_shape, wv, dt, l, 12);
    TestTensor gy = Filled(y_shape, gv, dt, l, 13);
    TestTensor gx = Out(x_shape, dt, l, 14), gw = Out(w_shape, dt, l, 15);
    TestTensor gb = Out({y_shape[1]}, dt, l, 16), y = Out(y_shape, dt, l, 17);
    CallResult r = Backward(gy, x, w, a, &gx, &gw, &gb);
    ASSERT_TRUE(r.ok()) << r.Describe();
    r = Forward(x, w, nullptr, a, y);
    ASSERT_TRUE(r.ok()) << r.Describe();
    EXPECT_TRUE(gx.OnlyViewWritten() && gw.OnlyViewWritten() && gb.OnlyViewWritten() &&
                y.OnlyViewWritten());
    results[pass] = {gx.Read(), gw.Read(), gb.Read(), y.Read()};
  }
  EXPECT_EQ(results[0], results[1]) << acltest::DtypeName(dt) << (transposed ? " transposed" : "");
}

TEST(ConvSmoke, NonContiguousMatchesContiguous) {
  ExpectLayoutInvariant(ACL_FLOAT, false);
  ExpectLayoutInvariant(ACL_FLOAT, true);
  ExpectLayoutInvariant(ACL_FLOAT16, false);
  ExpectLayoutInvariant(ACL_DOUBLE, true);
}

// Masked-out outputs passed as tensors keep every byte of their storage.
TEST(ConvSmoke, MaskedOutputsUntouched) {
  for (int m = 0; m < 8; ++m) {
    TestTensor gy = Constant({1, 2, 3, 3}, 1), x = Constant({1, 2, 5, 5}, 1);
    TestTensor w = Constant({2, 2, 3, 3}, 1);
    TestTensor gx = Out({1, 2, 5, 5}), gw = Out({2, 2, 3, 3}), gb = Out({2});
    Attrs a = Plain(2);
    a.mask = {(m & 1) != 0, (m & 2) != 0, (m & 4) != 0};
    CallResult r = Backward(gy, x, w, a, &gx, &gw, &gb);
    ASSERT_TRUE(r.ok()) << r.Describe();
    EXPECT_EQ(gx.Untouched(), !a.mask[0]) << "mask " << m;
    EXPECT_EQ(gw.Untouched(), !a.mask[1]) << "mask " << m;
    EXPECT_EQ(gb.Untouched(), !a.mask[2]) << "mask " << m;
    if (a.mask[1]) {
      EXPECT_EQ(gw.Read(), Rep(36, 9.0));
    }
    if (a.mask[2]) {
      EXPECT_EQ(gb.Read(), Rep(2, 9.0));
    }
  }
}

// A repeatable executor, planned from aclTensors that are destroyed right after phase 1 (the plan
// holds the descriptors by value), launched twice: identical results; then destroyed.
TEST(ConvSmoke, RepeatableExecutorAfterTensorsDestroyed) {
  acltest::Rng rng(3);
  TestTensor gy = Filled({3, 4, 6, 6}, rng.Uniform(3 * 4 * 36), ACL_FLOAT16);
  TestTensor x = Filled({3, 4, 8, 8}, rng.Uniform(3 * 4 * 64), ACL_FLOAT16, Layout::kPadded, 2);
  TestTensor w = Filled({4, 4, 3, 3}, rng.Uniform(4 * 4 * 9), ACL_FLOAT16);
  TestTensor gx = Out({3, 4, 8, 8}, ACL_FLOAT16), gw = Out({4, 4, 3, 3}, ACL_FLOAT16);
  TestTensor gb = Out({4}, ACL_FLOAT16);
  // Zero-copy second descriptors over the same storages, destroyed after phase 1.
  auto view = [](const TestTensor& t) {
    return t.View(t.shape(), t.strides(), t.offset(), acltest::DefaultFormat(t.shape().size()));
  };
  acltest::AclTensorPtr vgy = view(gy), vx = view(x), vw = view(w), vgx = view(gx), vgw = view(gw),
                        vgb = view(gb);
  auto bias_sizes = acltest::MakeIntArray({4}), ones = acltest::MakeIntArray({1, 1});
  auto zeros = acltest::MakeIntArray({0, 0});
  auto mask = acltest::MakeBoolArray({true, true, true});
  uint64_t ws_size = 0;
  aclOpExecutor* ex = nullptr;
  ASSERT_EQ(
      aclnnConvolutionBackwardGetWorkspaceSize(
          vgy.get(), vx.get(), vw.get(), bias_sizes.get(), ones.get(), zeros.get(), ones.get(),
          false, zeros.get(), 1, mask.get(), 0, vgx.get(), vgw.get(), vgb.get(), &ws_size, &ex),
      0)
      << aclGetRecentErrMsg();
  for (auto* p : {&vgy, &vx, &vw, &vgx, &vgw, &vgb}) p->reset();
  ASSERT_EQ(aclSetAclOpExecutorRepeatable(ex), 0);
  ASSERT_GT(ws_size, 0u);  // f16 operands are packed into the workspace
  acltest::DeviceBuffer ws(ws_size);
  std::vector<V> runs;
  for (int i = 0; i < 2; ++i) {
    gx.FillSentinel();
    ASSERT_EQ(aclnnConvolutionBackward(ws.data(), ws_size, ex, acltest::SharedStream()), 0)
        << aclGetRecentErrMsg();
    runs.push_back(gx.Read());
    V more = gw.Read(), b = gb.Read();
    runs.back().insert(runs.back().end(), more.begin(), more.end());
    runs.back().insert(runs.back().end(), b.begin(), b.end());
  }
  EXPECT_EQ(runs[0], runs[1]);
  EXPECT_EQ(aclDestroyAclOpExecutor(ex), 0);
}

// Phase 2 with less workspace than phase 1 asked for is 161002 and leaves the executor usable.
TEST(ConvSmoke, WorkspaceTooSmall) {
  TestTensor gy = Constant({1, 1, 3}, 1, ACL_FLOAT16), x = Constant({1, 1, 5}, 1, ACL_FLOAT16);
  TestTensor w = Constant({1, 1, 3}, 1, ACL_FLOAT16), gx = Out({1, 1, 5}, ACL_FLOAT16);
  TestTensor gw = Out({1, 1, 3}, ACL_FLOAT16);  // not requested, never written
  auto bias_sizes = acltest::MakeIntArray({1}), one = acltest::MakeIntArray({1});
  auto zero = acltest::MakeIntArray({0});
  auto mask = acltest::MakeBoolArray({true, false, false});
  uint64_t ws_size = 0;
  aclOpExecutor* ex = nullptr;
  ASSERT_EQ(aclnnConvolutionBackwardGetWorkspaceSize(
                gy.get(), x.get(), w.get(), bias_sizes.get(), one.get(), zero.get(), one.get(),
                false, zero.get(), 1, mask.get(), 0, gx.get(), gw.get(), nullptr, &ws_size, &ex),
            0)
      << aclGetRecentErrMsg();
  ASSERT_GT(ws_size, 1u);
  acltest::DeviceBuffer ws(ws_size);
  EXPECT_EQ(aclnnConvolutionBackward(ws.data(), ws_size - 1, ex, acltest::SharedStream()),
            ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("workspaceSize"), std::string::npos);
  EXPECT_TRUE(gx.Untouched());
  ASSERT_EQ(aclnnConvolutionBackward(ws.data(), ws_size, ex, acltest::SharedStream()), 0)
      << aclGetRecentErrMsg();
  EXPECT_EQ(gx.Read(), (V{1, 2, 3, 2, 1}));
  EXPECT_TRUE(gw.Untouched());
}

// Contiguous FLOAT operands and outputs with KEEP_DTYPE need no copies; a pointwise (1x1) problem
// needs no workspace at all.
TEST(ConvSmoke, PointwiseFloatNeedsNoWorkspace) {
  TestTensor gy = Constant({2, 3, 4, 4}, 1), x = Constant({2, 5, 4, 4}, 2);
  TestTensor w = Constant({3, 5, 1, 1}, 1), gx = Out({2, 5, 4, 4}), gw = Out({3, 5, 1, 1});
  TestTensor gb = Out({3});
  CallResult r = Backward(gy, x, w, Plain(2), &gx, &gw, &gb);
  ASSERT_TRUE(r.ok()) << r.Describe();
  EXPECT_EQ(r.workspace_size, 0u);
  EXPECT_EQ(gx.Read(), Rep(2 * 5 * 16, 3.0));
  EXPECT_EQ(gw.Read(), Rep(15, 64.0));
  EXPECT_EQ(gb.Read(), Rep(3, 32.0));
}

// Ascend910 profile: FLOAT with cubeMathType 1 is computed in fp16 (1 + 2^-12 -> 1).
TEST(ConvSmoke, TrainingSeriesComputesFloatInFp16) {
  setenv("ACLNN_CPU_SOC", "Ascend910", 1);
  TestTensor x = Constant({1, 1, 1}, 1 + std::ldexp(1.0, -12)), w = Constant({1, 1, 1}, 1);
  TestTensor y = Out({1, 1, 1});
  Attrs a = Plain(1);
  a.cube = 1;
  CallResult r = Forward(x, w, nullptr, a, y);
  unsetenv("ACLNN_CPU_SOC");
  ASSERT_TRUE(r.ok()) << r.Describe();
  EXPECT_EQ(y.Read(), (V{1}));
}

// A 1x1 convolution with weight 1 is the identity, so it exposes the dtype conversions: every
// finite/inf fp16 and bf16 value survives fp16/bf16 -> fp32 -> fp16/bf16, and FLOAT values are
// narrowed to fp16/bf16 with round-to-nearest-even (ties, subnormals, overflow to inf).
V Identity(const V& values, aclDataType in_dt, aclDataType out_dt) {
  const int64_t n = static_cast<int64_t>(values.size());
  TestTensor x = Filled({1, 1, n}, values, in_dt), w = Constant({1, 1, 1}, 1, in_dt);
  TestTensor y = Out({1, 1, n}, out_dt);
  CallResult r = Forward(x, w, nullptr, Plain(1), y);
  EXPECT_TRUE(r.ok()) << r.Describe();
  return y.Read();
}

TEST(ConvSmoke, HalfAndBf16RoundTripEveryValue) {
  for (aclDataType dt : {ACL_FLOAT16, ACL_BF16}) {
    V all;
    for (uint32_t bits = 0; bits < 65536; ++bits) {
      const double v = dt == ACL_FLOAT16 ? acltest::DecodeF16(static_cast<uint16_t>(bits))
                                         : acltest::DecodeBF16(static_cast<uint16_t>(bits));
      if (!std::isnan(v)) all.push_back(v);
    }
    EXPECT_EQ(Identity(all, dt, dt), all) << acltest::DtypeName(dt);
  }
}

TEST(ConvSmoke, FloatNarrowsToNearestEven) {
  V xs = {65504,
          65519.99,
          65520,
          1e9,
          -1e9,
          std::ldexp(1.0, -24),
          std::ldexp(1.0, -25),
          std::ldexp(3.0, -26),
          std::ldexp(1.0, -26),
          1.0 / 3,
          -2.0 / 3};
  for (int i = 0; i < 64; ++i) {
    // Exact midpoints between neighbouring fp16 / bf16 values, both parities.
    xs.push_back(1 + (2 * i + 1) * std::ldexp(1.0, -11));
    xs.push_back(-(1 + (2 * i + 1) * std::ldexp(1.0, -8)));
    xs.push_back((2 * i + 1) * std::ldexp(1.0, -25));  // fp16 subnormal midpoints
  }
  acltest::Rng rng(11);
  for (double v : rng.Uniform(256, -70000, 70000)) xs.push_back(v);
  for (double& v : xs) v = acltest::RoundToF32(v);
  for (aclDataType dt : {ACL_FLOAT16, ACL_BF16}) {
    V want;
    for (double v : xs) want.push_back(acltest::RoundToDtype(v, dt));
    EXPECT_EQ(Identity(xs, ACL_FLOAT, dt), want) << acltest::DtypeName(dt);
  }
}

}  // namespace
