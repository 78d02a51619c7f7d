// The full convolution sweep (label "long"): for 1d, 2d and 3d, regular and transposed, every
// combination (3d: every geometry, bias and layout in pairs, see sweep()) of
//   stride {1, 2} x dilation {1, 2} x padding {0, 1, "same"} x groups {1, 3, depthwise}
//   x bias {off, on} x input and weight {contiguous, non-contiguous with offset}
// ("same" only with stride 1, as in PyTorch; transposed convolutions take padding {0, 1} and
// output_padding = stride - 1), checked four ways: forward against the naive float64
// convolution; gradcheck (float64 finite differences vs the libaclnn backward) w.r.t. input,
// weight and bias; gradgradcheck (the double backward of ops/conv_acl.h against finite
// differences of the backward); float32 forward and gradients against float64's (libaclnn's
// float32 kernels are not its float64 ones).
// Kernels mix odd and even sizes, so "same" exercises both symmetric and asymmetric padding.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "ops/ops.h"
#include "tests/ops/conv_test_util.h"
#include "tests/ops/ops_test_util.h"

namespace aclgrad {
namespace {

using autograd::tensor_list;
using testing::max_abs_diff;
using testing::naive_conv;
using testing::RefConv;
using testing::scattered;
using testing::uniform_var;

enum class Pad { kZero, kOne, kSame };
enum class Groups { kOne, kThree, kDepthwise };

struct Case {
  int64_t nd;
  bool transposed;
  int64_t stride, dilation;
  Pad pad;
  Groups groups;
  bool bias, noncontiguous;
};

std::string describe(const Case& c) {
  std::ostringstream os;
  os << (c.transposed ? "conv_transpose" : "conv") << c.nd << "d stride " << c.stride
     << " dilation " << c.dilation << " padding "
     << (c.pad == Pad::kSame  ? "same"
         : c.pad == Pad::kOne ? "1"
                              : "0")
     << " groups "
     << (c.groups == Groups::kOne     ? "1"
         : c.groups == Groups::kThree ? "3"
                                      : "depthwise")
     << (c.bias ? " bias" : " no-bias") << (c.noncontiguous ? " non-contiguous" : " contiguous");
  return os.str();
}

// Small shapes, N = 2: regular inputs 7 / 6x5 / 4x5x4; transposed inputs 5 / 4x3 / 2x3x2 (their
// outputs grow with the stride, and gradcheck runs two backward passes per output element).
Shape spatial_of(int64_t nd, bool transposed) {
  if (transposed) return nd == 1 ? Shape{5} : nd == 2 ? Shape{4, 3} : Shape{2, 3, 2};
  return nd == 1 ? Shape{7} : nd == 2 ? Shape{6, 5} : Shape{4, 5, 4};
}
// Kernels 4 / 3x2 / 2x3x2: odd and even sizes, so "same" pads symmetrically and asymmetrically.
Shape kernel_of(int64_t nd) {
  return nd == 1 ? Shape{4} : nd == 2 ? Shape{3, 2} : Shape{2, 3, 2};
}

Tensor run_conv(const Case& c, int64_t groups, const Tensor& x, const Tensor& w, const Tensor& b) {
  if (c.transposed) {
    const ConvTransposeOptions o{.stride = c.stride,
                                 .padding = c.pad == Pad::kOne ? 1 : 0,
                                 .output_padding = c.stride - 1,
                                 .groups = groups,
                                 .dilation = c.dilation};
    return c.nd == 1   ? conv_transpose1d(x, w, b, o)
           : c.nd == 2 ? conv_transpose2d(x, w, b, o)
                       : conv_transpose3d(x, w, b, o);
  }
  const ConvOptions o{.stride = c.stride,
                      .padding = c.pad == Pad::kSame  ? ConvPadding("same")
                                 : c.pad == Pad::kOne ? ConvPadding(1)
                                                      : ConvPadding(0),
                      .dilation = c.dilation,
                      .groups = groups};
  return c.nd == 1 ? conv1d(x, w, b, o) : c.nd == 2 ? conv2d(x, w, b, o) : conv3d(x, w, b, o);
}

void check_case(const Case& c, uint64_t seed) {
  SCOPED_TRACE(describe(c));
  // (C_in, C_out, groups): (3, 2, 1), (6, 3, 3) with 2 input channels per group, and depthwise
  // (3, 3, 3).
  const int64_t c_in = c.groups == Groups::kThree ? 6 : 3;
  const int64_t c_out = c.groups == Groups::kOne ? 2 : 3;
  const int64_t g = c.groups == Groups::kOne ? 1 : 3;
  const Shape k = kernel_of(c.nd);
  Shape x_shape = {2, c_in},
        w_shape = c.transposed ? Shape{c_in, c_out / g} : Shape{c_out, c_in / g};
  for (int64_t s : spatial_of(c.nd, c.transposed)) x_shape.push_back(s);
  w_shape.insert(w_shape.end(), k.begin(), k.end());
  Tensor x = uniform_var(x_shape, -1, 1, seed);
  Tensor w = uniform_var(w_shape, -1, 1, seed + 1);
  Tensor b = c.bias ? uniform_var({c_out}, -1, 1, seed + 2) : Tensor();
  if (c.noncontiguous) {
    x = scattered(x, true);
    w = scattered(w, true);
  }

  RefConv r = testing::ref_conv(c.nd, c.stride, c.pad == Pad::kOne ? 1 : 0, c.dilation, g,
                                c.transposed, c.transposed ? c.stride - 1 : 0);
  if (c.pad == Pad::kSame) {
    for (int64_t i = 0; i < c.nd; ++i) {
      const int64_t total = c.dilation * (k[i] - 1);
      r.pad_left[i] = total / 2;
      r.pad_right[i] = total - total / 2;
    }
  }
  const Tensor y = run_conv(c, g, x, w, b);
  EXPECT_LE(max_abs_diff(y, naive_conv(x, w, b, r)), 1e-12);
  tensor_list inputs = {x, w};
  if (c.bias) inputs.push_back(b);

  // float32 runs other libaclnn kernels than float64 (own GEMM, fused depthwise backward, ...):
  // its values and gradients must agree with float64's to float32 precision.
  const Tensor go = uniform_var(y.sizes(), -1, 1, seed + 3).detach();
  const tensor_list g64 = autograd::grad({y}, inputs, {go});
  tensor_list in32;
  for (const Tensor& t : inputs) {
    const Tensor t32 = t.detach().to(Dtype::Float32);
    in32.push_back(c.noncontiguous && t.dim() > 1 ? scattered(t32, true) : t32.requires_grad_());
  }
  const Tensor y32 = run_conv(c, g, in32[0], in32[1], c.bias ? in32[2] : Tensor());
  EXPECT_LE(max_abs_diff(y32, y), 1e-5 * (1 + max_abs_diff(y, zeros_like(y))));
  const tensor_list g32 = autograd::grad({y32}, in32, {go.to(Dtype::Float32)});
  for (size_t i = 0; i < inputs.size(); ++i) {
    SCOPED_TRACE("float32 gradient of input " + std::to_string(i));
    EXPECT_LE(max_abs_diff(g32[i], g64[i]), 1e-5 * (1 + max_abs_diff(g64[i], zeros_like(g64[i]))));
  }

  auto fn = [&](const tensor_list& in) {
    return run_conv(c, g, in[0], in[1], in.size() > 2 ? in[2] : Tensor());
  };
  EXPECT_NO_THROW(EXPECT_TRUE(autograd::gradcheck(fn, inputs)));
  EXPECT_NO_THROW(EXPECT_TRUE(autograd::gradgradcheck(fn, inputs)));
}

// Every case of one geometry kind; returns how many ran. 1d and 2d run the full product. 3d
// (two thirds of the sweep's time: its gradgradcheck perturbs ~1000 elements per case) runs a
// pairwise covering of {geometry, bias, layout}: each geometry twice, with (bias, layout) =
// (off, contiguous) + (on, non-contiguous) or, on every other geometry, the two mixed pairs, so
// each geometry meets both bias settings and both layouts, and every (bias, layout) pair occurs.
int sweep(int64_t nd, bool transposed) {
  int count = 0, geometry = 0;
  uint64_t seed = 1000 * static_cast<uint64_t>(nd) + (transposed ? 500 : 0);
  for (int64_t stride : {1, 2})
    for (int64_t dilation : {1, 2})
      for (Pad pad : {Pad::kZero, Pad::kOne, Pad::kSame})
        for (Groups groups : {Groups::kOne, Groups::kThree, Groups::kDepthwise}) {
          if (pad == Pad::kSame && (stride != 1 || transposed)) continue;
          const bool mixed_pairs = geometry++ % 2 == 1;
          for (bool bias : {false, true})
            for (bool noncontiguous : {false, true}) {
              if (nd == 3 && (bias != noncontiguous) != mixed_pairs) continue;
              check_case({nd, transposed, stride, dilation, pad, groups, bias, noncontiguous},
                         seed += 3);
              ++count;
            }
        }
  return count;
}

// Geometries: regular 2 * 3 * 3 (stride 1) + 2 * 2 * 3 (stride 2) = 30 per rank, transposed
// 2 * 2 * 2 * 3 = 24; times 4 (bias, layout) variants in 1d and 2d, 2 in 3d.
TEST(ConvGradcheckSweep, Conv1d) {
  EXPECT_EQ(sweep(1, false), 120);
}
TEST(ConvGradcheckSweep, Conv2d) {
  EXPECT_EQ(sweep(2, false), 120);
}
TEST(ConvGradcheckSweep, Conv3d) {
  EXPECT_EQ(sweep(3, false), 60);
}
TEST(ConvGradcheckSweep, ConvTranspose1d) {
  EXPECT_EQ(sweep(1, true), 96);
}
TEST(ConvGradcheckSweep, ConvTranspose2d) {
  EXPECT_EQ(sweep(2, true), 96);
}
TEST(ConvGradcheckSweep, ConvTranspose3d) {
  EXPECT_EQ(sweep(3, true), 48);
}

}  // namespace
}  // namespace aclgrad
