// The bf16 data gradient stored by its kernel (cl_direct_bf16 with Operands::out16): where dx is a
// dense bf16 tensor, the row tiles round their fp32 sums to bf16 in the store, with no fp32 dx
// buffer and no narrowing pass. A padded dx still goes through the buffer and the pass. The two
// must agree bit for bit (same tiles, same sums; the store's rounding is the pass's), and both
// with the float64 reference. Shapes reach every store: 16-channel blocks with a tail (C_in 20),
// a stride-2 phase's every-other column, a stride-3 phase's element stores, dilation 2 along
// rows, 3d, and a batch of 8 whose fp32 dx would be computed in runs of samples (the dense one is
// planned again for the whole batch: "chunk:0" on its plan line).
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

bool Bf16DotKernels() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512bf16");
}

std::vector<ConvCase> Shapes() {
  return {
      MakeCase(MakeGeom({2, 20, 13, 30}, {24, 20, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1), "c20", 1),
      MakeCase(MakeGeom({2, 32, 15, 29}, {24, 32, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 1), "stride2", 2),
      MakeCase(MakeGeom({1, 16, 10, 40}, {8, 16, 4, 5}, {3, 3}, {1, 2}, {1, 1}, 1), "stride3", 3),
      MakeCase(MakeGeom({1, 16, 12, 30}, {16, 16, 3, 3}, {1, 1}, {2, 2}, {2, 2}, 1), "dil2", 4),
      MakeCase(MakeGeom({1, 16, 4, 6, 20}, {16, 16, 3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 1),
               "3d", 5),
      MakeCase(MakeGeom({8, 16, 12, 20}, {16, 16, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1), "batch8", 6),
  };
}

// The backward_data plan line of `log` (empty if none).
std::string DataPlanLine(const std::string& log) {
  for (size_t at = 0; at < log.size();) {
    const size_t end = std::min(log.find('\n', at), log.size());
    const std::string line = log.substr(at, end - at);
    if (line.rfind("aclnn_cpu_verbose,plan,", 0) == 0 && line.find(",backward_data,") != line.npos)
      return line;
    at = end + 1;
  }
  return "";
}

class Bf16Store : public ::testing::TestWithParam<ConvCase> {};

TEST_P(Bf16Store, DenseStoreEqualsNarrowingPassAndReference) {
  if (!Bf16DotKernels()) GTEST_SKIP() << "no AVX512_BF16: cl_direct_bf16 never runs";
  acltest::ScopedEnv force("ACLNN_CPU_CONV_ALGO", "cl_direct_bf16");
  ConvCase c = GetParam();
  c.x_dtype = c.w_dtype = c.gy_dtype = ACL_BF16;
  c.mask = {true, false, false};
  EXPECT_TRUE(acltest::CheckConvBackward(c));  // dense: stored by the kernel

  std::string dense_plan, padded_plan;
  acltest::BackwardValues dense, padded;
  {
    acltest::ScopedEnv verbose("ACLNN_CPU_VERBOSE", "1");
    ::testing::internal::CaptureStderr();
    dense = acltest::RunConvBackward(c);
    dense_plan = DataPlanLine(::testing::internal::GetCapturedStderr());
    c.layout = Layout::kPadded;
    ::testing::internal::CaptureStderr();
    padded = acltest::RunConvBackward(c);
    padded_plan = DataPlanLine(::testing::internal::GetCapturedStderr());
  }
  ASSERT_TRUE(dense.result.ok()) << dense.result.Describe();
  ASSERT_TRUE(padded.result.ok()) << padded.result.Describe();
  EXPECT_NE(dense_plan.find(",cl_direct_bf16,"), std::string::npos) << dense_plan;
  EXPECT_NE(padded_plan.find(",cl_direct_bf16,"), std::string::npos) << padded_plan;
  EXPECT_NE(dense_plan.find(" chunk:0,"), std::string::npos) << dense_plan;
  if (c.geom.input[0] == 8)  // the padded dx's fp32 buffer holds a run of samples at a time
    EXPECT_EQ(padded_plan.find(" chunk:0,"), std::string::npos) << padded_plan;

  ASSERT_EQ(dense.grad_input.size(), padded.grad_input.size());
  int64_t differ = 0, nonzero = 0;
  for (size_t i = 0; i < dense.grad_input.size(); ++i) {
    differ += dense.grad_input[i] != padded.grad_input[i];
    nonzero += dense.grad_input[i] != 0.0;
  }
  EXPECT_EQ(differ, 0) << "of " << dense.grad_input.size() << " dx elements";
  EXPECT_GT(nonzero, static_cast<int64_t>(dense.grad_input.size() / 2));
}

INSTANTIATE_TEST_SUITE_P(Conv, Bf16Store, ::testing::ValuesIn(Shapes()),
                         [](const ::testing::TestParamInfo<ConvCase>& info) {
                           return info.param.label;
                         });

}  // namespace
