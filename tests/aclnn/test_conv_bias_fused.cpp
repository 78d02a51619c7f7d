// gradBias summed inside grid_direct's weight gradient (Blocking::sums_bias): on AVX-512 the fp32
// run adds dy into per-range double sums as it transposes dy for the kernel, the bf16 run as it
// builds its dy pairs, and the engine then skips its own pass over dy (channel_sum). The plan line
// of backward_weight says "gradBias summed in this pass".
//
// These tests force grid_direct (ACLNN_CPU_CONV_ALGO) on shapes that reach every part of that
// sum: output channels per group not a multiple of 16 (the masked tail of the last vector),
// several batch ranges (ranges summed in order: 3 and 4 threads on a batch of a few samples), two
// input-channel blocks (only the first block's tasks sum), groups, stride 2, dilation, 3d, and
// blocks of one grid row (ACLNN_CPU_SMALL_BLOCKS). gradBias must match the float64 reference
// (fp32: within 1e-6 of the sum of |dy|, tighter than the sweeps' tolerance), the plan lines
// must say fused where the kernels sum it and must not where they cannot (AVX2, HF32-rounded dy,
// another weight algorithm), and the unfused paths must be right too.
#include <cmath>
#include <cstdlib>
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

bool Avx512Runs() {
  __builtin_cpu_init();
  const char* cap = std::getenv("ACLNN_CPU_MAX_ISA");
  return __builtin_cpu_supports("avx512f") && !(cap && std::string(cap) != "avx512");
}

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
// ulp of the fp32 result).
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
    if (std::fabs(got - sum) > rel * mag + acltest::UlpOf(sum, ACL_FLOAT))
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

// backward_weight plan lines of grid_direct in `log`: how many, how many fused, how many of those
// with more than one batch range.
struct Lines {
  int weight = 0, fused = 0, fused_ranges = 0;
};
Lines Count(const std::string& log) {
  Lines l;
  for (const std::string& line : acltest::VerbosePlanLines(log, ",backward_weight,grid_direct,")) {
    ++l.weight;
    if (line.find(kFused) == std::string::npos) continue;
    ++l.fused;
    l.fused_ranges += line.find("ranges:1 ") == std::string::npos;
  }
  return l;
}

TEST(ConvBiasFused, Fp32MatchesReferenceOverThreadsAndRanges) {
  ScopedEnv force("ACLNN_CPU_CONV_ALGO", "grid_direct");
  const std::string log = RunAll(Cases(), /*tight=*/true);
  const Lines l = Count(log);
  EXPECT_GE(l.weight, 4 * int(Cases().size())) << log.substr(0, 2000);
  if (Avx512Runs()) {
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
  EXPECT_GE(l.weight, 4 * int(cases.size())) << log.substr(0, 2000);
  if (Avx512Runs()) {
    EXPECT_EQ(l.fused, l.weight) << log.substr(0, 2000);
  }
}

TEST(ConvBiasFused, Bf16MatchesReference) {
  // The dot kernels' run (on CPUs with them) sums the dy pairs; the fp32 run on bf16 inputs
  // (ACLNN_CPU_BF16_DOT=0 below) sums them as it converts and transposes them.
  ScopedEnv force("ACLNN_CPU_CONV_ALGO", "grid_direct");
  const std::string log = RunAll(CasesIn(ACL_BF16), /*tight=*/false);
  const Lines l = Count(log);
  EXPECT_GE(l.weight, 4 * int(Cases().size())) << log.substr(0, 2000);
  if (Avx512Runs()) {
    EXPECT_EQ(l.fused, l.weight) << log.substr(0, 2000);
  }
}

TEST(ConvBiasFused, Bf16ConvertedAndFp16MatchReference) {
  ScopedEnv force("ACLNN_CPU_CONV_ALGO", "grid_direct");
  ScopedEnv dot("ACLNN_CPU_BF16_DOT", "0");
  RunAll(CasesIn(ACL_BF16), /*tight=*/false);
  RunAll(CasesIn(ACL_FLOAT16), /*tight=*/false);
}

TEST(ConvBiasFused, Bf16OneGridRowBlocks) {
  ScopedEnv force("ACLNN_CPU_CONV_ALGO", "grid_direct");
  ScopedEnv small("ACLNN_CPU_SMALL_BLOCKS", "1");
  const std::vector<ConvCase> all = CasesIn(ACL_BF16);
  RunAll({all[0], all[1], all[2]}, /*tight=*/false);
}

TEST(ConvBiasFused, DeterministicForAGivenThreadCount) {
  ScopedEnv force("ACLNN_CPU_CONV_ALGO", "grid_direct");
  for (aclDataType dt : {ACL_FLOAT, ACL_BF16}) {
    tbb::task_arena arena(3);
    for (const ConvCase& c : CasesIn(dt))
      arena.execute([&] { EXPECT_TRUE(acltest::CheckConvBackwardDeterministic(c)) << c.label; });
  }
}

TEST(ConvBiasFused, UnfusedPathsSayNotAndMatchReference) {
  ScopedEnv verbose("ACLNN_CPU_VERBOSE", "1");
  tbb::task_arena arena(2);
  // HF32-rounded operands (cubeMathType 1, ALLOW_FP32_DOWN_PRECISION): the kernels read dy
  // rounded, gradBias is the sum of dy as stored, so the engine sums it.
  {
    ScopedEnv force("ACLNN_CPU_CONV_ALGO", "grid_direct");
    ::testing::internal::CaptureStderr();
    for (ConvCase c : Cases()) {
      c.cube = 1;
      arena.execute([&] { EXPECT_TRUE(acltest::CheckConvBackward(c)) << c.label; });
    }
    const std::string log = ::testing::internal::GetCapturedStderr();
    const Lines l = Count(log);
    EXPECT_GT(l.weight, 0) << log.substr(0, 2000);
    EXPECT_EQ(l.fused, 0) << log.substr(0, 2000);
  }
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
