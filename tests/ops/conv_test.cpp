// Convolutions (the fast core): forward against a naive float64 convolution, gradcheck of a
// representative subset (the full sweep is conv_gradcheck_long_test.cpp), zero-copy views, the
// output mask, empty batches, unbatched inputs, conv_tbc, and the error paths.
#include <gtest/gtest.h>

#include <string>

#include "ops/aclnn_bridge.h"
#include "ops/ops.h"
#include "tests/ops/conv_test_util.h"
#include "tests/ops/ops_test_util.h"

namespace aclgrad {
namespace {

using autograd::tensor_list;
using testing::conv_nd;
using testing::conv_transpose_nd;
using testing::join;
using testing::max_abs_diff;
using testing::message_of;
using testing::naive_conv;
using testing::naive_conv_tbc;
using testing::ref_conv;
using testing::RefConv;
using testing::scattered;
using testing::ScopedEnv;
using testing::spatial;
using testing::uniform_var;

void expect_gradcheck(const std::function<Tensor(const tensor_list&)>& fn,
                      const tensor_list& inputs) {
  EXPECT_NO_THROW(EXPECT_TRUE(autograd::gradcheck(fn, inputs)));
}

TEST(Conv, ForwardMatchesNaiveReference) {
  for (int64_t nd = 1; nd <= 3; ++nd) {
    for (const Dtype dtype : {Dtype::Float64, Dtype::Float32}) {
      SCOPED_TRACE("nd " + std::to_string(nd) + " " + dtype_name(dtype));
      const double tol = dtype == Dtype::Float64 ? 1e-12 : 1e-5;
      const Tensor x = uniform_var(join({2, 6}, spatial(nd, 7)), -1, 1, 1).detach();
      const Tensor w = uniform_var(join({6, 2}, Shape(nd, 3)), -1, 1, 2).detach();
      const Tensor b = uniform_var({6}, -1, 1, 3).detach();
      const Tensor y = conv_nd(nd, x.to(dtype), w.to(dtype), b.to(dtype),
                               {.stride = 2, .padding = 1, .dilation = 2, .groups = 3});
      EXPECT_EQ(y.dtype(), dtype);
      EXPECT_LE(max_abs_diff(y, naive_conv(x, w, b, ref_conv(nd, 2, 1, 2, 3))), tol);

      const Tensor wt = uniform_var(join({6, 2}, Shape(nd, 3)), -1, 1, 4).detach();
      const Tensor bt = uniform_var({6}, -1, 1, 5).detach();
      const Tensor yt = conv_transpose_nd(
          nd, x.to(dtype), wt.to(dtype), bt.to(dtype),
          {.stride = 2, .padding = 1, .output_padding = 1, .groups = 3, .dilation = 2});
      EXPECT_LE(max_abs_diff(yt, naive_conv(x, wt, bt, ref_conv(nd, 2, 1, 2, 3, true, 1))), tol);
    }
  }
}

// A float32 transposed conv whose activations are time-major [T, B, C] (unit stride, one group)
// runs libaclnn's per-tap GEMM path; its forward once dropped the bias there.
TEST(Conv, TransposedFloat32OnTimeMajorViewsAddsBias) {
  // Hand-computed: y[t] = 10 + x[t] (the kernel's only non-zero tap is the first).
  const Tensor x1 = tensor<float>({1, 2, 3, 4}, {1, 1, 4});
  const Tensor w1 = tensor<float>({1, 0, 0, 0}, {1, 1, 4});
  const Tensor b1 = tensor<float>({10}, {1});
  EXPECT_EQ(conv_transpose1d(x1, w1, b1).to_vector<float>(),
            (std::vector<float>{11, 12, 13, 14, 10, 10, 10}));
  // Three input channels stored [T, B, C] and seen as [B, C, T], one output channel (so the
  // framework's contiguous output is time-major too); against the float64 reference.
  const Tensor x = uniform_var({9, 1, 3}, -1, 1, 61).detach();
  const Tensor w = uniform_var({4, 1, 3}, -1, 1, 62).detach();
  const Tensor b = uniform_var({1}, -1, 1, 63).detach();
  for (int64_t pad : {0, 2}) {
    SCOPED_TRACE("pad " + std::to_string(pad));
    const Tensor y = conv_transpose1d(x.to(Dtype::Float32).permute({1, 2, 0}),
                                      w.to(Dtype::Float32).permute({2, 1, 0}), b.to(Dtype::Float32),
                                      {.padding = pad});
    EXPECT_LE(max_abs_diff(y, naive_conv(x.permute({1, 2, 0}), w.permute({2, 1, 0}), b,
                                         ref_conv(1, 1, pad, 1, 1, true))),
              1e-5);
  }
}

TEST(Conv, HalfPrecisionForwardIsCloseToFloat64) {
  const Tensor x = uniform_var({2, 3, 6, 5}, -1, 1, 6).detach();
  const Tensor w = uniform_var({4, 3, 3, 3}, -1, 1, 7).detach();
  const Tensor ref = naive_conv(x, w, Tensor(), ref_conv(2, 1, 1, 1, 1));
  for (const Dtype dtype : {Dtype::Float16, Dtype::BFloat16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const Tensor y = conv2d(x.to(dtype), w.to(dtype), Tensor(), {.padding = 1});
    EXPECT_EQ(y.dtype(), dtype);
    // Operands rounded to 16 bits (|x|, |w| <= 1, 27 terms), fp32 accumulation, rounded output.
    EXPECT_LE(max_abs_diff(y, ref), dtype == Dtype::Float16 ? 0.05 : 0.3);
  }
}

// PyTorch's "same": total padding dilation * (kernel - 1) per dim, the odd element on the right.
TEST(Conv, SamePaddingPutsTheOddElementOnTheRight) {
  for (int64_t nd = 1; nd <= 3; ++nd) {
    SCOPED_TRACE("nd " + std::to_string(nd));
    const Shape in = spatial(nd, 6);
    const Tensor x = uniform_var(join({2, 3}, in), -1, 1, 8).detach();
    Shape k = {4, 3, 2};  // totals 3 (odd), 2 and 1 (odd) with dilation 1
    k.resize(static_cast<size_t>(nd));
    const Tensor w = uniform_var(join({2, 3}, k), -1, 1, 9).detach();
    RefConv r = ref_conv(nd, 1, 0, 1, 1);
    for (int64_t i = 0; i < nd; ++i) {
      r.pad_left[i] = (k[i] - 1) / 2;
      r.pad_right[i] = (k[i] - 1) - r.pad_left[i];
    }
    const Tensor y = conv_nd(nd, x, w, Tensor(), {.padding = "same"});
    EXPECT_EQ(y.sizes(), join({2, 2}, in));
    EXPECT_LE(max_abs_diff(y, naive_conv(x, w, Tensor(), r)), 1e-12);
    // "valid" is no padding.
    EXPECT_LE(max_abs_diff(conv_nd(nd, x, w, Tensor(), {.padding = "valid"}),
                           naive_conv(x, w, Tensor(), ref_conv(nd, 1, 0, 1, 1))),
              1e-12);
  }
}

TEST(Conv, SamePaddingGradcheckAsymmetric1d2d3d) {
  for (int64_t nd = 1; nd <= 3; ++nd) {
    SCOPED_TRACE("nd " + std::to_string(nd));
    Shape k = {2, 3, 2};
    k.resize(static_cast<size_t>(nd));
    Tensor x = uniform_var(join({2, 3}, spatial(nd, 5)), -1, 1, 10);
    Tensor w = uniform_var(join({3, 1}, k), -1, 1, 11);
    Tensor b = uniform_var({3}, -1, 1, 12);
    expect_gradcheck(
        [nd](const tensor_list& in) {
          return conv_nd(nd, in[0], in[1], in[2], {.padding = "same", .groups = 3});
        },
        {x, w, b});
  }
}

TEST(Conv, GradcheckCore) {
  for (int64_t nd = 1; nd <= 3; ++nd) {
    SCOPED_TRACE("nd " + std::to_string(nd));
    const Shape sp = nd == 3 ? Shape{4, 5, 4} : spatial(nd, 6);
    Tensor x = uniform_var(join({2, 6}, sp), -1, 1, 13);
    Tensor w = uniform_var(join({3, 2}, Shape(nd, 2)), -1, 1, 14);
    Tensor b = uniform_var({3}, -1, 1, 15);
    expect_gradcheck(
        [nd](const tensor_list& in) {
          return conv_nd(nd, in[0], in[1], in[2],
                         {.stride = 2, .padding = 1, .dilation = 2, .groups = 3});
        },
        {x, w, b});
    Tensor wt = uniform_var(join({6, 1}, Shape(nd, 2)), -1, 1, 16);
    expect_gradcheck(
        [nd](const tensor_list& in) {
          return conv_transpose_nd(nd, in[0], in[1], in[2],
                                   {.stride = 2, .padding = 1, .output_padding = 1, .groups = 3});
        },
        {x, wt, b});
  }
}

// Training-sized float32 problems reach libaclnn's fast float32 kernels (own GEMM, pointwise,
// fused depthwise backward); they must agree with its float64 path (checked against the naive
// reference above), also for a channels-last input (an NHWC buffer viewed as NCHW).
TEST(Conv, Float32MatchesFloat64AtTrainingSizes) {
  struct Config {
    const char* name;
    Shape w;
    ConvOptions o;
    bool transposed;
  };
  const std::vector<Config> configs = {
      {"3x3 pad 1", {32, 16, 3, 3}, {.padding = 1}, false},
      {"1x1", {32, 16, 1, 1}, {}, false},
      {"depthwise 3x3", {16, 1, 3, 3}, {.padding = 1, .groups = 16}, false},
      {"5x5 stride 2", {8, 16, 5, 5}, {.stride = 2, .padding = 2}, false},
      {"transposed 4x4 stride 2", {16, 8, 4, 4}, {.stride = 2, .padding = 1}, true},
  };
  for (const Config& cfg : configs) {
    for (bool channels_last : {false, true}) {
      SCOPED_TRACE(std::string(cfg.name) + (channels_last ? " channels-last" : ""));
      Tensor x = uniform_var({4, 20, 20, 16}, -1, 1, 50).detach().permute({0, 3, 1, 2});
      if (!channels_last) x = x.contiguous();
      Tensor w = uniform_var(cfg.w, -1, 1, 51).detach();
      const Tensor b = uniform_var({cfg.transposed ? cfg.w[1] : cfg.w[0]}, -1, 1, 52).detach();
      auto f = [&](const Tensor& xx, const Tensor& ww, const Tensor& bb) {
        if (!cfg.transposed) return conv2d(xx, ww, bb, cfg.o);
        return conv_transpose2d(xx, ww, bb, {.stride = 2, .padding = 1});
      };
      Tensor x64 = x.detach().requires_grad_(), w64 = w.clone().requires_grad_();
      Tensor x32 = x.to(Dtype::Float32).permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2});
      if (!channels_last) x32 = x32.contiguous();
      x32.requires_grad_();
      Tensor w32 = w.to(Dtype::Float32).requires_grad_();
      const Tensor y64 = f(x64, w64, b), y32 = f(x32, w32, b.to(Dtype::Float32));
      EXPECT_LE(max_abs_diff(y32, y64), 1e-4);
      const Tensor go = uniform_var(y64.sizes(), -1, 1, 53).detach();
      const tensor_list g64 = autograd::grad({y64}, {x64, w64}, {go});
      const tensor_list g32 = autograd::grad({y32}, {x32, w32}, {go.to(Dtype::Float32)});
      EXPECT_LE(max_abs_diff(g32[0], g64[0]), 1e-4);
      EXPECT_LE(max_abs_diff(g32[1], g64[1]), 2e-3);  // sums of ~1600 products
    }
  }
}

// Zero copy: libaclnn reads the strided views directly; results equal the contiguous ones.
TEST(Conv, NonContiguousInputAndWeightEqualContiguous) {
  for (bool transposed : {false, true}) {
    SCOPED_TRACE(transposed ? "transposed" : "regular");
    Tensor x = uniform_var({2, 3, 6, 5}, -1, 1, 17);
    Tensor w = uniform_var({3, 3, 3, 2}, -1, 1, 18);
    Tensor xs = scattered(x, true), ws = scattered(w, true);
    ASSERT_FALSE(xs.is_contiguous());
    ASSERT_FALSE(ws.is_contiguous());
    ASSERT_GT(xs.storage_offset(), 0);
    auto f = [transposed](const Tensor& a, const Tensor& b) {
      return transposed ? conv_transpose2d(a, b, Tensor(), {.stride = 2, .dilation = {1, 2}})
                        : conv2d(a, b, Tensor(), {.stride = {1, 2}, .padding = 1});
    };
    const Tensor y = f(x, w), ys = f(xs, ws);
    EXPECT_EQ(max_abs_diff(y, ys), 0.0);
    // Non-contiguous gradOutput as well (a transposed view).
    const Tensor go = uniform_var({y.size(0), y.size(1), y.size(3), y.size(2)}, -1, 1, 19)
                          .detach()
                          .transpose(2, 3);
    const tensor_list g = autograd::grad({y}, {x, w}, {go.contiguous()});
    const tensor_list gs = autograd::grad({ys}, {xs, ws}, {go});
    EXPECT_EQ(max_abs_diff(g[0], gs[0]), 0.0);
    EXPECT_EQ(max_abs_diff(g[1], gs[1]), 0.0);
    expect_gradcheck([&f](const tensor_list& in) { return f(in[0], in[1]); }, {xs, ws});
  }
}

TEST(Conv, ExpandedGradOutputFromSum) {
  Tensor x = uniform_var({2, 3, 5}, -1, 1, 20);
  Tensor w = uniform_var({2, 3, 3}, -1, 1, 21);
  sum(conv1d(x, w)).backward();  // dL/dy reaches the node as a stride-0 expansion of one
  const tensor_list g = autograd::grad({conv1d(x, w)}, {x, w}, {ones({2, 2, 3}, Dtype::Float64)});
  EXPECT_LE(max_abs_diff(x.grad(), g[0]), 1e-14);
  EXPECT_LE(max_abs_diff(w.grad(), g[1]), 1e-14);
}

// Only the gradients of inputs that need one are computed, and an operand only they would read
// is not saved: modifying it in place after the forward does not break the backward.
TEST(Conv, OutputMaskFollowsNeedsGrad) {
  const Tensor x0 = uniform_var({2, 3, 6, 6}, -1, 1, 22).detach();
  const Tensor w0 = uniform_var({4, 3, 3, 3}, -1, 1, 23).detach();
  const Tensor b0 = uniform_var({4}, -1, 1, 24).detach();
  const Tensor go = uniform_var({2, 4, 6, 6}, -1, 1, 25).detach();
  Tensor xa = x0.clone().requires_grad_(), wa = w0.clone().requires_grad_(),
         ba = b0.clone().requires_grad_();
  conv2d(xa, wa, ba, {.padding = 1}).backward(go);

  {  // input only: the weight is saved, the input is not.
    Tensor x = x0.clone().requires_grad_(), w = w0.clone(), b = b0.clone();
    Tensor y = conv2d(x, w, b, {.padding = 1});
    x.detach().fill_(7.0);  // not saved: no version error
    y.backward(go);
    EXPECT_LE(max_abs_diff(x.grad(), xa.grad()), 1e-13);
    EXPECT_FALSE(w.grad().defined());
    EXPECT_FALSE(b.grad().defined());
  }
  {  // weight only: the input is saved, the weight is not.
    Tensor x = x0.clone(), w = w0.clone().requires_grad_();
    Tensor y = conv2d(x, w, Tensor(), {.padding = 1});
    w.detach().fill_(7.0);
    y.backward(go);
    EXPECT_LE(max_abs_diff(w.grad(), wa.grad()), 1e-13);
    EXPECT_FALSE(x.grad().defined());
  }
  {  // bias only: neither is saved.
    Tensor x = x0.clone(), w = w0.clone(), b = b0.clone().requires_grad_();
    Tensor y = conv2d(x, w, b, {.padding = 1});
    x.detach().fill_(7.0);
    w.detach().fill_(7.0);
    y.backward(go);
    EXPECT_LE(max_abs_diff(b.grad(), ba.grad()), 1e-13);
  }
  {  // a saved operand modified in place is still caught.
    Tensor x = x0.clone(), w = w0.clone().requires_grad_();
    Tensor y = conv2d(x, w, Tensor(), {.padding = 1});
    x.fill_(7.0);
    EXPECT_CONTAINS(message_of<AutogradError>([&] { y.backward(go); }), "ConvolutionBackward");
  }
}

TEST(Conv, EmptyBatch) {
  for (int64_t nd = 1; nd <= 3; ++nd) {
    SCOPED_TRACE("nd " + std::to_string(nd));
    for (bool transposed : {false, true}) {
      Tensor x = uniform_var(join({0, 3}, spatial(nd, 5)), -1, 1, 26);
      Tensor w = uniform_var(join({3, 1}, Shape(nd, 2)), -1, 1, 27);
      Tensor b = uniform_var({3}, -1, 1, 28);
      Tensor y = transposed ? conv_transpose_nd(nd, x, w, b, {.stride = 2, .groups = 3})
                            : conv_nd(nd, x, w, b, {.padding = 1, .groups = 3});
      EXPECT_EQ(y.size(0), 0);
      EXPECT_EQ(y.size(1), 3);
      y.backward(zeros(y.sizes(), Dtype::Float64));
      EXPECT_EQ(x.grad().sizes(), x.sizes());
      EXPECT_EQ(max_abs_diff(w.grad(), zeros(w.sizes(), Dtype::Float64)), 0.0);
      EXPECT_EQ(max_abs_diff(b.grad(), zeros({3}, Dtype::Float64)), 0.0);
    }
  }
}

TEST(Conv, UnbatchedInputMatchesBatchOfOne) {
  Tensor x = uniform_var({3, 7}, -1, 1, 29);
  Tensor w = uniform_var({2, 3, 4}, -1, 1, 30);
  const Tensor y = conv1d(x, w, Tensor(), {.padding = "same"});  // also the 1d-as-2d path
  EXPECT_EQ(y.sizes(), (Shape{2, 7}));
  const Tensor y1 = conv1d(x.detach().unsqueeze(0), w.detach(), Tensor(), {.padding = "same"});
  EXPECT_EQ(max_abs_diff(y, y1.select(0, 0)), 0.0);
  expect_gradcheck(
      [](const tensor_list& in) {
        return conv_transpose2d(in[0], in[1], Tensor(), {.stride = 2, .output_padding = 1});
      },
      {uniform_var({3, 4, 3}, -1, 1, 31), uniform_var({3, 2, 2, 3}, -1, 1, 32)});
}

TEST(ConvTbc, ForwardMatchesNaiveAndConv1dOnPermutedViews) {
  const Tensor x = uniform_var({7, 2, 3}, -1, 1, 37).detach();
  const Tensor w = uniform_var({3, 3, 4}, -1, 1, 38).detach();
  const Tensor b = uniform_var({4}, -1, 1, 39).detach();
  for (int64_t pad : {0, 1, 3}) {
    SCOPED_TRACE("pad " + std::to_string(pad));
    const Tensor y = conv_tbc(x, w, b, pad);
    EXPECT_LE(max_abs_diff(y, naive_conv_tbc(x, w, b, pad)), 1e-12);
    const Tensor y1 = conv1d(x.permute({1, 2, 0}), w.permute({2, 1, 0}), b, {.padding = pad});
    EXPECT_LE(max_abs_diff(y, y1.permute({2, 0, 1})), 1e-12);
    EXPECT_LE(max_abs_diff(conv_tbc(x, w, Tensor(), pad), naive_conv_tbc(x, w, Tensor(), pad)),
              1e-12);
  }
}

TEST(ConvTbc, GradcheckOverPadBiasAndLayout) {
  for (int64_t pad : {0, 1, 3}) {
    for (bool noncontiguous : {false, true}) {
      SCOPED_TRACE("pad " + std::to_string(pad) + (noncontiguous ? " non-contiguous" : ""));
      Tensor x = uniform_var({6, 2, 3}, -1, 1, 40), w = uniform_var({3, 3, 2}, -1, 1, 41);
      Tensor b = uniform_var({2}, -1, 1, 42);
      if (noncontiguous) x = scattered(x, true), w = scattered(w, true);
      expect_gradcheck([pad](const tensor_list& in) { return conv_tbc(in[0], in[1], in[2], pad); },
                       {x, w, b});
      expect_gradcheck([pad](const tensor_list& in) { return conv_tbc(in[0], in[1], {}, pad); },
                       {x, w});
    }
  }
}

TEST(ConvTbc, EmptyBatchAndOutputMask) {
  Tensor x = uniform_var({5, 0, 3}, -1, 1, 43), w = uniform_var({2, 3, 4}, -1, 1, 44);
  Tensor b = uniform_var({4}, -1, 1, 45);
  Tensor y = conv_tbc(x, w, b, 1);
  EXPECT_EQ(y.sizes(), (Shape{6, 0, 4}));
  y.backward(zeros(y.sizes(), Dtype::Float64));
  EXPECT_EQ(max_abs_diff(w.grad(), zeros(w.sizes(), Dtype::Float64)), 0.0);
  EXPECT_EQ(max_abs_diff(b.grad(), zeros({4}, Dtype::Float64)), 0.0);

  Tensor x2 = uniform_var({5, 2, 3}, -1, 1, 46), w2 = w.detach().clone();
  Tensor y2 = conv_tbc(x2, w2, Tensor(), 1);
  y2.backward(ones(y2.sizes(), Dtype::Float64));
  EXPECT_TRUE(x2.grad().defined());
  EXPECT_FALSE(w2.grad().defined());
}

TEST(ConvErrors, ArgumentsAreCheckedWithPyTorchStyleMessages) {
  const Tensor x = zeros({2, 3, 7, 7}), w = zeros({4, 3, 3, 3});
  EXPECT_EQ(message_of<ShapeError>([&] {
              conv2d(zeros({3, 5}), w);
            }),
            "conv2d: expected input with 4 dims (N, C, H, W) or 3 dims (C, H, W) without batch, "
            "got input of shape [3, 5]");
  EXPECT_EQ(message_of<ShapeError>([&] {
              conv3d(zeros({2, 3, 4, 4, 4}), zeros({4, 3, 3, 3}));
            }),
            "conv3d: expected weight with 5 dims (C_out, C_in / groups, kD, kH, kW), got weight "
            "of shape [4, 3, 3, 3]");
  EXPECT_EQ(message_of<ShapeError>([&] {
              conv2d(x, zeros({4, 1, 3, 3}), {}, {.groups = 3});
            }),
            "conv2d: weight of shape [4, 1, 3, 3] has 4 output channels (weight[0]), which is not "
            "divisible by groups = 3");
  EXPECT_EQ(message_of<ShapeError>([&] {
              conv2d(zeros({2, 5, 7, 7}), w);
            }),
            "conv2d: input of shape [2, 5, 7, 7] has 5 channels, but weight of shape [4, 3, 3, 3] "
            "with groups = 1 expects 3 (weight[1] * groups)");
  EXPECT_EQ(message_of<ShapeError>([&] {
              conv_transpose2d(zeros({2, 5, 5, 5}), w);
            }),
            "conv_transpose2d: input of shape [2, 5, 5, 5] has 5 channels, but weight of shape "
            "[4, 3, 3, 3] with groups = 1 expects 4 (weight[0])");
  EXPECT_EQ(message_of<ShapeError>([&] { conv2d(x, w, zeros({5})); }),
            "conv2d: expected bias of shape [4] (one value per output channel), got bias of "
            "shape [5]");
  EXPECT_EQ(message_of<DtypeError>([&] { conv2d(x, w.to(Dtype::Float64)); }),
            "conv2d: expected input and weight to have the same dtype, got input float32 and "
            "weight float64");
  EXPECT_CONTAINS(message_of<DtypeError>([&] {
                    conv1d(zeros({1, 1, 3}, Dtype::Int64), w);
                  }),
                  "conv1d: expected a floating point input");
  EXPECT_EQ(message_of<ShapeError>([&] {
              conv2d(zeros({1, 3, 2, 2}), w);
            }),
            "conv2d: input of shape [1, 3, 2, 2] is too small for weight of shape [4, 3, 3, 3]: "
            "padded size 2 in spatial dim 0 is smaller than the dilated kernel size 3 ((kernel "
            "- 1) * dilation + 1)");
  EXPECT_EQ(message_of<Error>([&] { conv2d(x, w, {}, {.stride = 2, .padding = "same"}); }),
            "conv2d: padding='same' is not supported for strided convolutions, got stride [2, 2]");
  EXPECT_EQ(message_of<Error>([] { ConvPadding p("full"); }),
            "conv: invalid padding string 'full'; expected \"same\", \"valid\" or padding sizes");
  EXPECT_EQ(message_of<Error>([&] {
              conv2d(x, w, {}, {.stride = {1, 2, 3}});
            }),
            "conv2d: expected stride to have 1 or 2 values, got [1, 2, 3]");
  EXPECT_EQ(message_of<Error>([&] { conv2d(x, w, {}, {.dilation = 0}); }),
            "conv2d: dilation must be >= 1 in every dim, got [0, 0]");
  EXPECT_EQ(message_of<Error>([&] {
              conv1d(zeros({1, 3, 5}), zeros({1, 3, 2}), {}, {.padding = -1});
            }),
            "conv1d: padding must be >= 0 in every dim, got [-1]");
  EXPECT_EQ(message_of<Error>([&] {
              conv_transpose2d(x, zeros({3, 2, 3, 3}), {}, {.stride = 2, .output_padding = 2});
            }),
            "conv_transpose2d: output_padding [2, 2] must be smaller than either stride [2, 2] or "
            "dilation [1, 1] in every dim");
  EXPECT_EQ(message_of<Error>([&] { conv2d(x, w, {}, {.groups = 0}); }),
            "conv2d: groups must be >= 1, got 0");

  const Tensor t = zeros({5, 2, 3}), k = zeros({2, 3, 4});
  EXPECT_EQ(message_of<ShapeError>([&] {
              conv_tbc(zeros({5, 3}), k, {});
            }),
            "conv_tbc: expected input with 3 dims (T, B, C_in), got input of shape [5, 3]");
  EXPECT_EQ(message_of<ShapeError>([&] {
              conv_tbc(t, zeros({2, 4, 4}), {});
            }),
            "conv_tbc: input of shape [5, 2, 3] has 3 channels, but weight of shape [2, 4, 4] "
            "expects 4 (weight[1])");
  EXPECT_EQ(message_of<ShapeError>([&] { conv_tbc(t, k, zeros({3})); }),
            "conv_tbc: expected bias of shape [4] (weight[2], the output channels), got bias of "
            "shape [3]");
  EXPECT_EQ(message_of<Error>([&] { conv_tbc(t, k, {}, -1); }),
            "conv_tbc: pad must be >= 0, got -1");
  EXPECT_EQ(message_of<ShapeError>([&] {
              conv_tbc(t, zeros({7, 3, 4}), {});
            }),
            "conv_tbc: input of shape [5, 2, 3] with pad 0 is too short for kernel size 7 (T + 2 "
            "* pad + 1 - K = -1 must be >= 1)");
}

AclnnError aclnn_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const AclnnError& e) {
    return e;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw another exception: " << e.what();
  }
  ADD_FAILURE() << "did not throw AclnnError";
  return AclnnError("", 0, "");
}

