// The fused depthwise backward (dx, dw and gradBias in one pass over dy, aclnn/src/conv/
// depthwise.h) on the inputs as stored: fp32, bf16 (its weight sums on the AVX512_BF16 dot
// kernel where bf16_dot_kernels(); ctest also runs this file with ACLNN_CPU_BF16_DOT=0 and
// ACLNN_CPU_MAX_ISA=avx2), fp16 and fp32 rounded to fp16 (USE_FP16: gradBias from the stored,
// unrounded dy). dx goes straight into its view: dense in place (fp32), narrowed plane by plane
// (16-bit), or through strides (padded layout). Shapes: rows of 1 and 2 bf16 vectors with tails
// and exactly 64 (the dot kernel's limit), 65 (beyond: the fp32 per-tap sums), kernel rows of 1
// to 7 taps, dilation, asymmetric padding, a channel multiplier, 1d and 3d, and stride 2 (no
// unit-stride kernel: the per-tap loops). Every case against the float64 naive reference, and
// the plan must have run the fused pass (one time line for both gradients). The pass is the
// registered algorithm depthwise_fused (a JobAlgorithm of both gradients, aclnn/DESIGN.md): the
// planner takes it where it chooses depthwise_direct for both gradients, and
// ACLNN_CPU_CONV_ALGO=depthwise_fused forces it wherever it applies.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/acl_test_util.h"
#include "support/conv_case.h"

