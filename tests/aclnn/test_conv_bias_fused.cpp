// gradBias summed inside the weight gradient (Blocking::sums_bias): grid_direct on AVX-512 adds dy
// into per-range double sums as its fp32 run transposes dy for the kernel, its bf16 run as it
// builds its dy pairs; strided_direct on AVX2 sums each transposed dy block; pointwise_gemm (fp32
// runs, any ISA) sums each dy block just before its GEMM reads it. The engine then skips its own
// pass over dy (channel_sum). The plan line of backward_weight says "gradBias summed in this pass".
//
// These tests force grid_direct (ACLNN_CPU_CONV_ALGO) on shapes that reach every part of that
// sum: output channels per group not a multiple of 16 (the masked tail of the last vector),
// several batch ranges (ranges summed in order: 3 and 4 threads on a batch of a few samples), two
// input-channel blocks (only the first block's tasks sum), groups, stride 2, dilation, 3d, and
// blocks of one grid row (ACLNN_CPU_SMALL_BLOCKS). gradBias must match the float64 reference
// (fp32: within 1e-6 of the sum of |dy|, tighter than the sweeps' tolerance), the plan lines
// must say fused where the kernels sum it and must not where they cannot (AVX2, another weight
// algorithm; HF32 or USE_FP16-rounded dy where the kernels do not sum it before rounding), and
// the unfused paths must be right too.
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <tbb/task_arena.h>

#include "support/acl_test_util.h"
#include "support/conv_case.h"

