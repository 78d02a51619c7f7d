// The workspace contract of the performance issue: phase 1 of aclnnConvolutionBackward asks for at
// most twice the bytes of the largest tensor of the problem (im2col is chunked or implicit, never
// materialised whole), on the benchmark's shapes, planned for 2 threads (the per-thread scratch
// grows with the thread count; the bound is stated for the 2-core benchmark machine).
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <tbb/task_arena.h>

#include "acl/acl.h"
#include "aclnnop/aclnn_convolution.h"
#include "aclnnop/aclnn_convolution_backward.h"
#include "cases.h"  // bench/cases.h: the benchmark problems
#include "support/acl_test_util.h"
#include "support/conv_case.h"

namespace {

using Shape = std::vector<int64_t>;

struct Problem {
  std::string name;
  Shape x, w, stride, pad, dil, out_pad;
  int64_t groups = 1;
  bool transposed = false;
};

void PrintTo(const Problem& p, std::ostream* os) {
  *os << p.name;
}

// The benchmark's aclnnConvolutionBackward problems (bench/cases.cpp; its tbc problem goes through
// another API), each with its batch divided by `batch_div` (at least 1 sample): the per-thread
// scratch does not depend on the batch, so a smaller one only makes the bound harder.
std::vector<Problem> BenchProblems(int64_t batch_div) {
  std::vector<Problem> out;
  for (const aclbench::Case& c : aclbench::cases()) {
    if (c.tbc) continue;
    Problem p{c.name, c.x, c.w, c.stride, c.pad, c.dil, c.out_pad, c.groups, c.transposed};
    p.x[0] = std::max<int64_t>(1, p.x[0] / batch_div);
    out.push_back(p);
  }
  return out;
}

// The benchmark problem `name`, batch divided by `batch_div`.
Problem BenchProblem(const std::string& name, int64_t batch_div) {
  for (const Problem& p : BenchProblems(batch_div))
    if (p.name == name) return p;
  throw std::invalid_argument("no benchmark problem " + name + " in bench/cases.cpp");
}

Shape OutShape(const Problem& p) {
  Shape y{p.x[0], p.transposed ? p.w[1] * p.groups : p.w[0]};
  for (size_t d = 0; d + 2 < p.x.size(); ++d) {
    const int64_t n = p.x[d + 2], k = p.w[d + 2];
    y.push_back(p.transposed
                    ? (n - 1) * p.stride[d] - 2 * p.pad[d] + p.dil[d] * (k - 1) + p.out_pad[d] + 1
                    : (n + 2 * p.pad[d] - p.dil[d] * (k - 1) - 1) / p.stride[d] + 1);
  }
  return y;
}

uint64_t Bytes(const Shape& s, aclDataType dt = ACL_FLOAT) {
  return static_cast<uint64_t>(acltest::Numel(s)) * (dt == ACL_FLOAT ? 4 : 2);
}

// Expects phase 1's workspace for all three gradients of `p` in dtype `dt` (FLOAT, FLOAT16 or
// BF16) under cubeMathType `cube` to be at most twice the bytes of its largest tensor.
void ExpectWithinBound(const Problem& p, aclDataType dt, int cube = 0) {
  const Shape y = OutShape(p);
  const int64_t c_out = y[1];
  acltest::TestTensor gy(y, dt), x(p.x, dt), w(p.w, dt);
  acltest::TestTensor gx(p.x, dt), gw(p.w, dt), gb({c_out}, dt);
  auto bias_sizes = acltest::MakeIntArray({c_out});
  auto stride = acltest::MakeIntArray(p.stride), pad = acltest::MakeIntArray(p.pad);
  auto dil = acltest::MakeIntArray(p.dil), out_pad = acltest::MakeIntArray(p.out_pad);
  auto mask = acltest::MakeBoolArray({true, true, true});
  uint64_t ws_size = 0;
  aclOpExecutor* ex = nullptr;
  aclnnStatus status = 0;
  tbb::task_arena(2).execute([&] {
    status = aclnnConvolutionBackwardGetWorkspaceSize(
        gy.get(), x.get(), w.get(), bias_sizes.get(), stride.get(), pad.get(), dil.get(),
        p.transposed, out_pad.get(), static_cast<int>(p.groups), mask.get(),
        static_cast<int8_t>(cube), gx.get(), gw.get(), gb.get(), &ws_size, &ex);
  });
  ASSERT_EQ(status, 0) << aclGetRecentErrMsg();
  const uint64_t largest = std::max({Bytes(p.x, dt), Bytes(p.w, dt), Bytes(y, dt)});
  EXPECT_LE(ws_size, 2 * largest) << p.name << " (dtype " << dt << ", cubeMathType " << cube
                                  << "): workspace " << ws_size << " bytes, largest tensor "
                                  << largest << " bytes";
  EXPECT_EQ(aclDestroyAclOpExecutor(ex), 0);
}

class Workspace : public ::testing::TestWithParam<Problem> {};

TEST_P(Workspace, AtMostTwiceTheLargestTensor) {
  ExpectWithinBound(GetParam(), ACL_FLOAT);
}

// fp16, and fp32 rounded to fp16 (USE_FP16): the GEMM lowerings and direct kernels convert the
// inputs block by block as they read them, so no whole fp32 copy is reserved. The bound is on the
// fp16 tensors' bytes, half the fp32 ones (for USE_FP16 the fp32 ones), so the per-thread fp32
// scratch counts twice as much: these are the benchmark's shapes, batch included.
class Workspace16 : public ::testing::TestWithParam<Problem> {};

TEST_P(Workspace16, Fp16AtMostTwiceTheLargestTensor) {
  ExpectWithinBound(GetParam(), ACL_FLOAT16);
}
TEST_P(Workspace16, UseFp16AtMostTwiceTheLargestTensor) {
  ExpectWithinBound(GetParam(), ACL_FLOAT, /*cube=*/2);
}
// bf16 likewise, on its own tensors' bytes: the fp32 outputs are computed a few samples at a
// time, and the bf16 weight gradient's bands (every stride phase, both parities of pairs) are
// sized to fit (ct3d asked for 3.4x with bands sized by output rows alone).
TEST_P(Workspace16, Bf16AtMostTwiceTheLargestTensor) {
  ExpectWithinBound(GetParam(), ACL_BF16);
}

std::string ProblemName(const ::testing::TestParamInfo<Problem>& info) {
  return info.param.name;
}

// fp32: the benchmark problems with a quarter of their batch.
INSTANTIATE_TEST_SUITE_P(Bench, Workspace, ::testing::ValuesIn(BenchProblems(4)), ProblemName);

// 16-bit: the benchmark problems as they are, batch included.
INSTANTIATE_TEST_SUITE_P(Bench, Workspace16, ::testing::ValuesIn(BenchProblems(1)), ProblemName);

// bf16: the fp32 gradients are computed a few samples at a time (and converted into the bf16
// outputs), never whole; depthwise converts its inputs a plane at a time. The bound is on the
// bf16 tensors' bytes, half the fp32 ones.
TEST(WorkspaceBf16, DepthwiseAtMostTwiceTheLargestTensor) {
  ExpectWithinBound(BenchProblem("c2d_depthwise", 4), ACL_BF16);
}

TEST(WorkspaceBf16, PointwiseAtMostTwiceTheLargestTensor) {
  if (!acltest::Bf16DotRuns())
    GTEST_SKIP() << "bf16 is converted to fp32 here (no bf16 dot kernels)";
  ExpectWithinBound(BenchProblem("c2d_resnet1x1", 4), ACL_BF16);
}

// The benchmark's tbc problem, bf16, through aclnnConvTbcBackward (all three gradients) and
// aclnnConvTbc: the time-major forms read the caller's rows in place, so only their scratch is
// asked for. Where the AMX tiles run (the CPU's, or the model of libaclnn_amx_model) that is
// tbc_amx: the weight taps packed once and per-thread panels; elsewhere tbc_bf16 or tbc_convert
// (tier none included: it once took the regular path there, which packed the views and asked for
// 31,065,152 bytes against a bound of 16,777,216).
TEST(WorkspaceBf16, TbcAtMostTwiceTheLargestTensor) {
  const aclbench::Case* tbc = nullptr;
  for (const aclbench::Case& c : aclbench::cases())
    if (c.tbc) tbc = &c;
  ASSERT_NE(tbc, nullptr) << "no tbc problem in bench/cases.cpp";
  const int64_t T = tbc->x[0], B = tbc->x[1], Ci = tbc->x[2], K = tbc->w[0], Co = tbc->w[2];
  const int64_t T_out = T + 2 * tbc->pad[0] + 1 - K;
  const aclDataType dt = ACL_BF16;
  acltest::TestTensor x({T, B, Ci}, dt), w({K, Ci, Co}, dt), b({Co}, dt), gy({T_out, B, Co}, dt);
  acltest::TestTensor gx({T, B, Ci}, dt), gw({K, Ci, Co}, dt), gb({Co}, dt), y({T_out, B, Co}, dt);
  const uint64_t largest =
      std::max({Bytes({T, B, Ci}, dt), Bytes({K, Ci, Co}, dt), Bytes({T_out, B, Co}, dt)});
  acltest::ScopedEnv verbose("ACLNN_CPU_VERBOSE", "1");
  ::testing::internal::CaptureStderr();
  uint64_t backward = 0, forward = 0;
  aclOpExecutor *ex_b = nullptr, *ex_f = nullptr;
  aclnnStatus status_b = 0, status_f = 0;
  tbb::task_arena(2).execute([&] {
    status_b =
        aclnnConvTbcBackwardGetWorkspaceSize(gy.get(), x.get(), w.get(), b.get(), tbc->pad[0], 0,
                                             gx.get(), gw.get(), gb.get(), &backward, &ex_b);
    status_f = aclnnConvTbcGetWorkspaceSize(x.get(), w.get(), b.get(), tbc->pad[0], y.get(), 0,
                                            &forward, &ex_f);
  });
  const std::string log = ::testing::internal::GetCapturedStderr();
  ASSERT_EQ(status_b, 0);
  ASSERT_EQ(status_f, 0);
  EXPECT_LE(backward, 2 * largest)
      << "tbc backward: workspace " << backward << " bytes, largest " << largest << "\n"
      << log;
  EXPECT_LE(forward, 2 * largest) << "tbc forward: workspace " << forward << " bytes, largest "
                                  << largest << "\n"
                                  << log;
  const std::vector<std::string> plans = acltest::VerbosePlanLines(log);
  EXPECT_EQ(plans.size(), 3u) << log;  // gradInput, gradWeight (+ gradBias), the forward
  const std::string form = acltest::AmxTilesInForce() != "off" ? ",tbc_amx," : ",tbc_";
  for (const std::string& line : plans) EXPECT_NE(line.find(form), std::string::npos) << line;
  EXPECT_EQ(aclDestroyAclOpExecutor(ex_b), 0);
  EXPECT_EQ(aclDestroyAclOpExecutor(ex_f), 0);
}

// The plan lines phase 1 prints (ACLNN_CPU_VERBOSE) for all three gradients of `p` in `dt`.
std::string PlanLines(const Problem& p, aclDataType dt, int cube = 0) {
  acltest::ScopedEnv verbose("ACLNN_CPU_VERBOSE", "1");
  ::testing::internal::CaptureStderr();
  ExpectWithinBound(p, dt, cube);
  return ::testing::internal::GetCapturedStderr();
}

// Depthwise convolutions keep the plane kernels in every dtype: bf16 prefers algorithms that read
// it natively, and one whose cost rules overlooked depthwise shapes took its weight gradient at a
// seventh of the speed (grid_direct with one channel a group, c2d_depthwise bf16: ~100 vs 15 ms).
// Both gradients are asked, so depthwise_direct's two passes run fused (depthwise_fused).
TEST(BenchPlans, DepthwiseRunsThePlaneKernelsInEveryDtype) {
  const Problem p = BenchProblem("c2d_depthwise", 4);
  struct Form {
    aclDataType dt;
    int cube;
  };
  for (Form f : {Form{ACL_FLOAT, 0}, Form{ACL_FLOAT16, 0}, Form{ACL_BF16, 0}, Form{ACL_FLOAT, 2}}) {
    const std::string log = PlanLines(p, f.dt, f.cube);
    const std::vector<std::string> plans = acltest::VerbosePlanLines(log);
    for (const std::string& line : plans)
      EXPECT_NE(line.find(",depthwise_fused,"), std::string::npos) << line;
    EXPECT_EQ(plans.size(), 2u) << "dtype " << f.dt << ", cube " << f.cube << ":\n" << log;
  }
}

// The weight-gradient algorithm phase 1 plans for bench case `name` in `dt`.
std::string WeightPlan(const std::string& name, aclDataType dt, int cube = 0) {
  const std::vector<std::string> lines =
      acltest::VerbosePlanLines(PlanLines(BenchProblem(name, 1), dt, cube), ",backward_weight,");
  if (lines.size() != 1) return "(" + std::to_string(lines.size()) + " weight plans)";
  for (const char* algo : {"strided_direct", "grid_direct", "grid_gemm"})
    if (lines[0].find(std::string(",") + algo + ",") != std::string::npos) return algo;
  return lines[0];
}

// strided_direct's AVX2 cost rules (strided_direct_plan.h, avx2_weight_rules) take unit-stride
// weight gradients on planes of at most 32 x 32 (mnist2 14 x 14, grouped 28 x 28; fp32, fp16 and
// USE_FP16) and with fewer than 8 input channels and at least 32 outputs (mnist1: 1 -> 32), and
// leave larger planes (resnet3x3, 56 x 56) to grid_direct. The AVX-512 rules prefer it for
// strided convolutions only.
TEST(BenchPlans, StridedDirectWeightRulesFollowTheIsa) {
  if (!acltest::PackedKernelsRun()) GTEST_SKIP() << "no AVX2 or AVX-512 kernels here";
  if (acltest::Avx512Runs()) {  // (what else is planned there is not this test's business)
    for (const char* name : {"c2d_mnist1", "c2d_mnist2", "c2d_grouped", "c2d_resnet3x3"})
      EXPECT_NE(WeightPlan(name, ACL_FLOAT), "strided_direct") << name;
    return;
  }
  EXPECT_EQ(WeightPlan("c2d_mnist2", ACL_FLOAT), "strided_direct");
  EXPECT_EQ(WeightPlan("c2d_grouped", ACL_FLOAT), "strided_direct");
  EXPECT_EQ(WeightPlan("c2d_mnist1", ACL_FLOAT), "strided_direct");
  EXPECT_EQ(WeightPlan("c2d_mnist1", ACL_FLOAT16), "strided_direct");
  EXPECT_EQ(WeightPlan("c2d_first7x7", ACL_FLOAT), "strided_direct");
  EXPECT_EQ(WeightPlan("c2d_mnist2", ACL_FLOAT16), "strided_direct");
  EXPECT_EQ(WeightPlan("c2d_mnist2", ACL_FLOAT, 2), "strided_direct");  // USE_FP16: rounded
  EXPECT_EQ(WeightPlan("c2d_resnet3x3", ACL_FLOAT), "grid_direct");
  EXPECT_EQ(WeightPlan("c2d_resnet3x3", ACL_FLOAT16), "grid_direct");
}

// The chunked runs compute the right values: outputs of another dtype larger than the 8 MiB
// chunk (fp32), with a batch of 3 (one sample per run): dx of a 1x1 and of a depthwise conv
// (backward), y of a 1x1 (forward), against the float64 reference.
TEST(ChunkedOutputs, Bf16MatchReference) {
  using acltest::MakeCase;
  using acltest::MakeGeom;
  for (acltest::ConvCase c :
       {MakeCase(MakeGeom({3, 64, 128, 128}, {8, 64, 1, 1}, {1, 1}, {0, 0}, {1, 1}, 1), "dx1x1", 1),
        MakeCase(MakeGeom({3, 64, 128, 128}, {64, 1, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 64), "dxdw", 2),
        MakeCase(MakeGeom({3, 8, 128, 128}, {64, 8, 1, 1}, {1, 1}, {0, 0}, {1, 1}, 1), "y1x1",
                 3)}) {
    c.x_dtype = c.w_dtype = c.gy_dtype = ACL_BF16;
    EXPECT_TRUE(acltest::CheckConvBackward(c));
    EXPECT_TRUE(acltest::CheckConvForward(c));
  }
}

// Runs cut shorter to keep the bound compute the right values: ct2d_decoder's 16-bit gradients at
// 2 threads, whose fp32 dx runs (forward of the transposed conv) phase 1 cuts from 8 samples to 4
// at tier none (im2col_gemm's scratch), against the float64 reference; elsewhere the plan is the
// one of Workspace16 above.
TEST(ChunkedOutputs, CutToTheBoundMatchReference) {
  const Problem p = BenchProblem("ct2d_decoder", 1);
  for (aclDataType dt : {ACL_FLOAT16, ACL_BF16}) {
    acltest::ConvCase c = acltest::MakeCase(
        acltest::MakeGeom(p.x, p.w, p.stride, p.pad, p.dil, p.groups, p.transposed, p.out_pad),
        "ct2d_decoder", 4);
    c.x_dtype = c.w_dtype = c.gy_dtype = dt;
    bool ok = false;
    tbb::task_arena(2).execute([&] { ok = acltest::CheckConvBackward(c); });
    EXPECT_TRUE(ok) << "dtype " << dt;
  }
}

}  // namespace