namespace {

using acltest::ConvCase;
using acltest::Layout;
using acltest::MakeGeom;
using acltest::MakeGeom2dAsym;

std::vector<ConvCase> Shapes() {
  using acltest::MakeCase;
  return {
      MakeCase(MakeGeom({2, 6, 9, 56}, {6, 1, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 6), "w56", 1),
      MakeCase(MakeGeom({2, 4, 5, 64}, {4, 1, 3, 7}, {1, 1}, {1, 3}, {1, 1}, 4), "w64_k7", 2),
      MakeCase(MakeGeom({1, 4, 4, 65}, {4, 1, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 4), "w65", 3),
      MakeCase(MakeGeom({2, 5, 6, 33}, {5, 1, 3, 5}, {1, 1}, {2, 4}, {1, 2}, 5), "w33_k5_dil", 4),
      // Taps 9 columns either way: vectors inside the row read past its edges (AVX2: the
      // kernels' masked loads beyond the first and last vector).
      MakeCase(MakeGeom({2, 4, 5, 40}, {4, 1, 3, 7}, {1, 1}, {1, 9}, {1, 3}, 4), "w40_k7_dil3", 12),
      MakeCase(MakeGeom2dAsym({2, 4, 7, 40}, {4, 1, 3, 4}, {1, 1}, {0, 2, 3, 0}, {1, 1}, 4),
               "asym_k4", 5),
      MakeCase(MakeGeom({2, 4, 6, 30}, {8, 1, 3, 2}, {1, 1}, {1, 0}, {1, 1}, 4), "mult2_k2", 6),
      MakeCase(MakeGeom({2, 6, 8, 20}, {6, 1, 1, 1}, {1, 1}, {0, 0}, {1, 1}, 6), "k1", 7),
      MakeCase(MakeGeom({1, 3, 4, 6, 35}, {3, 1, 2, 3, 6}, {1, 1, 1}, {1, 1, 2}, {1, 1, 1}, 3),
               "3d_k6", 8),
      MakeCase(MakeGeom({2, 6, 50}, {6, 1, 5}, {1}, {2}, {1}, 6), "1d", 9),
      MakeCase(MakeGeom({2, 4, 9, 40}, {4, 1, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 4), "stride2", 10),
  };
}

struct Form {
  aclDataType dt;
  int cube;  // 2: USE_FP16
};

TEST(DepthwiseFused, EveryDtypeAndLayoutMatchesReference) {
  acltest::ScopedEnv force("ACLNN_CPU_CONV_ALGO", "depthwise_fused");
  acltest::ScopedEnv verbose("ACLNN_CPU_VERBOSE", "1");
  int calls = 0;
  ::testing::internal::CaptureStderr();
  for (ConvCase c : Shapes()) {
    for (Form f : {Form{ACL_FLOAT, 0}, Form{ACL_BF16, 0}, Form{ACL_FLOAT16, 0}, Form{ACL_FLOAT, 2}})
      for (Layout layout : {Layout::kContiguous, Layout::kPadded}) {
        c.x_dtype = c.w_dtype = c.gy_dtype = f.dt;
        c.cube = f.cube;
        c.layout = layout;
        EXPECT_TRUE(acltest::CheckConvBackward(c));
        ++calls;
      }
  }
  const std::string log = ::testing::internal::GetCapturedStderr();
  // One time line per fused run, named for the data gradient; none for a separate weight pass.
  // Both gradients' plan lines name the pass.
  EXPECT_GE(acltest::VerboseLines(log, "exec", ",backward_data,depthwise_fused,").size(),
            size_t(calls));
  EXPECT_EQ(acltest::VerboseLines(log, "exec", ",backward_weight,").size(), 0u)
      << log.substr(0, 2000);
  EXPECT_EQ(acltest::VerbosePlanLines(log, ",backward_data,depthwise_fused,").size(),
            size_t(calls));
  EXPECT_EQ(acltest::VerbosePlanLines(log, ",backward_weight,depthwise_fused,").size(),
            size_t(calls));
}

// The plan lines of c's backward (dx, dw and gradBias unless masked) in fp32.
std::string BackwardLog(ConvCase c) {
  acltest::ScopedEnv verbose("ACLNN_CPU_VERBOSE", "1");
  ::testing::internal::CaptureStderr();
  EXPECT_TRUE(acltest::CheckConvBackward(c));
  return ::testing::internal::GetCapturedStderr();
}

// Unforced, the planner takes the fused pass exactly where it chooses depthwise_direct for both
// gradients: a multiplier of at most 8 with both gradients asked; not for dx alone (the
// per-primitive kernel), and not for 12 outputs a group (the GEMM lowerings), where forcing it
// still runs it, correctly.
TEST(DepthwiseFused, PlannerTakesItWhereDepthwiseDirectServesBothGradients) {
  ConvCase c = Shapes()[0];  // 6 channels, multiplier 1, 3x3
  std::string log = BackwardLog(c);
  EXPECT_EQ(acltest::VerbosePlanLines(log, ",depthwise_fused,").size(), 2u) << log;
  EXPECT_EQ(acltest::VerboseLines(log, "exec", ",backward_data,depthwise_fused,").size(), 1u)
      << log;
  c.mask = {true, false, true};  // dx and gradBias only
  log = BackwardLog(c);
  EXPECT_EQ(acltest::VerbosePlanLines(log, ",depthwise_fused,").size(), 0u) << log;
  EXPECT_EQ(acltest::VerbosePlanLines(log, ",backward_data,depthwise_direct,").size(), 1u) << log;

  ConvCase wide = acltest::MakeCase(
      MakeGeom({2, 4, 9, 20}, {48, 1, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 4), "mult12", 13);
  log = BackwardLog(wide);
  for (const char* part : {",backward_data,depthwise_", ",backward_weight,depthwise_"})
    EXPECT_EQ(acltest::VerbosePlanLines(log, part).size(), 0u) << log;
  acltest::ScopedEnv force("ACLNN_CPU_CONV_ALGO", "depthwise_fused");
  for (Layout layout : {Layout::kContiguous, Layout::kPadded}) {
    wide.layout = layout;
    log = BackwardLog(wide);
    EXPECT_EQ(acltest::VerbosePlanLines(log, ",depthwise_fused,").size(), 2u) << log;
    EXPECT_NE(log.find("forced by ACLNN_CPU_CONV_ALGO"), std::string::npos) << log;
  }
}

// Forcing depthwise_direct (the per-primitive algorithm) still fuses its two gradients, as the
// planner did before the pass was registered: the pass follows the choices the forced lists made.
TEST(DepthwiseFused, ForcingDepthwiseDirectFusesBothGradients) {
  acltest::ScopedEnv force("ACLNN_CPU_CONV_ALGO", "depthwise_direct");
  const std::string log = BackwardLog(Shapes()[1]);
  EXPECT_EQ(acltest::VerbosePlanLines(log, ",depthwise_fused,").size(), 2u) << log;
}

// gradBias is the sum of the stored dy, not of the fp16-rounded operand USE_FP16 computes with:
// dy values that fp16 rounds away (1 + 2^-12 -> 1) would show in the sum of 4 x 20 x 48 of them.
TEST(DepthwiseFused, UseFp16BiasSumsTheStoredValues) {
  acltest::ScopedEnv force("ACLNN_CPU_CONV_ALGO", "depthwise_fused");
  ConvCase c =
      acltest::MakeCase(MakeGeom({4, 3, 20, 48}, {3, 1, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 3), "b", 11);
  c.cube = 2;
  c.edit_values = [](std::vector<double>& gy, std::vector<double>&, std::vector<double>&) {
    for (double& v : gy) v = 1.0 + 1.0 / 4096;
  };
  EXPECT_TRUE(acltest::CheckConvBackward(c));
}

}  // namespace