namespace {

using acltest::ConvCase;
using acltest::MakeCase;
using acltest::MakeGeom;
using acltest::ScopedEnv;

constexpr const char* kFused = "gradBias summed in this pass";

// Each above 2^21 multiply-adds, so the engine splits them over the arena's threads.
std::vector<ConvCase> Cases() {
  return {
      // C_out 20: one whole vector of channels and a tail of 4.
      MakeCase(MakeGeom({6, 24, 12, 12}, {20, 24, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1), "tail20", 61),
      MakeCase(MakeGeom({5, 32, 15, 15}, {40, 32, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 1), "stride2", 62),
      MakeCase(MakeGeom({3, 8, 6, 8, 8}, {20, 8, 3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 1),
               "3d", 63),
      // 192 input channels: two blocks of 96; only the first block's tasks sum gradBias.
      MakeCase(MakeGeom({3, 192, 6, 6}, {24, 192, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1), "two_blocks",
               64),
      // Two groups of 20 output channels: each group's sums at its own channels.
      MakeCase(MakeGeom({4, 32, 10, 10}, {40, 16, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 2), "groups2", 65),
      MakeCase(MakeGeom({4, 16, 14, 15}, {36, 16, 3, 3}, {1, 1}, {2, 2}, {2, 2}, 1), "dilated", 66),
      // 1-d with rows longer than a kernel call.
      MakeCase(MakeGeom({4, 16, 700}, {24, 16, 5}, {1}, {2}, {1}, 1), "conv1d", 67),
  };
}

// The same cases with every input in `dtype`.
std::vector<ConvCase> CasesIn(aclDataType dtype) {
  return acltest::Variants(
      Cases(), [&](ConvCase& c, size_t) { c.x_dtype = c.w_dtype = c.gy_dtype = dtype; });
}

// gradBias against the sum of the written gy in float64: within `rel` of the sum of |gy| (plus an
// ulp of the result's dtype, that of gy).
::testing::AssertionResult BiasAccurate(const ConvCase& c, const acltest::BackwardValues& v,
                                        double rel) {
  if (!v.result.ok()) return ::testing::AssertionFailure() << v.result.Describe();
  const std::vector<int64_t> out = c.geom.output();
  const int64_t N = out[0], C = out[1], S = acltest::Numel(out) / (N * C);
  for (int64_t o = 0; o < C; ++o) {
    double sum = 0, mag = 0;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t s = 0; s < S; ++s) {
        const double d = v.gy[(n * C + o) * S + s];
        sum += d, mag += std::fabs(d);
      }
    const double got = v.grad_bias[o];
    if (std::fabs(got - sum) > rel * mag + acltest::UlpOf(sum, c.gy_dtype))
      return ::testing::AssertionFailure()
             << c.label << ": gradBias[" << o << "] = " << got << ", reference " << sum
             << " (sum of |dy| " << mag << ")";
  }
  return ::testing::AssertionSuccess();
}

// Runs every case in arenas of 1 to 4 threads and checks all gradients against the reference;
// returns the captured log (ACLNN_CPU_VERBOSE).
std::string RunAll(const std::vector<ConvCase>& cases, bool tight) {
  ScopedEnv verbose("ACLNN_CPU_VERBOSE", "1");
  ::testing::internal::CaptureStderr();
  for (int threads : {1, 2, 3, 4}) {
    tbb::task_arena arena(threads);
    for (const ConvCase& c : cases) {
      SCOPED_TRACE(c.label + " threads=" + std::to_string(threads));
      arena.execute([&] {
        EXPECT_TRUE(acltest::CheckConvBackward(c));
        if (tight) {
          EXPECT_TRUE(BiasAccurate(c, acltest::RunConvBackward(c), 1e-6));
        }
      });
    }
  }
  return ::testing::internal::GetCapturedStderr();
}

// backward_weight plan lines of `algo` in `log`: how many, how many fused, how many of those
// with more than one batch range.
struct Lines {
  int weight = 0, fused = 0, fused_ranges = 0;
};
Lines Count(const std::string& log, const std::string& algo = "grid_direct") {
  Lines l;
  for (const std::string& line : acltest::VerbosePlanLines(log, ",backward_weight," + algo + ",")) {
    ++l.weight;
    if (line.find(kFused) == std::string::npos) continue;
    ++l.fused;
    l.fused_ranges += line.find("ranges:1 ") == std::string::npos;
  }
  return l;
}

// Checks the plan lines of a forced weight algorithm that cannot run at the tier in force (libaclnn
// says: acltest::AlgorithmRunsHere): none names it. grid_direct and strided_direct need AVX2 +
// FMA; at tier none (ctest's _maxnone run) a forced one never runs, and the planner's fallback
// computes every case (the values are still checked). True where it can run (the caller checks
// its lines).
bool ExpectRunsOrAbsent(const Lines& l, const std::string& algo, const std::string& log) {
  if (acltest::AlgorithmRunsHere(algo, "backward_weight")) return true;
  EXPECT_EQ(l.weight, 0) << algo << " ran at tier " << acltest::IsaInForce() << log.substr(0, 2000);
  return false;
}

TEST(ConvBiasFused, Fp32MatchesReferenceOverThreadsAndRanges) {
  ScopedEnv force("ACLNN_CPU_CONV_ALGO", "grid_direct");
  const std::string log = RunAll(Cases(), /*tight=*/true);
  const Lines l = Count(log);
  if (!ExpectRunsOrAbsent(l, "grid_direct", log)) return;
  EXPECT_GE(l.weight, 4 * int(Cases().size())) << log.substr(0, 2000);
  if (acltest::Avx512Runs()) {
    EXPECT_EQ(l.fused, l.weight) << log.substr(0, 2000);
    EXPECT_GT(l.fused_ranges, 0) << log.substr(0, 2000);
  } else {  // AVX2's band path: the engine's channel_sum
    EXPECT_EQ(l.fused, 0) << log.substr(0, 2000);
  }
}

TEST(ConvBiasFused, Fp32OneGridRowBlocks) {
  // Blocks of one grid row: the sums carried over many transposes per sample.
  ScopedEnv force("ACLNN_CPU_CONV_ALGO", "grid_direct");
  ScopedEnv small("ACLNN_CPU_SMALL_BLOCKS", "1");
  const std::vector<ConvCase> cases = {Cases()[0], Cases()[1], Cases()[2]};
  const std::string log = RunAll(cases, /*tight=*/true);
  const Lines l = Count(log);
  if (!ExpectRunsOrAbsent(l, "grid_direct", log)) return;
  EXPECT_GE(l.weight, 4 * int(cases.size())) << log.substr(0, 2000);
  if (acltest::Avx512Runs()) {
    EXPECT_EQ(l.fused, l.weight) << log.substr(0, 2000);
  }
}

TEST(ConvBiasFused, Bf16MatchesReference) {
  // The dot kernels' run (the bf16_dot policy; ctest runs these tests with ACLNN_CPU_BF16_DOT=0
  // and =1) sums the dy pairs on every line; the fp32 run on bf16 inputs sums them as it
  // converts and transposes them, where the converted x fits (as for RoundedOperands below).
  ScopedEnv force("ACLNN_CPU_CONV_ALGO", "grid_direct");
  const std::string log = RunAll(CasesIn(ACL_BF16), /*tight=*/false);
  const Lines l = Count(log);
  if (!ExpectRunsOrAbsent(l, "grid_direct", log)) return;
  EXPECT_GE(l.weight, 4 * int(Cases().size())) << log.substr(0, 2000);
  if (acltest::Bf16DotRuns()) {
    EXPECT_EQ(l.fused, l.weight) << log.substr(0, 2000);
  } else if (acltest::Avx512Runs()) {
    EXPECT_GT(l.fused, 0) << log.substr(0, 2000);
  }
}

TEST(ConvBiasFused, Fp16MatchesReference) {
  ScopedEnv force("ACLNN_CPU_CONV_ALGO", "grid_direct");
  RunAll(CasesIn(ACL_FLOAT16), /*tight=*/false);
}

TEST(ConvBiasFused, Bf16OneGridRowBlocks) {
  ScopedEnv force("ACLNN_CPU_CONV_ALGO", "grid_direct");
  ScopedEnv small("ACLNN_CPU_SMALL_BLOCKS", "1");
  const std::vector<ConvCase> all = CasesIn(ACL_BF16);
  RunAll({all[0], all[1], all[2]}, /*tight=*/false);
}

// Rounded operands (cubeMathType 1 HF32, 2 USE_FP16) on fp32: grid_direct's AVX-512 run converts
// and rounds dy inside its transpose and sums gradBias there from dy as stored, before the
// rounding (the tight bound: a sum of the rounded dy is off by ~1e-4 of the sum of |dy| under
// USE_FP16). Samples too large for the converted x (two_blocks, and more at 3-4 threads) keep
// the band path, where the engine sums it; every line must be right either way. AVX2 (ctest's
// _maxavx2 run) never sums them in the pass.
TEST(ConvBiasFused, RoundedOperandsSumDyAsStored) {
  ScopedEnv force("ACLNN_CPU_CONV_ALGO", "grid_direct");
  for (int cube : {1, 2}) {
    std::vector<ConvCase> cases = Cases();
    for (ConvCase& c : cases) c.cube = cube;
    const std::string log = RunAll(cases, /*tight=*/true);
    const Lines l = Count(log);
    if (!ExpectRunsOrAbsent(l, "grid_direct", log)) continue;
    EXPECT_GE(l.weight, 4 * int(cases.size())) << log.substr(0, 2000);
    if (acltest::Avx512Runs()) {
      EXPECT_GE(l.fused, 2 * int(cases.size())) << log.substr(0, 2000);
      EXPECT_GT(l.fused_ranges, 0) << log.substr(0, 2000);
    } else {
      EXPECT_EQ(l.fused, 0) << log.substr(0, 2000);
    }
  }
}

TEST(ConvBiasFused, DeterministicForAGivenThreadCount) {
  ScopedEnv force("ACLNN_CPU_CONV_ALGO", "grid_direct");
  for (aclDataType dt : {ACL_FLOAT, ACL_BF16}) {
    tbb::task_arena arena(3);
    for (const ConvCase& c : CasesIn(dt))
      arena.execute([&] { EXPECT_TRUE(acltest::CheckConvBackwardDeterministic(c)) << c.label; });
  }
}

// 1x1 kernels (pointwise_gemm): a channel tail, several batch ranges, several input-channel blocks
// (only the first sums), groups, and samples of more positions than one summing step (Cog 130:
// steps of 512 positions; Cog 20: 3280).
std::vector<ConvCase> PointwiseCases() {
  return {
      MakeCase(MakeGeom({3, 24, 64, 64}, {20, 24, 1, 1}, {1, 1}, {0, 0}, {1, 1}, 1), "pw_tail20",
               71),
      MakeCase(MakeGeom({2, 16, 40, 40}, {130, 16, 1, 1}, {1, 1}, {0, 0}, {1, 1}, 1), "pw_steps",
               72),
      MakeCase(MakeGeom({3, 512, 12, 12}, {24, 512, 1, 1}, {1, 1}, {0, 0}, {1, 1}, 1), "pw_blocks",
               73),
      MakeCase(MakeGeom({4, 48, 30, 30}, {40, 24, 1, 1}, {1, 1}, {0, 0}, {1, 1}, 2), "pw_groups2",
               74),
      MakeCase(MakeGeom({3, 16, 2000}, {36, 16, 1}, {1}, {0}, {1}, 1), "pw_conv1d", 75),
  };
}

TEST(ConvBiasFused, PointwiseMatchesReference) {
  ScopedEnv force("ACLNN_CPU_CONV_ALGO", "pointwise_gemm");
  // fp32 read in place; fp16 and bf16 read in place by the AVX-512 GEMM (Mat::p16), each summing
  // step converted for the sum, and a chunk at a time on AVX2: all sum dy as stored (our packed
  // GEMMs; at tier none OpenBLAS runs them and the engine sums dy).
  for (aclDataType dt : {ACL_FLOAT, ACL_FLOAT16, ACL_BF16}) {
    std::vector<ConvCase> cases = PointwiseCases();
    for (ConvCase& c : cases) c.x_dtype = c.w_dtype = c.gy_dtype = dt;
    const std::string log = RunAll(cases, /*tight=*/true);
    const Lines l = Count(log, "pointwise_gemm");
    EXPECT_GE(l.weight, 4 * int(cases.size())) << log.substr(0, 2000);
    if (dt == ACL_BF16 && acltest::Bf16NativeRuns()) {
      // bf16 read natively (pointwise_bf16's dot kernels): the engine sums dy; checked above.
    } else if (acltest::PackedKernelsRun()) {
      EXPECT_EQ(l.fused, l.weight) << log.substr(0, 2000);
      EXPECT_GT(l.fused_ranges, 0) << log.substr(0, 2000);
    } else {  // tier none: OpenBLAS's GEMMs, which sum nothing on the side
      EXPECT_EQ(l.fused, 0) << log.substr(0, 2000);
    }
  }
  {  // USE_FP16: the GEMMs read dy rounded, so the engine sums dy as stored.
    std::vector<ConvCase> cases = PointwiseCases();
    for (ConvCase& c : cases) c.cube = 2;
    const std::string log = RunAll(cases, /*tight=*/true);
    const Lines l = Count(log, "pointwise_gemm");
    EXPECT_GT(l.weight, 0) << log.substr(0, 2000);
    EXPECT_EQ(l.fused, 0) << log.substr(0, 2000);
  }
}

TEST(ConvBiasFused, PointwiseDeterministicForAGivenThreadCount) {
  ScopedEnv force("ACLNN_CPU_CONV_ALGO", "pointwise_gemm");
  tbb::task_arena arena(3);
  for (const ConvCase& c : PointwiseCases())
    arena.execute([&] { EXPECT_TRUE(acltest::CheckConvBackwardDeterministic(c)) << c.label; });
}

// strided_direct's AVX2 weight pass sums each dy block as it lies transposed in dy_t (runs of 16
// positions in fp32, then double): the grid_direct cases (channel tails, batch ranges, two
// input-channel blocks of which only the first sums, groups, stride 2, dilation, 3d, a row
// longer than the 16-position runs), fp32 and fp16 (converted exactly into dy_t); USE_FP16
// rounds dy in dy_t, so the engine sums it. On AVX-512 the pass does not sum (grid_direct's
// transpose does there).
TEST(ConvBiasFused, StridedDirectAvx2MatchesReference) {
  ScopedEnv force("ACLNN_CPU_CONV_ALGO", "strided_direct");
  for (aclDataType dt : {ACL_FLOAT, ACL_FLOAT16}) {
    const std::string log = RunAll(CasesIn(dt), /*tight=*/true);
    const Lines l = Count(log, "strided_direct");
    if (!ExpectRunsOrAbsent(l, "strided_direct", log)) continue;
    EXPECT_GE(l.weight, 4 * int(Cases().size())) << log.substr(0, 2000);
    if (acltest::Avx512Runs()) {
      EXPECT_EQ(l.fused, 0) << log.substr(0, 2000);
    } else {
      EXPECT_EQ(l.fused, l.weight) << log.substr(0, 2000);
      EXPECT_GT(l.fused_ranges, 0) << log.substr(0, 2000);
    }
  }
  std::vector<ConvCase> cases = Cases();
  for (ConvCase& c : cases) c.cube = 2;
  const std::string log = RunAll(cases, /*tight=*/true);
  EXPECT_EQ(Count(log, "strided_direct").fused, 0) << log.substr(0, 2000);
  tbb::task_arena arena(3);
  for (const ConvCase& c : Cases())
    arena.execute([&] { EXPECT_TRUE(acltest::CheckConvBackwardDeterministic(c)) << c.label; });
}

TEST(ConvBiasFused, UnfusedPathsSayNotAndMatchReference) {
  ScopedEnv verbose("ACLNN_CPU_VERBOSE", "1");
  tbb::task_arena arena(2);
  // Another weight algorithm: channel_sum; and a transposed conv (gradBias sums x of the regular
  // geometry, not the dy the weight pass reads).
  {
    ScopedEnv force("ACLNN_CPU_CONV_ALGO", "im2col_gemm");
    ::testing::internal::CaptureStderr();
    for (const ConvCase& c : {Cases()[0], Cases()[1]})
      arena.execute([&] { EXPECT_TRUE(acltest::CheckConvBackward(c)) << c.label; });
    const std::string log = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(log.find(kFused), std::string::npos) << log.substr(0, 2000);
  }
  {
    ScopedEnv force("ACLNN_CPU_CONV_ALGO", "grid_direct");
    const ConvCase t =
        MakeCase(MakeGeom({3, 20, 9, 8}, {20, 24, 4, 4}, {2, 2}, {1, 1}, {1, 1}, 1, true, {0, 0}),
                 "t_s2", 68);
    ::testing::internal::CaptureStderr();
    arena.execute([&] { EXPECT_TRUE(acltest::CheckConvBackward(t)) << t.label; });
    const std::string log = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(log.find(kFused), std::string::npos) << log.substr(0, 2000);
  }
}

}  // namespace
