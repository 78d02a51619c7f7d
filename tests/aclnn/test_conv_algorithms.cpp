// Every registered convolution algorithm, forced with ACLNN_CPU_CONV_ALGO (which lifts its cost
// rules and size thresholds), on a sweep of geometries it can compute: backward (all outputs, a
// partial mask, a non-contiguous layout) and forward with bias, against the float64 naive
// reference. The plan lines of ACLNN_CPU_VERBOSE prove the forced algorithm really ran; an
// algorithm that never ran on the sweep fails the test, so no path is left to hand-edited
// thresholds.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "aclnn/aclnn_cpu_conv.h"
#include "aclnn/aclnn_cpu_isa.h"
#include "support/conv_case.h"
#include "support/tbc_case.h"

namespace {

using acltest::ConvCase;
using acltest::Layout;
using acltest::MakeGeom;
using acltest::MakeGeom2dAsym;

struct Algo {
  std::string name, primitive;
  bool runs_here = true;  // its kernels run on this CPU (AVX-512 ones do not everywhere)
};

void PrintTo(const Algo& a, std::ostream* os) {
  *os << a.name << " (" << a.primitive << ")";
}

std::vector<Algo> Registered() {
  std::vector<Algo> out;
  for (int i = 0; i < aclnnCpuConvAlgorithmCount(); ++i)
    out.push_back({aclnnCpuConvAlgorithmName(i), aclnnCpuConvAlgorithmPrimitive(i),
                   aclnnCpuConvAlgorithmRunsHere(i) != 0});
  return out;
}

// Whether this run has the bf16 dot kernels off on a CPU where they can run, so ctest's
// ACLNN_CPU_BF16_DOT=1 run sweeps with them on: the policy changes only bf16 problems
// (engine.cpp: Problem::bf16), so that run already checks every other dtype on the same paths, and
// this one checks bf16 (and plain fp32, which every algorithm serves).
bool OnlyBf16Differs() {
  return !acltest::Bf16DotRuns() && aclnnCpuHasFeature("avx512_bf16") == 1;
}

std::string AlgoName(const ::testing::TestParamInfo<Algo>& info) {
  return info.param.primitive + "_" + info.param.name;
}

using acltest::ScopedEnv;

ConvCase Case(const char* label, naive::ConvGeom g, uint64_t seed) {
  return acltest::MakeCase(g, label, seed);
}

// Larger than the sweeps' shapes: GEMM blocking edges, several grid row blocks, partial tiles of
// the direct kernels (channel counts not multiples of 8, 12 or 16), 3d, dilation, groups, and
// strided_direct's row blocks and long rows.
std::vector<ConvCase> SizedCases() {
  return {
      Case("edges3x3", MakeGeom({2, 20, 19, 23}, {35, 20, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1), 3),
      Case("stride2", MakeGeom({2, 12, 17, 15}, {20, 12, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 1), 4),
      Case("narrow5x5", MakeGeom({2, 12, 14, 14}, {20, 12, 5, 5}, {1, 1}, {2, 2}, {1, 1}, 1), 15),
      Case("stride2_wide", MakeGeom({1, 3, 9, 70}, {8, 3, 7, 7}, {2, 2}, {3, 3}, {1, 1}, 1), 13),
      Case("stride3", MakeGeom({1, 5, 10, 40}, {6, 5, 4, 5}, {3, 3}, {1, 2}, {1, 1}, 1), 14),
      // Strided with rows longer than a weight-kernel call (75 > 64 positions), several row
      // blocks with a short last one, and 5 blocks of 8 output channels (tiles of 3 + 2).
      Case("stride2_blocks", MakeGeom({1, 20, 22, 150}, {36, 20, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 1),
           16),
      // More input channels than a weight-gradient task takes (96): equal channel blocks; 56
      // output channels: partial tiles of every direct kernel (7 blocks of 8, 3.5 vectors of 16).
      Case("deep_stride2", MakeGeom({1, 100, 9, 8}, {56, 100, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 1),
           17),
      // 28 columns at stride 2: grid rows of 8 bf16 pairs (grid_direct's bf16 weight builds two
      // rows a transpose), an odd count of them.
      Case("stride2_w28", MakeGeom({1, 20, 13, 28}, {18, 20, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 1), 18),
      Case("dilated", MakeGeom({1, 16, 21, 20}, {24, 16, 3, 3}, {1, 1}, {2, 2}, {2, 2}, 1), 5),
      Case("grouped", MakeGeom({2, 24, 14, 13}, {36, 8, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 3), 6),
      Case("conv3d",
           MakeGeom({1, 8, 6, 9, 10}, {12, 8, 3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 1), 7),
      // 3d with enough channels that the AVX2 forward kernel sweeps channel chunks outermost
      // (the taps' reach, 1014 columns x 40 channels, beyond 128 KB).
      Case("conv3d_deep",
           MakeGeom({1, 40, 4, 20, 20}, {8, 40, 3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 1), 16),
      Case("conv1d", MakeGeom({2, 16, 70}, {18, 16, 5}, {1}, {2}, {1}, 1), 8),
      Case("wide_pad", MakeGeom({1, 9, 12, 11}, {17, 9, 3, 3}, {1, 1}, {3, 3}, {1, 1}, 1), 9),
      Case("transposed",
           MakeGeom({2, 16, 9, 8}, {16, 12, 4, 4}, {2, 2}, {1, 1}, {1, 1}, 1, true, {0, 0}), 10),
      Case("pointwise", MakeGeom({2, 40, 9, 11}, {24, 40, 1, 1}, {1, 1}, {0, 0}, {1, 1}, 1), 11),
      // More input channels than one weight task takes (grid_direct: 96): equal channel blocks.
      Case("wide_cin", MakeGeom({1, 100, 6, 7}, {20, 100, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1), 17),
      Case("depthwise", MakeGeom({2, 12, 15, 14}, {24, 1, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 12), 12),
  };
}

std::vector<ConvCase> Sweep() {
  std::vector<ConvCase> cases = acltest::RepresentativeCases();
  for (ConvCase& c : SizedCases()) cases.push_back(c);
  return cases;
}

class ConvAlgorithm : public ::testing::TestWithParam<Algo> {};

constexpr int kUseFp16 = 2;  // cubeMathType USE_FP16: fp32 operands rounded to fp16

// c's backward and forward with every operand of dtype dt, under cubeMathType `cube`.
void CheckBothWays(ConvCase c, aclDataType dt, int cube = 0) {
  c.x_dtype = c.w_dtype = c.gy_dtype = dt;
  c.cube = cube;
  EXPECT_TRUE(acltest::CheckConvBackward(c));
  EXPECT_TRUE(acltest::CheckConvForward(c));
}

TEST_P(ConvAlgorithm, ForcedMatchesReferenceAndRuns) {
  const Algo& a = GetParam();
  ScopedEnv force("ACLNN_CPU_CONV_ALGO", a.name);
  ScopedEnv verbose("ACLNN_CPU_VERBOSE", "1");
  const bool only_bf16 = OnlyBf16Differs();
  ::testing::internal::CaptureStderr();
  if (a.name.rfind("tbc_", 0) == 0) {  // the time-major forms serve all primitives of ConvTbc
    struct Dtype {
      aclDataType dt;
      int cube;
    };
    for (Dtype d :
         {Dtype{ACL_FLOAT, 0}, Dtype{ACL_BF16, 0}, Dtype{ACL_FLOAT16, 0}, Dtype{ACL_FLOAT, 2}}) {
      if (only_bf16 && d.dt != ACL_BF16) continue;
      for (Layout layout : {Layout::kContiguous, Layout::kPadded}) {
        EXPECT_TRUE(
            acltest::CheckTbcBackward({naive::TbcGeom{9, 3, 5, 7, 3, 1}, layout, d.dt, d.cube}));
        EXPECT_TRUE(
            acltest::CheckTbcForward({naive::TbcGeom{8, 2, 6, 4, 2, 0}, layout, d.dt, d.cube}));
      }
      // Several tasks of rows, an odd row count and batch, two column blocks with a tail, odd
      // channels (the bf16 pairs' tails).
      const naive::TbcGeom sized{70, 9, 67, 70, 3, 1};
      EXPECT_TRUE(acltest::CheckTbcBackward({sized, Layout::kContiguous, d.dt, d.cube}));
      EXPECT_TRUE(acltest::CheckTbcForward({sized, Layout::kContiguous, d.dt, d.cube}));
    }
  }
  for (ConvCase c : Sweep()) {
    EXPECT_TRUE(acltest::CheckConvBackward(c));
    EXPECT_TRUE(acltest::CheckConvForward(c));
    if (only_bf16) {
      CheckBothWays(c, ACL_BF16);
      continue;
    }
    c.mask = {true, false, true};
    EXPECT_TRUE(acltest::CheckConvBackward(c));
    c.mask = {true, true, true};
    c.layout = Layout::kPadded;
    EXPECT_TRUE(acltest::CheckConvBackward(c));
    c.layout = Layout::kContiguous;
    CheckBothWays(c, ACL_BF16);  // read natively where the CPU can
    // fp16, and fp32 rounded to fp16 (cubeMathType USE_FP16): converted as the algorithms that
    // read sources gather their blocks, by a whole-tensor copy for the others.
    CheckBothWays(c, ACL_FLOAT16);
    CheckBothWays(c, ACL_FLOAT, kUseFp16);
    c.x_dtype = c.w_dtype = c.gy_dtype = ACL_DOUBLE;  // algorithms without fp64 are skipped
    EXPECT_TRUE(acltest::CheckConvBackward(c));
  }
  // Plan lines: "aclnn_cpu_verbose,plan,<api>,<primitive>,<algorithm>,..."; time lines:
  // "aclnn_cpu_verbose,exec,<api>,<primitive>,<algorithm>,<ms> ms".
  const std::string log = ::testing::internal::GetCapturedStderr();
  // An algorithm of several primitives ("all": the time-major forms, "backward": the fused
  // depthwise pass) is named on the plan lines of each primitive it computes.
  const bool several = a.primitive == "all" || a.primitive == "backward";
  const std::string ran = (several ? "" : "," + a.primitive) + "," + a.name + ",";
  const std::string isa = ",isa=" + acltest::IsaInForce() + ",";
  const size_t count = acltest::VerbosePlanLines(log, ran).size();
  int timed = 0;
  for (const std::string& line : acltest::VerboseLines(log, "exec", ran))
    timed += line.size() > 3 && line.compare(line.size() - 3, 3, " ms") == 0;
  for (const std::string& line : acltest::VerbosePlanLines(log)) {
    EXPECT_NE(line.find(isa), std::string::npos) << line << " (expected" << isa << ")";
    // The blocking the algorithm chose, e.g. "blocking=cblock:64 rows:16 cols:1 ranges:2
    // chunk:0": every field a non-negative count, cblock/cols/ranges at least 1 (ConvTbc's
    // per-tap GEMMs: "blocking=per-tap-gemms"; the fused depthwise pass:
    // "blocking=per-channel-tasks").
    long cblock = -1, rows = -1, cols = -1, ranges = -1, chunk = -1;
    const size_t b = line.find(",blocking=");
    ASSERT_NE(b, std::string::npos) << line;
    const bool tbc = line.find(",tbc_") != std::string::npos;
    const bool tbc_amx = line.find(",tbc_amx,") != std::string::npos;
    const bool fused = line.find(",depthwise_fused,") != std::string::npos;
    // (tbc_amx: one tile GEMM per task with the taps concatenated, "blocking=amx-tap-panels".)
    EXPECT_EQ(tbc && !tbc_amx, line.find(",blocking=per-tap-gemms,") != std::string::npos) << line;
    EXPECT_EQ(tbc_amx, line.find(",blocking=amx-tap-panels,") != std::string::npos) << line;
    EXPECT_EQ(fused, line.find(",blocking=per-channel-tasks,") != std::string::npos) << line;
    if (!tbc && !fused) {
      ASSERT_EQ(std::sscanf(line.c_str() + b,
                            ",blocking=cblock:%ld rows:%ld cols:%ld ranges:%ld chunk:%ld", &cblock,
                            &rows, &cols, &ranges, &chunk),
                5)
          << line;
    }
    EXPECT_TRUE(tbc || fused ||
                (cblock >= 1 && rows >= 0 && cols >= 1 && ranges >= 1 && chunk >= 0))
        << line;
    // The arithmetic it runs: bf16 pairs only where the dot kernels or the AMX tiles run (the
    // bf16_dot and bf16_amx policies; the AMX tiles always for amx_gemm), and the plan line says
    // which way the policies went.
    const bool f32 = line.find(" f32,threads=") != std::string::npos,
               f64 = line.find(" f64,threads=") != std::string::npos,
               bf16 = line.find(" bf16,threads=") != std::string::npos;
    EXPECT_EQ(f32 + f64 + bf16, 1) << line;
    if (bf16) {
      EXPECT_TRUE(acltest::Bf16NativeRuns()) << line;
    }
    if (line.find(",amx_gemm,") != std::string::npos || tbc_amx) {
      EXPECT_TRUE(bf16) << line;
    }
    EXPECT_NE(line.find(acltest::Bf16DotRuns() ? ",bf16_dot=on," : ",bf16_dot=off,"),
              std::string::npos)
        << line;
    EXPECT_NE(line.find(",amx=" + acltest::AmxTilesInForce() + ","), std::string::npos) << line;
  }
  if (a.runs_here) {
    EXPECT_GT(count, 0u) << a.name << " (" << a.primitive << ") never ran on the sweep";
    EXPECT_GT(timed, 0) << a.name << " (" << a.primitive << ") ran without a verbose time line";
  } else {  // forced where its kernels cannot run (a wider ISA; bf16-only algorithms: the dot
            // kernels, off with ACLNN_CPU_BF16_DOT=0, or the AMX tiles): never chosen, and the
            // results stay right
    EXPECT_EQ(count, 0u) << a.name << " (" << a.primitive << ") ran without the ISA it needs";
    std::printf(
        "note: %s (%s) needs a wider ISA than %s, the bf16 dot kernels or AMX; checked that "
        "it never ran\n",
        a.name.c_str(), a.primitive.c_str(), acltest::IsaInForce().c_str());
  }
}

INSTANTIATE_TEST_SUITE_P(Conv, ConvAlgorithm, ::testing::ValuesIn(Registered()), AlgoName);

// im2col_gemm's weight gradient converts a channel block of 16-bit (or USE_FP16) x once per
// sample where that takes at most 2 MiB, and gathers straight from the source beyond: one
// channel of 760 x 760 (2.2 MiB as fp32) takes the second way, which no sweep shape reaches.
TEST(ConvAlgorithmPaths, Im2colWeightGathersLargePlanesFromTheSource) {
  ScopedEnv force("ACLNN_CPU_CONV_ALGO", "im2col_gemm");
  ScopedEnv verbose("ACLNN_CPU_VERBOSE", "1");
  ConvCase c =
      Case("large_planes", MakeGeom({1, 1, 760, 760}, {3, 1, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 1), 18);
  ::testing::internal::CaptureStderr();
  c.x_dtype = c.w_dtype = c.gy_dtype = ACL_FLOAT16;
  EXPECT_TRUE(acltest::CheckConvBackward(c));
  c.x_dtype = c.w_dtype = c.gy_dtype = ACL_FLOAT;
  c.cube = kUseFp16;
  EXPECT_TRUE(acltest::CheckConvBackward(c));
  const std::string log = ::testing::internal::GetCapturedStderr();
  size_t runs = 0;
  for (size_t at = log.find(",backward_weight,im2col_gemm,"); at != std::string::npos;
       at = log.find(",backward_weight,im2col_gemm,", at + 1))
    ++runs;
  EXPECT_GE(runs, 2u) << log.substr(0, 2000);
}

// A converting forward whose input is small beside its output (a first layer: 1 or 3 channels in,
// 32 out) gathers its panels from a whole fp32 copy of x: implicit_gemm, as fp32 does, rather
// than the chunked lowering that converts each element once per tap. Where our packed GEMM runs,
// bf16, fp16 and USE_FP16 forwards of the main job's first layer plan implicit_gemm and match the
// reference; a wide input (32 channels in, 32 out) keeps the chunked lowering.
TEST(ConvAlgorithmPaths, ImplicitGemmForwardTakesSmallConvertedInputs) {
  if (!acltest::PackedKernelsRun()) GTEST_SKIP() << "implicit_gemm needs our packed GEMM";
  ScopedEnv verbose("ACLNN_CPU_VERBOSE", "1");
  struct Form {
    aclDataType dt;
    int cube;
  };
  for (Form f : {Form{ACL_BF16, 0}, Form{ACL_FLOAT16, 0}, Form{ACL_FLOAT, kUseFp16}}) {
    ConvCase first = Case("first_layer",
                          MakeGeom({48, 1, 28, 28}, {32, 1, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1), 40);
    ConvCase wide = Case("wide_input",
                         MakeGeom({4, 32, 14, 14}, {32, 32, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1), 41);
    for (ConvCase* c : {&first, &wide}) {
      c->x_dtype = c->w_dtype = c->gy_dtype = f.dt;
      c->cube = f.cube;
    }
    ::testing::internal::CaptureStderr();
    EXPECT_TRUE(acltest::CheckConvForward(first));
    const std::string first_log = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(first_log.find(",forward,implicit_gemm,"), std::string::npos)
        << "dtype " << f.dt << " cube " << f.cube << ":\n"
        << first_log.substr(0, 2000);
    ::testing::internal::CaptureStderr();
    EXPECT_TRUE(acltest::CheckConvForward(wide));
    const std::string wide_log = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(wide_log.find(",forward,implicit_gemm,"), std::string::npos)
        << "dtype " << f.dt << " cube " << f.cube << ":\n"
        << wide_log.substr(0, 2000);
  }
}

// cl_direct's forward of stride 2 along rows (its taps split by residue, each walk with its own
// edge columns) and of any stride along the outer dims, on the shapes the sweep leaves out: row
// kernels of 1 to 7 taps (residues of 1 to 4 taps, and none: K = 1), rows longer than a tile,
// 16-wide tiles, asymmetric padding, padding wider than the kernel, groups, partial channel
// blocks, 1d/2d/3d, stride 2 with dilation 2, and the data gradient of transposed convolutions
// (which is this forward). Every forward must run cl_direct (with AVX-512; under
// ACLNN_CPU_MAX_ISA=avx2 only those of unit stride and dilation along rows, cl_direct_avx2.cpp),
// and the strided ones must be among them.
TEST(ConvAlgorithmPaths, ClDirectForwardStrided) {
  ScopedEnv force("ACLNN_CPU_CONV_ALGO", "cl_direct");
  ScopedEnv verbose("ACLNN_CPU_VERBOSE", "1");
  const std::vector<ConvCase> cases = {
      Case("s2_1d_k5", MakeGeom({2, 20, 70}, {18, 20, 5}, {2}, {2}, {1}, 1), 30),
      Case("s2_1d_k1", MakeGeom({1, 7, 33}, {17, 7, 1}, {2}, {0}, {1}, 1), 31),
      Case("s2_1d_k2", MakeGeom({1, 5, 40}, {9, 5, 2}, {2}, {1}, {1}, 1), 32),
      Case("s2_asym",
           MakeGeom2dAsym({2, 5, 13, 31}, {20, 5, 3, 4}, {2, 2}, {1, 0, 2, 1}, {1, 1}, 1), 33),
      Case("s32_g2_k7", MakeGeom({1, 6, 11, 40}, {34, 3, 3, 7}, {3, 2}, {1, 3}, {1, 1}, 2), 34),
      Case("s2_wide_pad", MakeGeom({1, 9, 12, 11}, {17, 9, 3, 3}, {2, 2}, {3, 3}, {1, 1}, 1), 35),
      Case("s2_d2", MakeGeom({1, 6, 9, 30}, {10, 6, 3, 3}, {2, 2}, {2, 2}, {2, 2}, 1), 36),
      Case("s31_outer", MakeGeom({1, 4, 10, 12}, {5, 4, 3, 3}, {3, 1}, {1, 1}, {1, 1}, 1), 37),
      // The widest tiles: rows of 15 (unit stride along rows) and 15 (stride 2) outputs, one tile.
      Case("s21_row15", MakeGeom({1, 5, 9, 15}, {20, 5, 3, 3}, {2, 1}, {1, 1}, {1, 1}, 1), 42),
      Case("s2_1d_row15", MakeGeom({2, 6, 29}, {18, 6, 3}, {2}, {1}, {1}, 1), 43),
      Case("s2_3d_k6",
           MakeGeom({1, 3, 5, 6, 37}, {20, 3, 2, 2, 6}, {2, 1, 2}, {0, 1, 2}, {1, 1, 1}, 1), 38),
      // Transposed: the data gradient runs the forward of stride 2 (16-wide rows: one tile).
      Case("t2d_k4s2p1_row16",
           MakeGeom({2, 40, 5, 16}, {40, 9, 4, 4}, {2, 2}, {1, 1}, {1, 1}, 1, true), 39),
      Case("t3d_k3s2op1",
           MakeGeom({1, 8, 3, 4, 9}, {8, 6, 3, 3, 3}, {2, 2, 2}, {1, 1, 1}, {1, 1, 1}, 1, true,
                    {1, 1, 1}),
           40),
      Case("t1d_g2_k7s2", MakeGeom({2, 10, 19}, {10, 3, 7}, {2}, {3}, {1}, 2, true, {1}), 41),
  };
  ::testing::internal::CaptureStderr();
  for (ConvCase c : cases) {
    EXPECT_TRUE(acltest::CheckConvBackward(c));  // transposed: dx is the strided forward
    EXPECT_TRUE(acltest::CheckConvForward(c));
    c.mask = {true, false, false};
    CheckBothWays(c, ACL_FLOAT16);  // converted per (sample, group)
    CheckBothWays(c, ACL_BF16);
    CheckBothWays(c, ACL_FLOAT, kUseFp16);
  }
  const std::string log = ::testing::internal::GetCapturedStderr();
  const bool avx512 = acltest::Avx512Runs(), avx2 = acltest::PackedKernelsRun();
  int forwards = 0, strided = 0;
  for (const std::string& line : acltest::VerbosePlanLines(log, ",forward,")) {
    ++forwards;
    const bool cl = line.find(",forward,cl_direct,") != std::string::npos;
    // " s<d>x<h>x<w> d<d>x<h>x<w> ": the strides and dilations; AVX2 runs unit ones along rows.
    const size_t s = line.find(" s"), d = line.find(" d", s), p = line.find(" p", d);
    ASSERT_NE(p, std::string::npos) << line;
    const std::string strides = line.substr(s, d - s), dilations = line.substr(d, p - d);
    const bool unit_rows = strides.ends_with("x1") && dilations.ends_with("x1");
    EXPECT_EQ(cl, avx512 || (avx2 && unit_rows)) << line;
    strided += cl && strides != " s1x1x1";
  }
  EXPECT_GT(forwards, 0);
  // AVX2: s31_outer (strided along the outer dims only) in each of its checks; without either
  // (tier none) cl_direct never runs.
  EXPECT_GE(strided, avx512 ? 4 * int(cases.size()) : avx2 ? 4 : 0) << log.substr(0, 3000);
}

// The list the diagnostics give is every path the planner can take, the time-major forms of
// ConvTbc and the fused depthwise pass included (each under its stable name and the primitives
// it computes), and whether each runs here is the CPU module's answer for its needs.
TEST(ConvAlgorithmRegistry, ListsEveryPathWithItsPrimitivesAndWhereItRuns) {
  const std::vector<Algo> all = Registered();
  ASSERT_EQ(static_cast<int>(all.size()), aclnnCpuConvAlgorithmCount());
  struct Expected {
    const char* name;
    const char* primitive;
    bool runs_here;
  };
  for (Expected e : {Expected{"tbc_gemm", "all", true}, Expected{"tbc_convert", "all", true},
                     Expected{"tbc_bf16", "all", acltest::Bf16DotRuns()},
                     Expected{"tbc_amx", "all", acltest::AmxTilesInForce() != "off"},
                     Expected{"depthwise_fused", "backward", true}}) {
    int found = 0;
    for (const Algo& a : all) {
      if (a.name != e.name) continue;
      ++found;
      EXPECT_EQ(a.primitive, e.primitive) << e.name;
      EXPECT_EQ(a.runs_here, e.runs_here) << e.name << " on tier " << acltest::IsaInForce();
    }
    EXPECT_EQ(found, 1) << e.name << " is not listed once";
  }
  for (int i = 0; i < aclnnCpuConvAlgorithmCount(); ++i) {
    const std::string prim = aclnnCpuConvAlgorithmPrimitive(i);
    EXPECT_TRUE(prim == "forward" || prim == "backward_data" || prim == "backward_weight" ||
                prim == "all" || prim == "backward")
        << aclnnCpuConvAlgorithmName(i) << ": " << prim;
  }
  // Each primitive's list ends in one that applies to everything and runs everywhere.
  for (const char* prim : {"forward", "backward_data", "backward_weight"}) {
    bool any = false;
    for (const Algo& a : all) any |= a.primitive == prim && a.runs_here;
    EXPECT_TRUE(any) << "no " << prim << " algorithm runs here";
  }
  EXPECT_EQ(aclnnCpuConvAlgorithmRunsHere(-1), 0);
  EXPECT_EQ(aclnnCpuConvAlgorithmRunsHere(aclnnCpuConvAlgorithmCount()), 0);
  EXPECT_EQ(aclnnCpuConvAlgorithmPrimitive(-1), nullptr);
}

TEST(ConvAlgorithmRegistry, NamesAreListedOnceEach) {
  const std::vector<Algo> all = Registered();
  ASSERT_GE(all.size(), 2u);
  for (size_t i = 0; i < all.size(); ++i)
    for (size_t j = i + 1; j < all.size(); ++j)
      EXPECT_FALSE(all[i].name == all[j].name && all[i].primitive == all[j].primitive)
          << all[i].name << " is registered twice for " << all[i].primitive;
  EXPECT_EQ(aclnnCpuConvAlgorithmName(-1), nullptr);
  EXPECT_EQ(aclnnCpuConvAlgorithmName(aclnnCpuConvAlgorithmCount()), nullptr);
  EXPECT_EQ(aclnnCpuConvAlgorithmPrimitive(aclnnCpuConvAlgorithmCount()), nullptr);
}

}  // namespace
