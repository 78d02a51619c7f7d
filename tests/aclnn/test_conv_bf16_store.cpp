// bf16 outputs stored by their kernels (Algorithm::writes_bf16, Operands::out16): where gradInput
// is a dense bf16 tensor, cl_direct_bf16's row tiles and grid_direct's bf16 passes round their
// fp32 sums to bf16 as they store them, with no fp32 buffer and no narrowing pass. A padded
// gradInput still goes through the buffer and the pass. The two must agree bit for bit (same
// sums; the stores round like the pass), and both with the float64 reference. Shapes reach every
// store: 16-channel blocks with a tail (C_in 20), a stride-2 phase's every-other column, a
// stride-3 phase's element stores, dilation 2 along rows, 3d, rows past grid_direct's staging
// row, phases no tap reaches, a transposed conv's gradInput (the forward primitive), and batches
// of 8 whose fp32 gradInput would be computed in runs of samples (the dense one is planned again
// for the whole batch: "chunk:0" on its plan line).
#include <ostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/acl_test_util.h"
#include "support/conv_case.h"

namespace {

using acltest::ConvCase;
using acltest::Layout;
using acltest::MakeCase;
using acltest::MakeGeom;

// A case and the algorithm forced on it.
struct StoreCase {
  std::string algo;
  ConvCase c;
};

void PrintTo(const StoreCase& sc, std::ostream* os) {
  *os << sc.algo << " on ";
  acltest::PrintTo(sc.c, os);
}

std::vector<StoreCase> Cases() {
  const std::vector<ConvCase> regular = {
      MakeCase(MakeGeom({2, 20, 13, 30}, {24, 20, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1), "c20", 1),
      MakeCase(MakeGeom({2, 32, 15, 29}, {24, 32, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 1), "stride2", 2),
      MakeCase(MakeGeom({1, 16, 10, 40}, {8, 16, 4, 5}, {3, 3}, {1, 2}, {1, 1}, 1), "stride3", 3),
      MakeCase(MakeGeom({1, 16, 12, 30}, {16, 16, 3, 3}, {1, 1}, {2, 2}, {2, 2}, 1), "dil2", 4),
      MakeCase(MakeGeom({1, 16, 4, 6, 20}, {16, 16, 3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 1),
               "3d", 5),
      MakeCase(MakeGeom({8, 16, 12, 20}, {16, 16, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1), "batch8", 6),
      // Rows longer than grid_direct's staging row (300 > 256) at stride 2.
      MakeCase(MakeGeom({1, 16, 5, 600}, {16, 16, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 1), "long_s2", 7),
  };
  // Transposed: dx is the forward primitive's output (grid_direct's forward pass).
  const std::vector<ConvCase> transposed = {
      MakeCase(MakeGeom({2, 16, 9, 8}, {16, 12, 4, 4}, {2, 2}, {1, 1}, {1, 1}, 1, true, {0, 0}),
               "t_s2", 8),
      MakeCase(MakeGeom({8, 16, 7, 9}, {16, 16, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, true, {0, 0}),
               "t_batch8", 9),
  };
  std::vector<StoreCase> out;
  for (const ConvCase& c : regular) out.push_back({"cl_direct_bf16", c});
  for (const ConvCase& c : regular) out.push_back({"grid_direct", c});
  // 1x1 at stride 2: phases of dx no tap reaches (zeroed, not computed).
  out.push_back(
      {"grid_direct",
       MakeCase(MakeGeom({2, 16, 9, 20}, {16, 16, 1, 1}, {2, 2}, {0, 0}, {1, 1}, 1), "k1_s2", 10)});
  for (const ConvCase& c : transposed) out.push_back({"grid_direct", c});
  return out;
}

// The plan line of `log` for `primitive` (empty if none).
std::string PlanLine(const std::string& log, const std::string& primitive) {
  const std::vector<std::string> lines = acltest::VerbosePlanLines(log, "," + primitive + ",");
  return lines.empty() ? "" : lines.front();
}

// c's backward with a dense gradInput and with a padded one (which goes through the fp32 buffer
// and the narrowing pass), with the plan line of `primitive` (gradInput's) of each.
struct DenseAndPadded {
  acltest::BackwardValues dense, padded;
  std::string dense_plan, padded_plan;
};
DenseAndPadded RunDenseAndPadded(ConvCase c, const std::string& primitive) {
  acltest::ScopedEnv verbose("ACLNN_CPU_VERBOSE", "1");
  DenseAndPadded r;
  ::testing::internal::CaptureStderr();
  r.dense = acltest::RunConvBackward(c);
  r.dense_plan = PlanLine(::testing::internal::GetCapturedStderr(), primitive);
  c.layout = Layout::kPadded;
  ::testing::internal::CaptureStderr();
  r.padded = acltest::RunConvBackward(c);
  r.padded_plan = PlanLine(::testing::internal::GetCapturedStderr(), primitive);
  return r;
}

class Bf16Store : public ::testing::TestWithParam<StoreCase> {};

TEST_P(Bf16Store, DenseStoreEqualsNarrowingPassAndReference) {
  // ctest also runs this suite with ACLNN_CPU_BF16_DOT=1, so the kernels run on every CPU with
  // AVX512_BF16, Intel's too (the policy's default is on for AMD only).
  if (!acltest::Bf16DotRuns()) GTEST_SKIP() << "the bf16 dot kernels do not run here";
  const StoreCase& sc = GetParam();
  acltest::ScopedEnv force("ACLNN_CPU_CONV_ALGO", sc.algo);
  ConvCase c = sc.c;
  c.x_dtype = c.w_dtype = c.gy_dtype = ACL_BF16;
  c.mask = {true, false, false};
  EXPECT_TRUE(acltest::CheckConvBackward(c));  // dense: stored by the kernel

  // gradInput is backward_data's result, or forward's for a transposed conv.
  const std::string primitive = c.geom.transposed ? "forward" : "backward_data";
  const DenseAndPadded runs = RunDenseAndPadded(c, primitive);
  const acltest::BackwardValues &dense = runs.dense, &padded = runs.padded;
  const std::string &dense_plan = runs.dense_plan, &padded_plan = runs.padded_plan;
  ASSERT_TRUE(dense.result.ok()) << dense.result.Describe();
  ASSERT_TRUE(padded.result.ok()) << padded.result.Describe();
  const std::string ran = "," + sc.algo + ",";
  EXPECT_NE(dense_plan.find(ran), std::string::npos) << dense_plan;
  EXPECT_NE(dense_plan.find(" bf16,"), std::string::npos) << dense_plan;
  EXPECT_NE(padded_plan.find(ran), std::string::npos) << padded_plan;
  EXPECT_NE(dense_plan.find(" chunk:0,"), std::string::npos) << dense_plan;
  if (c.geom.input[0] == 8) {  // the padded dx's fp32 buffer holds a run of samples at a time
    EXPECT_EQ(padded_plan.find(" chunk:0,"), std::string::npos) << padded_plan;
  }

  ASSERT_EQ(dense.grad_input.size(), padded.grad_input.size());
  int64_t differ = 0, nonzero = 0;
  for (size_t i = 0; i < dense.grad_input.size(); ++i) {
    differ += dense.grad_input[i] != padded.grad_input[i];
    nonzero += dense.grad_input[i] != 0.0;
  }
  EXPECT_EQ(differ, 0) << "of " << dense.grad_input.size() << " dx elements";
  EXPECT_GT(nonzero, static_cast<int64_t>(dense.grad_input.size() / 5));
}

INSTANTIATE_TEST_SUITE_P(Conv, Bf16Store, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<StoreCase>& info) {
                           return info.param.algo + "_" + info.param.c.label;
                         });

// fp16 and bf16 outputs of converting fp32 runs stored by the GEMM (Blocking::stores16,
// gemm::sgemm_packed_narrow): pointwise_gemm's backward_data (and, transposed, its forward) on
// AVX-512 rounds each product as its micro-kernel stores it, where the contraction fits one K
// block (C_out <= 256). Dense and padded gradInput must agree bit for bit (a padded one goes
// through the fp32 buffer and the narrowing pass) and both with the float64 reference; the dense
// plan has no runs of samples ("chunk:0") where the store runs. Shapes: channel tails against the
// 8-row and 48-column tiles, a batch of 8, a transposed conv, and C_out 300 (two K blocks: the
// fp32 buffer and the pass, still exact).
TEST(ConvertedStore, PointwiseDenseStoreEqualsNarrowingPassAndReference) {
  acltest::ScopedEnv force("ACLNN_CPU_CONV_ALGO", "pointwise_gemm");
  const std::vector<ConvCase> cases = {
      MakeCase(MakeGeom({8, 20, 9, 11}, {36, 20, 1, 1}, {1, 1}, {0, 0}, {1, 1}, 1), "tails", 21),
      MakeCase(MakeGeom({2, 64, 10, 10}, {24, 32, 1, 1}, {1, 1}, {0, 0}, {1, 1}, 2), "groups2", 22),
      MakeCase(MakeGeom({8, 24, 7, 9}, {24, 20, 1, 1}, {1, 1}, {0, 0}, {1, 1}, 1, true, {0, 0}),
               "transposed", 23),
      MakeCase(MakeGeom({2, 8, 6, 50}, {300, 8, 1, 1}, {1, 1}, {0, 0}, {1, 1}, 1), "k300", 24),
  };
  for (aclDataType dt : {ACL_FLOAT16, ACL_BF16}) {
    if (dt == ACL_BF16 && acltest::Bf16NativeRuns()) continue;  // pointwise_bf16's kernels
    for (ConvCase c : cases) {
      c.x_dtype = c.w_dtype = c.gy_dtype = dt;
      c.mask = {true, false, false};
      const std::string what = c.label + (dt == ACL_BF16 ? " bf16" : " fp16");
      EXPECT_TRUE(acltest::CheckConvBackward(c)) << what;
      const std::string primitive = c.geom.transposed ? "forward" : "backward_data";
      const DenseAndPadded runs = RunDenseAndPadded(c, primitive);
      const acltest::BackwardValues &dense = runs.dense, &padded = runs.padded;
      const std::string& dense_plan = runs.dense_plan;
      ASSERT_TRUE(dense.result.ok()) << dense.result.Describe();
      ASSERT_TRUE(padded.result.ok()) << padded.result.Describe();
      EXPECT_NE(dense_plan.find(",pointwise_gemm,"), std::string::npos) << dense_plan;
      const bool stores = acltest::Avx512Runs() && c.label != "k300";
      if (c.geom.input[0] == 8 || stores) {
        EXPECT_EQ(dense_plan.find(" chunk:0,") != std::string::npos, stores) << what << dense_plan;
      }
      EXPECT_EQ(dense.grad_input, padded.grad_input) << what;
    }
  }
}

}  // namespace
