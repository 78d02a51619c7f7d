// cubeMathType USE_FP16 on fp32 inputs, where the algorithms read the fp32 tensors in place and
// round them to fp16 inside a step that already touches them (pointwise_gemm's weight gradient:
// the GEMM's operand packing, gemm::Mat::fp16; strided_direct's weight gradient: the slab of x it
// builds) instead of a separate conversion pass. The inputs are chosen so that the rounding
// changes every result by far more than the tolerance: positive values h * (1 + 2^-13) with h an
// fp16 value, which round back to h (2^-13 is below half an fp16 ulp at any mantissa), so the
// products of the unrounded values are all ~2.4e-4 larger in the same direction while the
// tolerance is 1e-5 of the sum of |terms|. Each test first checks that its data discriminates
// (the unrounded reference is far off), then that the algorithm, forced, matches the rounded
// reference and ran.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/conv_case.h"

namespace {

using acltest::ConvCase;
using acltest::MakeGeom;
using acltest::ScopedEnv;

constexpr int kUseFp16 = 2;  // cubeMathType USE_FP16

// |v| rounded to fp16, times (1 + 2^-13): fp16 rounding takes it back to the fp16 value.
void JustAboveFp16(std::vector<double>& v) {
  for (double& e : v) e = acltest::RoundToF16(0.25 + std::fabs(e)) * (1.0 + std::ldexp(1.0, -13));
}

ConvCase Fp16Case(const naive::ConvGeom& g, const std::string& label, uint64_t seed) {
  ConvCase c = acltest::MakeCase(g, label, seed);
  c.cube = kUseFp16;
  c.edit_values = [](std::vector<double>& gy, std::vector<double>& x, std::vector<double>& w) {
    JustAboveFp16(gy), JustAboveFp16(x), JustAboveFp16(w);
  };
  return c;
}

// The gradient `which` (&naive::Grads::weight or ::input) of the unrounded operands is off by
// more than 10x the 1e-5 tolerance everywhere: a kernel that skipped the rounding could not pass.
void ExpectDiscriminates(const ConvCase& c, auto which) {
  const acltest::BackwardValues v = acltest::RunConvBackward(c);
  ASSERT_TRUE(v.result.ok()) << c.Describe();
  const naive::Rounder r = naive::CubeOperandRounding(ACL_FLOAT, kUseFp16);
  const naive::Grads exact = naive::ConvBackward(c.geom, v.gy, v.x, v.w);
  const naive::Grads rounded = naive::ConvBackward(
      c.geom, naive::RoundAll(v.gy, r), naive::RoundAll(v.x, r), naive::RoundAll(v.w, r));
  const auto &e = exact.*which, &o = rounded.*which;
  double least = 1e30;
  for (size_t i = 0; i < e.value.size(); ++i)
    least = std::min(least, std::fabs(e.value[i] - o.value[i]) / e.scale[i]);
  EXPECT_GT(least, 1e-4) << c.Describe();
}
void ExpectDataDiscriminates(const ConvCase& c) {
  ExpectDiscriminates(c, &naive::Grads::weight);
}
void ExpectInputGradientDiscriminates(const ConvCase& c) {
  ExpectDiscriminates(c, &naive::Grads::input);
}

// Forces `algo`, checks both ways against the rounded reference, and that `algo` ran `primitive`
// where its kernels run at the tier in force (elsewhere, ctest's _maxnone run, that it never ran:
// the planner's fallback computed the same values).
void ExpectForcedMatches(const ConvCase& c, const std::string& algo, const std::string& primitive) {
  ScopedEnv force("ACLNN_CPU_CONV_ALGO", algo);
  ScopedEnv verbose("ACLNN_CPU_VERBOSE", "1");
  ::testing::internal::CaptureStderr();
  EXPECT_TRUE(acltest::CheckConvBackward(c));
  EXPECT_TRUE(acltest::CheckConvForward(c));
  const std::string log = ::testing::internal::GetCapturedStderr();
  const bool ran = log.find("," + primitive + "," + algo + ",") != std::string::npos;
  EXPECT_EQ(ran, acltest::AlgorithmRunsHere(algo)) << "tier " << acltest::IsaInForce() << "\n"
                                                   << log.substr(0, 2000);
}

// c's geometry and mask with fp16 inputs (values of their own), `algo` forced: the same
// conversions without the USE_FP16 rounding, against the reference.
void ExpectFp16Matches(const ConvCase& c, const std::string& algo) {
  ConvCase h = acltest::MakeCase(c.geom, c.label + "_f16", c.seed + 10);
  h.x_dtype = h.w_dtype = h.gy_dtype = ACL_FLOAT16;
  h.mask = c.mask;
  ScopedEnv force("ACLNN_CPU_CONV_ALGO", algo);
  EXPECT_TRUE(acltest::CheckConvBackward(h)) << h.label;
}

// pointwise_gemm: several samples, a channel count past the GEMM's 8 x 48 tile, positions past
// its K block (256) with a tail.
TEST(ConvFp16Rounding, PointwiseWeightGradientRoundsInThePacking) {
  const ConvCase c =
      Fp16Case(MakeGeom({3, 52, 19, 17}, {40, 52, 1, 1}, {1, 1}, {0, 0}, {1, 1}, 1), "pw", 41);
  ExpectDataDiscriminates(c);
  ExpectForcedMatches(c, "pointwise_gemm", "backward_weight");
}

// grid_direct's weight gradient on AVX-512 (x converted a sample at a time, dy converted and
// rounded inside its transpose to channels-last, gradBias summed there from the unrounded dy):
// output channels past a vector (40: a tail of 8), several samples and grid rows, a W stride.
// gradBias is checked against the sum of the stored dy, which the rounded dy misses by ~1e-4.
// fp16 inputs take the same transposes (converted, not rounded).
TEST(ConvFp16Rounding, GridDirectWeightRoundsInTheTranspose) {
  const std::vector<ConvCase> cases = {
      Fp16Case(MakeGeom({8, 6, 14, 13}, {40, 6, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1), "grid_w", 48),
      Fp16Case(MakeGeom({6, 8, 15, 17}, {20, 8, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 1), "grid_w_s2", 49),
  };
  for (const ConvCase& c : cases) {
    ExpectDataDiscriminates(c);
    ExpectForcedMatches(c, "grid_direct", "backward_weight");
    ExpectFp16Matches(c, "grid_direct");
  }
}

// col2im_gemm's data gradient with the weights packed once per group: USE_FP16 dy read in place,
// rounded to fp16 by the GEMM's packing (gemm::Mat::fp16), columns past a 48-wide panel, two
// groups, a stride (col2im's scatter). fp16 dy takes the converted chunk instead.
TEST(ConvFp16Rounding, Col2imGemmDataRoundsInThePacking) {
  const std::vector<ConvCase> cases = {
      Fp16Case(MakeGeom({4, 6, 14, 13}, {40, 6, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1), "col2im", 50),
      Fp16Case(MakeGeom({3, 16, 15, 17}, {24, 8, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 2), "col2im_g2",
               51),
  };
  for (const ConvCase& c : cases) {
    ExpectInputGradientDiscriminates(c);
    ConvCase dx_only = c;
    dx_only.mask = {true, false, false};
    ExpectForcedMatches(dx_only, "col2im_gemm", "backward_data");
    ExpectFp16Matches(dx_only, "col2im_gemm");
  }
}

// strided_direct: a transposed 3d convolution (its weight gradient is a strided one), ct3d's
// kernel and strides, several row blocks and planes.
TEST(ConvFp16Rounding, StridedDirectWeightGradientRounds) {
  const ConvCase c = Fp16Case(MakeGeom({2, 16, 4, 9, 10}, {16, 8, 3, 3, 3}, {2, 2, 2}, {1, 1, 1},
                                       {1, 1, 1}, 1, true, {1, 1, 1}),
                              "t3d", 42);
  ExpectDataDiscriminates(c);
  ExpectForcedMatches(c, "strided_direct", "backward_weight");
}

// strided_direct again, sized so that its weight gradient takes two row blocks (40 output rows
// of 12; the plan's 256 KB block budget), several planes and three samples: the slab's planes
// stay in their ring slots from one plane's block to the next, and the next block's planes
// (the next rows', the next sample's) are asked for while a block computes. A plane put in the
// wrong slot, or a block's rows converted short, changes dw far past the tolerance; fp16 inputs
// take the same conversions.
TEST(ConvFp16Rounding, StridedDirectWeightSlabRingOverBlocksAndSamples) {
  const ConvCase c = Fp16Case(MakeGeom({3, 16, 4, 40, 12}, {16, 16, 3, 3, 3}, {2, 2, 2}, {1, 1, 1},
                                       {1, 1, 1}, 1, true, {1, 1, 1}),
                              "t3d_blocks", 43);
  ExpectDataDiscriminates(c);
  ExpectForcedMatches(c, "strided_direct", "backward_weight");
  ExpectFp16Matches(c, "strided_direct");
}

// cl_direct's streamed 3d passes (converted sources, one pass): a task converts the source
// planes of a chunk of output rows into a ring of plane slots, planes inner, keeps the planes the
// next output plane shares, and asks for its new ones while the plane before computes. Sized so
// that each case takes several row chunks, a ring that wraps, and (on 2 threads) more than one
// range of planes per sample: a transposed 3d convolution (its input gradient is cl_direct's
// strided forward: stride 2, ct3d's kernel) and a unit-stride 3d data gradient. A converted row
// in the wrong ring row or slot, a chunk's last rows not converted, or the USE_FP16 rounding
// skipped each change dx far past the tolerance; fp16 inputs take the same conversions. (Run again
// under ACLNN_CPU_SMALL_BLOCKS=1: one output row a chunk.)
TEST(ConvFp16Rounding, ClDirectStreamsConvertedPlanesThroughARing) {
  if (!acltest::AlgorithmRunsHere("cl_direct"))
    GTEST_SKIP() << "cl_direct needs AVX2 or AVX-512; this CPU lacks it";
  const std::vector<ConvCase> cases = {
      Fp16Case(MakeGeom({1, 16, 5, 24, 20}, {16, 32, 3, 3, 3}, {2, 2, 2}, {1, 1, 1}, {1, 1, 1}, 1,
                        true, {1, 1, 1}),
               "t3d_stream", 45),
      Fp16Case(MakeGeom({1, 16, 6, 12, 40}, {32, 16, 3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 1),
               "c3d_stream", 46),
      // Padding 3 along H: under ACLNN_CPU_SMALL_BLOCKS=1 (one output row a chunk) the first
      // chunk's source rows all lie in the padding, and its rows must still be stored (zero).
      Fp16Case(MakeGeom({1, 16, 3, 10, 12}, {16, 32, 3, 3, 3}, {2, 2, 2}, {1, 3, 1}, {1, 1, 1}, 1,
                        true, {1, 1, 1}),
               "t3d_pad3", 47),
  };
  for (const ConvCase& c : cases) {
    // The transposed ones' dx is a forward of stride 2 along rows: AVX-512 only.
    if (c.geom.transposed && !acltest::Avx512Runs()) continue;
    ExpectInputGradientDiscriminates(c);
    ConvCase dx_only = c;
    dx_only.mask = {true, false, false};
    ExpectForcedMatches(dx_only, "cl_direct", c.geom.transposed ? "forward" : "backward_data");
    ExpectFp16Matches(dx_only, "cl_direct");
  }
}

}  // namespace
