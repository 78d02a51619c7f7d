// Coverage for the fp32 fast paths of the conv engine that the sweeps' small shapes never reach:
// the packed AVX-512 GEMM (runs only above ~4M multiply-adds; exercised here across its blocking
// edges: M not a multiple of 8 and > 128, N past the 480-column block, K past the 256 block), the
// direct depthwise kernel, and the TBC path of per-tap GEMMs on the [T, B, C] buffers themselves.
// Every case is checked against the float64 naive reference (backward, forward, and a bitwise
// determinism rerun), contiguous and on non-contiguous layouts.
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "aclnnop/aclnn_convolution.h"
#include "aclnnop/aclnn_convolution_backward.h"
#include "support/acl_test_util.h"
#include "support/compare.h"
#include "support/conv_case.h"
#include "support/naive_conv.h"
#include "support/tbc_case.h"

namespace {

using acltest::ConvCase;
using acltest::Layout;
using acltest::MakeGeom;

ConvCase Case(const char* label, naive::ConvGeom g) {
  ConvCase c;
  c.geom = std::move(g);
  c.label = label;
  return c;
}

std::vector<ConvCase> FastPathCases() {
  return {
      // 3x3: M = C_out = 68 (edge rows), K = 40*9 = 360 (two K blocks), S_out = 1156 columns.
      Case("gemm3x3_edges", MakeGeom({2, 40, 34, 34}, {68, 40, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1)),
      // C_out = 136 > 128 (two M blocks), stride 2.
      Case("gemm_s2_wide", MakeGeom({2, 24, 31, 29}, {136, 24, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 1)),
      // Pointwise: pure GEMM on the input, C_in = 260 (K blocks / edge panels on both sides).
      Case("pointwise", MakeGeom({3, 260, 23, 21}, {72, 260, 1, 1}, {1, 1}, {0, 0}, {1, 1}, 1)),
      Case("dilated", MakeGeom({2, 32, 40, 38}, {48, 32, 3, 3}, {1, 1}, {2, 2}, {2, 2}, 1)),
      Case("grouped", MakeGeom({2, 64, 30, 30}, {64, 16, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 4)),
      Case("conv1d", MakeGeom({3, 32, 1500}, {40, 32, 9}, {1}, {4}, {1}, 1)),
      Case("conv3d",
           MakeGeom({2, 16, 8, 20, 22}, {24, 16, 3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 1)),
      Case("first_layer", MakeGeom({2, 3, 96, 90}, {32, 3, 7, 7}, {2, 2}, {3, 3}, {1, 1}, 1)),
      Case("transposed2d",
           MakeGeom({4, 48, 17, 15}, {48, 24, 4, 4}, {2, 2}, {1, 1}, {1, 1}, 1, true, {0, 0})),
      Case("transposed3d", MakeGeom({2, 24, 6, 12, 11}, {24, 16, 3, 3, 3}, {2, 2, 2}, {1, 1, 1},
                                    {1, 1, 1}, 1, true, {1, 1, 1})),
      // Unit stride on the padded grid (padded_grid.h): 3d (grid rows between the output
      // planes dropped), and padding beyond the kernel's reach (the flipped data gradient's
      // grid then crops its input).
      Case("grid3d",
           MakeGeom({2, 16, 6, 30, 30}, {16, 16, 3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 1)),
      Case("grid_wide_pad", MakeGeom({2, 32, 30, 30}, {32, 32, 3, 3}, {1, 1}, {3, 3}, {1, 1}, 1)),
      // Depthwise (direct kernel): stride 1 and 2, dilation, channel multiplier 2.
      Case("depthwise", MakeGeom({4, 48, 45, 47}, {48, 1, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 48)),
      Case("depthwise_s2", MakeGeom({4, 40, 45, 47}, {40, 1, 5, 5}, {2, 2}, {2, 2}, {1, 1}, 40)),
      Case("depthwise_dil", MakeGeom({3, 36, 40, 41}, {36, 1, 3, 3}, {1, 1}, {2, 2}, {2, 2}, 36)),
      Case("depthwise_mult2", MakeGeom({3, 32, 40, 41}, {64, 1, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 32)),
      Case("depthwise1d", MakeGeom({4, 64, 3000}, {64, 1, 7}, {1}, {3}, {1}, 64)),
      // One input channel (MNIST's first layer) and rows of 1-4 vectors, padding wider than the
      // kernel reach on one side: the register-accumulated unit-stride data gradient.
      Case("single_channel", MakeGeom({3, 1, 28, 28}, {32, 1, 5, 5}, {1, 1}, {2, 2}, {1, 1}, 1)),
      Case("single_channel_wide", MakeGeom({2, 1, 9, 64}, {8, 1, 3, 7}, {1, 1}, {1, 4}, {1, 1}, 1)),
      Case("depthwise_narrow", MakeGeom({2, 8, 11, 5}, {8, 1, 3, 3}, {1, 1}, {0, 2}, {1, 2}, 8)),
      Case("depthwise3d",
           MakeGeom({2, 6, 5, 9, 37}, {12, 1, 3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 2}, 6)),
  };
}

std::string Name(const ::testing::TestParamInfo<ConvCase>& info) {
  return info.param.label;
}

class FastPath : public ::testing::TestWithParam<ConvCase> {};

TEST_P(FastPath, BackwardMatchesReference) {
  EXPECT_TRUE(acltest::CheckConvBackward(GetParam()));
}

TEST_P(FastPath, ForwardMatchesReference) {
  EXPECT_TRUE(acltest::CheckConvForward(GetParam()));
}

TEST_P(FastPath, BackwardNonContiguous) {
  ConvCase c = GetParam();
  c.layout = Layout::kPadded;
  EXPECT_TRUE(acltest::CheckConvBackward(c));
}

TEST_P(FastPath, BackwardPartialMask) {
  ConvCase c = GetParam();
  c.mask = {false, true, false};
  EXPECT_TRUE(acltest::CheckConvBackward(c));
  c.mask = {true, false, true};
  EXPECT_TRUE(acltest::CheckConvBackward(c));
}

TEST_P(FastPath, BackwardDeterministic) {
  EXPECT_TRUE(acltest::CheckConvBackwardDeterministic(GetParam()));
}

INSTANTIATE_TEST_SUITE_P(Conv, FastPath, ::testing::ValuesIn(FastPathCases()), Name);

// ConvTbc at sizes where the per-tap GEMM path runs, contiguous and padded layouts.
TEST(FastPathTbc, ForwardPerTapGemmsMatchReference) {
  for (Layout layout : {Layout::kContiguous, Layout::kPadded}) {
    EXPECT_TRUE(acltest::CheckTbcForward({naive::TbcGeom{97, 9, 72, 68, 3, 1}, layout}));
    EXPECT_TRUE(acltest::CheckTbcForward({naive::TbcGeom{50, 8, 64, 136, 4, 0}, layout}));
    // More input channels than one GEMM depth block (256): the pre-packed taps' second block.
    EXPECT_TRUE(acltest::CheckTbcForward({naive::TbcGeom{20, 4, 300, 70, 3, 1}, layout}));
    // Batches of whole 8-row panels: each task packs its source rows once for all taps
    // (several tasks, the last one short; then two GEMM depth blocks of those rows).
    EXPECT_TRUE(acltest::CheckTbcForward({naive::TbcGeom{150, 8, 40, 72, 3, 1}, layout}));
    EXPECT_TRUE(acltest::CheckTbcForward({naive::TbcGeom{70, 16, 300, 24, 5, 2}, layout}));
  }
}

// aclnnConvolution(transposed) on time-major views ([T, B, C] storage seen as [B, C, T], weight
// [K, C_out, C_in] seen as [C_in, C_out, K]), which qualify for the per-tap GEMM path: the output
// must include the bias (it was once dropped there).
TEST(FastPathTbc, TransposedForwardOnTimeMajorViewsAddsBias) {
  using acltest::TestTensor;
  const int64_t T = 6, B = 2, Ci = 3, Co = 2, K = 3;
  const int64_t T_out = T + K - 1;
  TestTensor x({T, B, Ci}, ACL_FLOAT, Layout::kContiguous, 0, ACL_FORMAT_ND);
  TestTensor w({K, Co, Ci}, ACL_FLOAT, Layout::kContiguous, 0, ACL_FORMAT_ND);
  TestTensor b({Co}, ACL_FLOAT, Layout::kContiguous, 0, ACL_FORMAT_ND);
  acltest::Rng rng(5);
  x.Fill(rng.Uniform(x.numel()));
  w.Fill(rng.Uniform(w.numel()));
  b.Fill(rng.Uniform(b.numel()));
  TestTensor y =
      TestTensor::Output({T_out, B, Co}, ACL_FLOAT, Layout::kContiguous, 0, ACL_FORMAT_ND);
  auto xv = x.View({B, Ci, T}, {Ci, 1, B * Ci}, 0, ACL_FORMAT_NCL);
  auto wv = w.View({Ci, Co, K}, {1, Ci, Co * Ci}, 0, ACL_FORMAT_NCL);
  auto yv = y.View({B, Co, T_out}, {Co, 1, B * Co}, 0, ACL_FORMAT_NCL);
  auto stride = acltest::MakeIntArray({1}), pad = acltest::MakeIntArray({0}),
       dil = acltest::MakeIntArray({1}), opad = acltest::MakeIntArray({0});
  acltest::CallResult r = acltest::RunTwoPhase(
      [&](uint64_t* ws, aclOpExecutor** ex) {
        return aclnnConvolutionGetWorkspaceSize(xv.get(), wv.get(), b.get(), stride.get(),
                                                pad.get(), dil.get(), true, opad.get(), 1, yv.get(),
                                                0, ws, ex);
      },
      aclnnConvolution);
  ASSERT_TRUE(r.ok()) << r.Describe();
  // The reference takes logical row-major [B, Ci, T] input and [Ci, Co, K] weight.
  std::vector<double> xr(x.numel()), wr(w.numel());
  for (int64_t t = 0; t < T; ++t)
    for (int64_t n = 0; n < B; ++n)
      for (int64_t c = 0; c < Ci; ++c) xr[(n * Ci + c) * T + t] = x.values()[(t * B + n) * Ci + c];
  for (int64_t k = 0; k < K; ++k)
    for (int64_t o = 0; o < Co; ++o)
      for (int64_t c = 0; c < Ci; ++c) wr[(c * Co + o) * K + k] = w.values()[(k * Co + o) * Ci + c];
  const naive::ConvGeom g = MakeGeom({B, Ci, T}, {Ci, Co, K}, {1}, {0}, {1}, 1, true, {0});
  const naive::Result ref = naive::ConvForward(g, xr, wr, b.values());
  std::vector<double> got(y.numel());
  const std::vector<double> stored = y.Read();  // [T_out, B, Co]
  for (int64_t t = 0; t < T_out; ++t)
    for (int64_t n = 0; n < B; ++n)
      for (int64_t o = 0; o < Co; ++o) got[(n * Co + o) * T_out + t] = stored[(t * B + n) * Co + o];
  EXPECT_TRUE(acltest::CompareToReference("output", got, ref, {B, Co, T_out},
                                          acltest::ToleranceFor(ACL_FLOAT, ACL_FLOAT)));
}

// The 16-bit and rounded forms (tbc_bf16 where the bf16 dot kernels run, tbc_convert for fp16,
// USE_FP16 and HF32, tbc_gemm for USE_FP16 where our packed GEMM rounds as it packs): several row
// tasks, column blocks with tails, odd channels (the bf16 pairs' tails), odd batches (odd tap
// shifts and an odd last row in the weight gradient's row pairs), a batch wider than one packing
// span, and a layout that is not time-major (the conv1d path).
TEST(FastPathTbc, SixteenBitFormsMatchReference) {
  struct Dtype {
    aclDataType dt;
    int cube;
  };
  const naive::TbcGeom geoms[] = {{97, 9, 72, 68, 3, 1},  {60, 5, 130, 40, 5, 2},
                                  {50, 8, 64, 136, 4, 0}, {3, 300, 17, 33, 2, 1},
                                  {40, 7, 33, 9, 4, 2},   {30, 1, 16, 16, 3, 1}};
  for (Dtype d :
       {Dtype{ACL_BF16, 0}, Dtype{ACL_FLOAT16, 0}, Dtype{ACL_FLOAT, 2}, Dtype{ACL_FLOAT, 1}}) {
    EXPECT_TRUE(acltest::CheckTbcBackward({geoms[1], Layout::kPermuted, d.dt, d.cube}));
    // As chosen (the bf16 kernels from ~4M multiply-adds), then forced at every size.
    EXPECT_TRUE(acltest::CheckTbcBackward({geoms[0], Layout::kContiguous, d.dt, d.cube}));
    acltest::ScopedEnv force("ACLNN_CPU_CONV_ALGO", "tbc_bf16,tbc_convert");
    for (const naive::TbcGeom& g : geoms) {
      EXPECT_TRUE(acltest::CheckTbcBackward({g, Layout::kContiguous, d.dt, d.cube}));
      EXPECT_TRUE(acltest::CheckTbcForward({g, Layout::kContiguous, d.dt, d.cube}));
    }
  }
  // USE_FP16 on tbc_gemm: the operands rounded as the GEMM packs them (taps, source rows, x and dy
  // of the weight gradient), at every size.
  if (!acltest::PackedKernelsRun()) return;
  acltest::ScopedEnv force("ACLNN_CPU_CONV_ALGO", "tbc_gemm");
  for (const naive::TbcGeom& g : geoms) {
    EXPECT_TRUE(acltest::CheckTbcBackward({g, Layout::kContiguous, ACL_FLOAT, 2}));
    EXPECT_TRUE(acltest::CheckTbcForward({g, Layout::kContiguous, ACL_FLOAT, 2}));
  }
}

// The algorithms the plan lines of c's backward name (checked against the reference).
std::set<std::string> TbcPlanAlgorithms(const acltest::TbcCase& c) {
  acltest::ScopedEnv verbose("ACLNN_CPU_VERBOSE", "1");
  ::testing::internal::CaptureStderr();
  EXPECT_TRUE(acltest::CheckTbcBackward(c));
  std::set<std::string> names;
  // "aclnn_cpu_verbose,plan,<api>,<primitive>,<algorithm>,..."
  for (const std::string& line :
       acltest::VerbosePlanLines(::testing::internal::GetCapturedStderr())) {
    std::istringstream fields(line);
    std::string f;
    for (int i = 0; i < 5; ++i) std::getline(fields, f, ',');
    names.insert(f);
  }
  return names;
}

std::string Joined(const std::set<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += n + " ";
  return s;
}

// The time-major forms are registered algorithms (scope "all") that the planner picks by their
// rules: tbc_gemm for fp32 views (USE_FP16 too where our packed GEMM runs); tbc_amx for bf16 at
// every size where the AMX tiles run; tbc_bf16 for bf16 from ~4M multiply-adds where the dot
// kernels run; tbc_convert for the other float forms (at every tier: OpenBLAS at tier none, where
// it also takes USE_FP16); none for views
// that are not time-major, and none while ACLNN_CPU_CONV_ALGO forces another algorithm (which then
// runs on the time-major views).
TEST(FastPathTbc, PlannerPicksTheFormsByTheirRules) {
  using Names = std::set<std::string>;
  const naive::TbcGeom big{97, 9, 72, 68, 3, 1}, small{9, 3, 5, 7, 3, 1};
  const bool packed = acltest::PackedKernelsRun(), dot = acltest::Bf16DotRuns(),
             amx = acltest::AmxTilesInForce() != "off";
  auto no_form = [](const Names& n) {
    for (const std::string& a : n)
      if (a.rfind("tbc_", 0) == 0) return false;
    return !n.empty();
  };
  EXPECT_EQ(TbcPlanAlgorithms({big, Layout::kContiguous}), Names{"tbc_gemm"});
  EXPECT_EQ(TbcPlanAlgorithms({small, Layout::kContiguous}), Names{"tbc_gemm"});
  const Names permuted = TbcPlanAlgorithms({big, Layout::kPermuted});
  EXPECT_TRUE(no_form(permuted)) << Joined(permuted);
  for (acltest::TbcCase c : {acltest::TbcCase{small, Layout::kContiguous, ACL_FLOAT16},
                             acltest::TbcCase{big, Layout::kContiguous, ACL_FLOAT, 1}}) {
    const Names got = TbcPlanAlgorithms(c);
    EXPECT_EQ(got, Names{"tbc_convert"}) << Joined(got);
  }
  for (const naive::TbcGeom& g : {big, small}) {  // USE_FP16: rounded as our GEMM packs
    const Names got = TbcPlanAlgorithms({g, Layout::kContiguous, ACL_FLOAT, 2});
    EXPECT_EQ(got, Names{packed ? "tbc_gemm" : "tbc_convert"}) << Joined(got);
  }
  const Names bf16_big = TbcPlanAlgorithms({big, Layout::kContiguous, ACL_BF16});
  EXPECT_EQ(bf16_big, Names{amx   ? "tbc_amx"
                            : dot ? "tbc_bf16"
                                  : "tbc_convert"})
      << Joined(bf16_big);
  const Names bf16_small = TbcPlanAlgorithms({small, Layout::kContiguous, ACL_BF16});
  EXPECT_EQ(bf16_small, Names{amx ? "tbc_amx" : "tbc_convert"}) << Joined(bf16_small);
  acltest::ScopedEnv force("ACLNN_CPU_CONV_ALGO", "im2col_gemm");
  const Names forced = TbcPlanAlgorithms({big, Layout::kContiguous});
  EXPECT_TRUE(no_form(forced) && forced.count("im2col_gemm") == 1) << Joined(forced);
}

TEST(FastPathTbc, PerTapGemmsMatchReference) {
  for (Layout layout : {Layout::kContiguous, Layout::kPadded, Layout::kPermuted}) {
    EXPECT_TRUE(acltest::CheckTbcBackward({naive::TbcGeom{97, 9, 72, 68, 3, 1}, layout}));
    EXPECT_TRUE(acltest::CheckTbcBackward({naive::TbcGeom{60, 5, 130, 40, 5, 2}, layout}));
    EXPECT_TRUE(acltest::CheckTbcBackward({naive::TbcGeom{50, 8, 64, 136, 4, 0}, layout}));
    EXPECT_TRUE(acltest::CheckTbcBackward({naive::TbcGeom{20, 4, 70, 300, 3, 1}, layout}));
    // Batches of whole 8-row panels (dy's rows packed once per task for all taps).
    EXPECT_TRUE(acltest::CheckTbcBackward({naive::TbcGeom{150, 8, 40, 72, 3, 1}, layout}));
    EXPECT_TRUE(acltest::CheckTbcBackward({naive::TbcGeom{70, 16, 24, 300, 5, 2}, layout}));
  }
}

}  // namespace

// Found by the C-API fuzzer: a 3d transposed conv whose D/H/W dims are 1 except time looked
// time-major to the tbc_gemm fast path, which ignored a leading pad in H (the one output then
// lies in the padding and gets nothing). The reference says 0 there; all variants must agree.
TEST(ConvFastPath, UnitDimsWithALeadingPadAreNotTimeMajor) {
  for (bool transposed : {true, false}) {
    for (int64_t t : {1, 6}) {
      acltest::ConvCase c = acltest::MakeCase(
          acltest::MakeGeom({2, 3, 1, 1, t}, {transposed ? 3 : 4, transposed ? 4 : 3, 1, 1, 1},
                            {1, 3, 1}, {0, 1, 0}, {1, 1, 1}, 1, transposed,
                            transposed ? std::vector<int64_t>{0, 2, 0} : std::vector<int64_t>{}),
          "pad_unit_dims", 3);
      // Permuted layouts for several seeds: some store time outermost and channels innermost,
      // the layout the time-major path takes.
      c.layout = acltest::Layout::kPermuted;
      for (uint64_t seed = 1; seed <= 12; ++seed) {
        c.seed = seed;
        EXPECT_TRUE(acltest::CheckConvForward(c));
        EXPECT_TRUE(acltest::CheckConvBackward(c));
      }
    }
  }
}
