// The big convolution sweep (ctest label "long"):
//  - the full geometric cross product (rank {1,2,3} x transposed x stride {1,2,3} x padding
//    {0, 1, per-dim mixed, 2d asymmetric [0,2,1,0]} x dilation {1,2} x groups {1, 2, depthwise,
//    depthwise x2} x output padding {0, stride-1}; 640 geometries) with FLOAT / KEEP_DTYPE / all
//    outputs, forward and backward;
//  - every outputMask subset on each geometry, and the same cross product under each other axis
//    value (permuted/padded/expanded layouts, f16, bf16, f64, mixed dtypes, cubeMathType 1/2/3),
//    with the outputMask subset rotating over the 7 non-empty ones;
//  - the representative geometries x dtypes {f32,f16,bf16,f64} x layouts {contiguous, permuted,
//    padded} x all 7 outputMask subsets;
//  - a few larger problems (tiling, chunking, partial sums) under f32, f16, HF32 and padded layout.
// One test per geometry looping over the variants (ctest runs a process per test); every failure
// message names its full case.
#include <array>
#include <vector>

#include <gtest/gtest.h>

#include "support/conv_case.h"

namespace {

using acltest::ConvCase;
using acltest::Layout;

std::string GeomName(const ::testing::TestParamInfo<ConvCase>& info) {
  return info.param.label;
}

std::array<bool, 3> MaskOf(int m) {
  return {(m & 4) != 0, (m & 2) != 0, (m & 1) != 0};
}

// Each other axis value on its own (outputMask rotating over the 7 subsets, masked outputs
// alternately null): layouts, dtypes incl. mixed promotion, cubeMathType.
std::vector<ConvCase> OtherAxes(const ConvCase& base) {
  struct Axis {
    aclDataType gy, x, w;
    Layout layout;
    int cube;
  };
  const aclDataType F = ACL_FLOAT, H = ACL_FLOAT16, B = ACL_BF16, D = ACL_DOUBLE;
  const Axis kAxes[] = {{F, F, F, Layout::kPadded, 0},     {H, H, H, Layout::kPermuted, 0},
                        {F, F, F, Layout::kExpanded, 0},   {H, H, H, Layout::kContiguous, 0},
                        {B, B, B, Layout::kContiguous, 0}, {D, D, D, Layout::kContiguous, 0},
                        {D, D, D, Layout::kPadded, 0},     {H, F, F, Layout::kContiguous, 0},
                        {B, H, H, Layout::kPadded, 0},     {F, F, F, Layout::kContiguous, 1},
                        {F, F, F, Layout::kContiguous, 2}, {F, F, F, Layout::kPermuted, 3},
                        {B, B, B, Layout::kContiguous, 3}, {H, H, H, Layout::kContiguous, 2}};
  std::vector<ConvCase> out;
  for (size_t a = 0; a < std::size(kAxes); ++a) {
    ConvCase c = base;
    c.gy_dtype = kAxes[a].gy, c.x_dtype = kAxes[a].x, c.w_dtype = kAxes[a].w;
    c.layout = kAxes[a].layout;
    c.cube = kAxes[a].cube;
    c.mask = MaskOf(static_cast<int>((base.seed + a) % 7) + 1);
    c.null_masked = (base.seed / 7 + a) % 2 == 1;
    c.seed += 100000 * (a + 1);
    out.push_back(c);
  }
  return out;
}

class ConvCross : public ::testing::TestWithParam<ConvCase> {};

// FLOAT / KEEP_DTYPE / contiguous / all outputs (forward with and without bias), every other
// outputMask subset, then the other axis values.
TEST_P(ConvCross, AllAxes) {
  std::vector<ConvCase> cases{GetParam()};
  for (ConvCase& c : OtherAxes(GetParam())) cases.push_back(std::move(c));
  acltest::ExpectAllMatch(cases, /*forward=*/true);
  ConvCase no_bias = GetParam();
  no_bias.forward_bias = false;
  EXPECT_TRUE(acltest::CheckConvForward(no_bias));
  std::vector<ConvCase> masks;
  for (int m = 1; m < 7; ++m) {
    ConvCase c = GetParam();
    c.mask = MaskOf(m);
    c.null_masked = m % 2 == 1;
    masks.push_back(c);
  }
  acltest::ExpectAllMatch(masks, /*forward=*/false);
}

INSTANTIATE_TEST_SUITE_P(Geometry, ConvCross, ::testing::ValuesIn(acltest::GeometricCrossProduct()),
                         GeomName);

class ConvRepresentativeProduct : public ::testing::TestWithParam<ConvCase> {};

TEST_P(ConvRepresentativeProduct, DtypeLayoutMask) {
  std::vector<ConvCase> cases;
  for (aclDataType dt : {ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_DOUBLE})
    for (Layout layout : {Layout::kContiguous, Layout::kPermuted, Layout::kPadded})
      for (int m = 1; m < 8; ++m) {
        ConvCase c = GetParam();
        c.gy_dtype = c.x_dtype = c.w_dtype = dt;
        c.layout = layout;
        c.mask = MaskOf(m);
        c.null_masked = m % 2 == 0;
        c.seed += 7919 * static_cast<uint64_t>(m);
        cases.push_back(c);
      }
  acltest::ExpectAllMatch(cases, /*forward=*/false);
}

INSTANTIATE_TEST_SUITE_P(Representative, ConvRepresentativeProduct,
                         ::testing::ValuesIn(acltest::RepresentativeCases()), GeomName);

// Larger problems: FLOAT, FLOAT16, HF32 operands, and FLOAT in the padded layout.
class ConvLarge : public ::testing::TestWithParam<ConvCase> {};

TEST_P(ConvLarge, Variants) {
  std::vector<ConvCase> cases;
  for (int v = 0; v < 4; ++v) {
    ConvCase c = GetParam();
    if (v == 1) c.gy_dtype = c.x_dtype = c.w_dtype = ACL_FLOAT16;
    if (v == 2) c.cube = 1;
    if (v == 3) c.layout = Layout::kPadded;
    cases.push_back(c);
  }
  acltest::ExpectAllMatch(cases, /*forward=*/true);
}

TEST_P(ConvLarge, BackwardIsDeterministic) {
  EXPECT_TRUE(acltest::CheckConvBackwardDeterministic(GetParam()));
}

INSTANTIATE_TEST_SUITE_P(Large, ConvLarge, ::testing::ValuesIn(acltest::LargeCases()), GeomName);

}  // namespace
