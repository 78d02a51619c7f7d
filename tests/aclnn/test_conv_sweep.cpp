// The fast core of the convolution sweep: ~30 representative geometries (PyTorch-style: odd sizes,
// kernel > stride, 1x1, size-1 dims, kernel == input, batch 1 and 3, odd channels, groups,
// depthwise, transposed with output padding, asymmetric 2d padding), each swept along one axis
// at a time: outputMask subsets, dtypes (incl. mixed promotion), non-contiguous layouts (every
// input and output), cubeMathType emulation; plus the empty-tensor cases. Backward
// (aclnnConvolutionBackward) and forward (aclnnConvolution) against the float64 naive reference.
// One test per (axis, geometry) looping over the axis values (a process per test under ctest
// makes thousands of one-case tests slow); every failure message names its full case.
// The full geometric cross product lives in test_conv_sweep_long.cpp.
#include <vector>

#include <gtest/gtest.h>

#include "support/conv_case.h"

namespace {

using acltest::ConvCase;
using acltest::Layout;

std::string GeomName(const ::testing::TestParamInfo<ConvCase>& info) {
  return info.param.label;
}

std::vector<ConvCase> Representative() {
  return acltest::RepresentativeCases();
}

// outputMask: every non-empty subset but all-outputs (the baseline); masked outputs are sentinel
// tensors (checked untouched) or, alternately, null pointers.
std::vector<ConvCase> MaskVariants(const ConvCase& base) {
  std::vector<ConvCase> out;
  for (int m = 1; m < 7; ++m) {
    ConvCase c = base;
    c.mask = {(m & 4) != 0, (m & 2) != 0, (m & 1) != 0};
    c.null_masked = (base.seed + m) % 2 == 1;
    out.push_back(c);
  }
  return out;
}

// f16, bf16, f64, and mixed dtypes promoted to f32: f16 gradOutput + f32 input/weight,
// bf16 gradOutput + f16 input/weight, f32 gradOutput + f16 input + bf16 weight. Each gradient has
// the dtype of its operand (gradBias that of gradOutput).
std::vector<ConvCase> DtypeVariants(const ConvCase& base) {
  struct Dtypes {
    aclDataType gy, x, w;
  };
  const Dtypes kDtypes[] = {
      {ACL_FLOAT16, ACL_FLOAT16, ACL_FLOAT16}, {ACL_BF16, ACL_BF16, ACL_BF16},
      {ACL_DOUBLE, ACL_DOUBLE, ACL_DOUBLE},    {ACL_FLOAT16, ACL_FLOAT, ACL_FLOAT},
      {ACL_BF16, ACL_FLOAT16, ACL_FLOAT16},    {ACL_FLOAT, ACL_FLOAT16, ACL_BF16}};
  std::vector<ConvCase> out;
  for (const Dtypes& d : kDtypes) {
    ConvCase c = base;
    c.gy_dtype = d.gy, c.x_dtype = d.x, c.w_dtype = d.w;
    out.push_back(c);
  }
  return out;
}

// Every input and output permuted, or permuted + offset + padded/stepped strides; f32 and f16.
// Plus expanded inputs (stride 0 on N and the last dim, as autograd hands over the gradient of a
// sum) with padded outputs.
std::vector<ConvCase> LayoutVariants(const ConvCase& base) {
  std::vector<ConvCase> out;
  ConvCase e = base;
  e.layout = Layout::kExpanded;
  out.push_back(e);
  for (Layout layout : {Layout::kPermuted, Layout::kPadded})
    for (aclDataType dt : {ACL_FLOAT, ACL_FLOAT16}) {
      ConvCase c = base;
      c.layout = layout;
      c.gy_dtype = c.x_dtype = c.w_dtype = dt;
      out.push_back(c);
    }
  return out;
}

// cubeMathType: on FLOAT 1 (ALLOW_FP32_DOWN_PRECISION -> HF32), 2 (USE_FP16), 3 (USE_HF32); on
// FLOAT16 every mode computes in fp16; on BF16 modes 1 and 3 (USE_FP16 is rejected on A2).
std::vector<ConvCase> CubeVariants(const ConvCase& base) {
  struct Mode {
    aclDataType dt;
    int cube;
  };
  const Mode kModes[] = {{ACL_FLOAT, 1},   {ACL_FLOAT, 2},   {ACL_FLOAT, 3}, {ACL_FLOAT16, 1},
                         {ACL_FLOAT16, 2}, {ACL_FLOAT16, 3}, {ACL_BF16, 1},  {ACL_BF16, 3}};
  std::vector<ConvCase> out;
  for (const Mode& m : kModes) {
    ConvCase c = base;
    c.gy_dtype = c.x_dtype = c.w_dtype = m.dt;
    c.cube = m.cube;
    out.push_back(c);
  }
  return out;
}

class ConvSweep : public ::testing::TestWithParam<ConvCase> {};

// FLOAT, contiguous, all outputs, KEEP_DTYPE; 2d padding given both as [ph, pw] and as
// [top, bottom, left, right]; forward with and without bias.
TEST_P(ConvSweep, Float) {
  ConvCase c = GetParam();
  std::vector<ConvCase> cases{c};
  if (c.geom.spatial() == 2 && !c.four_pad) cases.push_back(c), cases.back().four_pad = true;
  acltest::ExpectAllMatch(cases, /*forward=*/true);
  c.forward_bias = false;
  EXPECT_TRUE(acltest::CheckConvForward(c));
}
TEST_P(ConvSweep, OutputMaskSubsets) {
  acltest::ExpectAllMatch(MaskVariants(GetParam()), /*forward=*/false);
}
TEST_P(ConvSweep, Dtypes) {
  acltest::ExpectAllMatch(DtypeVariants(GetParam()), true);
}
TEST_P(ConvSweep, NonContiguous) {
  acltest::ExpectAllMatch(LayoutVariants(GetParam()), true);
}
TEST_P(ConvSweep, CubeMathType) {
  acltest::ExpectAllMatch(CubeVariants(GetParam()), true);
}

INSTANTIATE_TEST_SUITE_P(Representative, ConvSweep, ::testing::ValuesIn(Representative()),
                         GeomName);

// Empty tensors (N = 0; C_in = 0 for regular): all outputs contiguous, and gradWeight + gradBias
// only with padded layouts. gradWeight/gradBias of an empty batch are zeros.
class ConvSweepEmpty : public ::testing::TestWithParam<ConvCase> {};
TEST_P(ConvSweepEmpty, AllOutputs) {
  acltest::ExpectAllMatch({GetParam()}, true);
}
TEST_P(ConvSweepEmpty, WeightAndBiasPadded) {
  ConvCase c = GetParam();
  c.mask = {false, true, true};
  c.layout = Layout::kPadded;
  acltest::ExpectAllMatch({c}, false);
}
INSTANTIATE_TEST_SUITE_P(Empty, ConvSweepEmpty, ::testing::ValuesIn(acltest::EmptyCases()),
                         GeomName);

// A spread of the geometric cross product (every 5th geometry), FLOAT, forward and backward; the
// whole product runs in test_conv_sweep_long.cpp.
std::vector<ConvCase> CrossSlice() {
  std::vector<ConvCase> all = acltest::GeometricCrossProduct(), out;
  for (size_t i = 0; i < all.size(); i += 5) out.push_back(all[i]);
  return out;
}
class ConvSweepCrossSlice : public ::testing::TestWithParam<ConvCase> {};
TEST_P(ConvSweepCrossSlice, Float) {
  acltest::ExpectAllMatch({GetParam()}, true);
}
INSTANTIATE_TEST_SUITE_P(Cross, ConvSweepCrossSlice, ::testing::ValuesIn(CrossSlice()), GeomName);

}  // namespace
