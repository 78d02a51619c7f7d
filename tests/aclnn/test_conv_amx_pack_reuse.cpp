// The AMX kernels' packed operands reused across tasks and taps (libaclnn_amx_model: the tiles'
// software model, on every machine), against the float64 reference:
//   - amx_gemm's weight gradient packs each dy chunk once for all its input-channel blocks, in
//     steps of chunks (algo_amx_gemm.cpp: DySteps); a panel reused past its chunk, or a step's
//     panels left from the step before, multiplies the wrong dy and fails the comparison;
//   - tbc_amx's weight gradient transposes a chunk's band of x rows once for all taps and packs
//     each tap's A panels from it (tbc_amx.cpp: band_rows); a band left from the chunk before, or
//     a tap's window taken at the wrong offset in it, multiplies the wrong x rows.
// The geometries are run at 1 to 4 threads (the blocks, batch ranges and chunks change with the
// slots) and under ACLNN_CPU_SMALL_BLOCKS=1 (chunks of 32 columns, one chunk a step), and the
// plan lines are checked to show the blockings the test is meant to reach.
#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <tbb/task_arena.h>

#include "support/acl_test_util.h"
#include "support/conv_case.h"
#include "support/tbc_case.h"

namespace {

using acltest::ScopedEnv;

// "blocking=cblock:%ld rows:%ld cols:%ld ranges:%ld" of a plan line.
struct Blocking {
  long cblock = 0, rows = 0, cols = 0, ranges = 0;
};
Blocking BlockingOf(const std::string& line) {
  Blocking b;
  const size_t at = line.find(",blocking=");
  if (at == std::string::npos ||
      std::sscanf(line.c_str() + at, ",blocking=cblock:%ld rows:%ld cols:%ld ranges:%ld", &b.cblock,
                  &b.rows, &b.cols, &b.ranges) != 4)
    ADD_FAILURE() << "no blocking on " << line;
  return b;
}

struct WeightCase {
  acltest::ConvCase c;
  long cin_g, s_out;  // input channels per group, output positions per sample
};

// Several input-channel blocks and column chunks (3x3, 1x1, grouped, strided), and one block
// with several batch ranges (3 channels: each task packs its own chunks).
std::vector<WeightCase> WeightCases() {
  using acltest::MakeCase;
  using acltest::MakeGeom;
  return {
      {MakeCase(MakeGeom({3, 40, 13, 11}, {24, 40, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1), "blocks3x3",
                71),
       40, 13 * 11},
      {MakeCase(MakeGeom({3, 64, 12, 12}, {20, 64, 1, 1}, {1, 1}, {0, 0}, {1, 1}, 1), "blocks1x1",
                72),
       64, 12 * 12},
      {MakeCase(MakeGeom({5, 24, 14, 13}, {36, 8, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 3), "grouped", 73),
       8, 14 * 13},
      {MakeCase(MakeGeom({2, 33, 30, 30}, {17, 33, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 1), "stride2",
                74),
       33, 15 * 15},
      {MakeCase(MakeGeom({7, 3, 20, 20}, {16, 3, 5, 5}, {1, 1}, {2, 2}, {1, 1}, 1), "ranges", 75),
       3, 20 * 20},
  };
}

TEST(AmxPackReuse, GemmWeightDyChunksAcrossChannelBlocks) {
  if (acltest::AmxTilesInForce() == "off") GTEST_SKIP() << "no AMX tiles in this library";
  ScopedEnv force("ACLNN_CPU_CONV_ALGO", "amx_gemm");
  ScopedEnv verbose("ACLNN_CPU_VERBOSE", "1");
  int several_blocks_and_chunks = 0, one_block_several_ranges = 0, runs = 0;
  for (const char* small : {"0", "1"}) {
    ScopedEnv small_blocks("ACLNN_CPU_SMALL_BLOCKS", small);
    for (int threads = 1; threads <= 4; ++threads)
      for (WeightCase w : WeightCases()) {
        w.c.x_dtype = w.c.w_dtype = w.c.gy_dtype = ACL_BF16;
        w.c.mask = {false, true, true};
        ::testing::internal::CaptureStderr();
        bool ok = false;
        tbb::task_arena(threads).execute([&] { ok = acltest::CheckConvBackward(w.c); });
        const std::vector<std::string> lines = acltest::VerbosePlanLines(
            ::testing::internal::GetCapturedStderr(), ",backward_weight,amx_gemm,");
        EXPECT_TRUE(ok) << w.c.label << ", " << threads << " threads, small blocks " << small;
        ASSERT_EQ(lines.size(), 1u) << w.c.label << ": amx_gemm did not run the weight gradient";
        const Blocking b = BlockingOf(lines[0]);
        several_blocks_and_chunks += b.cblock < w.cin_g && b.cols < w.s_out;
        one_block_several_ranges += b.cblock == w.cin_g && b.ranges > 1;
        ++runs;
      }
  }
  // The blockings the reuse has to survive were reached (not left to the planner's mood).
  std::printf("%d of %d runs: several channel blocks and chunks; %d: one block, several ranges\n",
              several_blocks_and_chunks, runs, one_block_several_ranges);
  EXPECT_GE(several_blocks_and_chunks, runs / 2);
  EXPECT_GE(one_block_several_ranges, 4);
}

// (T, B, C_in, C_out, K, pad): several chunks of 256 output rows with edge taps, the band of
// 256 + (K - 1) B rows for B = 32, 9 (odd), 1, 24 and 64, several C_out blocks (150 > 128, and
// at 2 and 3 threads); and without a band: B = 300 (the taps' windows apart) and B = 200 with
// K = 5 (a band of 1,056 rows, past 1,024).
TEST(AmxPackReuse, TbcWeightBandAcrossTaps) {
  if (acltest::AmxTilesInForce() == "off") GTEST_SKIP() << "no AMX tiles in this library";
  ScopedEnv force("ACLNN_CPU_CONV_ALGO", "tbc_amx");
  ScopedEnv verbose("ACLNN_CPU_VERBOSE", "1");
  const naive::TbcGeom geoms[] = {{20, 32, 40, 150, 3, 1}, {70, 9, 67, 70, 3, 2},
                                  {600, 1, 33, 20, 5, 0},  {30, 24, 16, 40, 6, 3},
                                  {40, 64, 20, 30, 4, 1},  {10, 300, 17, 33, 3, 1},
                                  {12, 200, 9, 18, 5, 2}};
  ::testing::internal::CaptureStderr();
  size_t want = 0;
  for (int threads = 1; threads <= 3; ++threads)
    for (const naive::TbcGeom& g : geoms) {
      bool ok = false;
      tbb::task_arena(threads).execute([&] {
        ok = acltest::CheckTbcBackward({g, acltest::Layout::kContiguous, ACL_BF16});
      });
      EXPECT_TRUE(ok) << g.Describe() << ", " << threads << " threads";
      want += 1;  // the gradWeight plan line
    }
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(acltest::VerbosePlanLines(log, ",tbc_amx,").size(), 2 * want);  // and gradInput's
  EXPECT_EQ(acltest::VerbosePlanLines(log).size(), 2 * want) << log.substr(0, 2000);
}

}  // namespace