// What only libaclnn rejects surfaces as AclnnError with its status and message.
TEST(ConvErrors, LibaclnnRejectionsSurfaceWithStatusAndMessage) {
  // A kernel wider than 255: fine for PyTorch, beyond the Ascend910B limit libaclnn enforces.
  AclnnError e = aclnn_error_of([] { conv2d(zeros({1, 1, 1, 300}), zeros({1, 1, 1, 256})); });
  EXPECT_EQ(e.status(), 161002);
  EXPECT_EQ(e.api(), "aclnnConvolutionGetWorkspaceSize");
  EXPECT_CONTAINS(e.what(),
                  "aclnnConvolutionGetWorkspaceSize failed with status 161002: "
                  "aclnnConvolution: weight has shape [1, 1, 1, 256]: kernel W = "
                  "256 is out of range [1, 255]");
  // output_padding below the dilation but not below the stride: PyTorch accepts, libaclnn not.
  e = aclnn_error_of([] {
    conv_transpose1d(zeros({1, 1, 4}), zeros({1, 1, 2}), {}, {.output_padding = 1, .dilation = 2});
  });
  EXPECT_CONTAINS(e.what(), "outputPadding[0] = 1 is invalid");
  e = aclnn_error_of([] { conv_tbc(zeros({5, 2, 3}), zeros({2, 3, 4}), {}, 300); });
  EXPECT_CONTAINS(e.what(),
                  "aclnnConvTbcGetWorkspaceSize failed with status 161002: "
                  "aclnnConvTbc: pad = 300 is invalid");
  // The backward's call: switch libaclnn to a SoC without an fp32 KEEP_DTYPE mode in between.
  Tensor x = uniform_var({1, 2, 5, 5}, -1, 1, 47).to(Dtype::Float32).requires_grad_();
  Tensor y = conv2d(x, zeros({2, 2, 3, 3}));
  {
    ScopedEnv soc("ACLNN_CPU_SOC", "Ascend910");
    e = aclnn_error_of([&] { y.backward(ones(y.sizes())); });
  }
  EXPECT_EQ(e.api(), "aclnnConvolutionBackwardGetWorkspaceSize");
  EXPECT_CONTAINS(e.what(),
                  "aclnnConvolutionBackward: cubeMathType = 0 (KEEP_DTYPE) is not "
                  "supported for FLOAT inputs on Ascend910");
}

TEST(Conv, WorkspaceIsReusedAcrossCalls) {
  const Tensor x = uniform_var({2, 8, 12, 12}, -1, 1, 48).to(Dtype::Float32);
  const Tensor w = uniform_var({8, 8, 3, 3}, -1, 1, 49).to(Dtype::Float32);
  conv2d(x, w, Tensor(), {.padding = 1});
  const uint64_t capacity = aclnn::workspace_capacity();
  for (int i = 0; i < 3; ++i) conv2d(x, w, Tensor(), {.padding = 1});
  EXPECT_EQ(aclnn::workspace_capacity(), capacity);
}

}  // namespace
}  // namespace aclgrad
