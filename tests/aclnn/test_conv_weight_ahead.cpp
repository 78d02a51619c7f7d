// grid_direct's fp32 weight gradient with x read in place (AVX-512) asks for the next sample's x
// block and dy while it computes a sample, where a sample is one block and has enough
// multiply-adds per line asked for (algo_grid_direct.cpp, asks_next_sample). The sweeps' shapes
// are too small for that rule, so these shapes are sized to take it (unit stride and stride 2,
// several samples, one and two input-channel blocks); the plan line says so, and the gradients
// must still match the float64 reference (the asks read nothing into the result).
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/acl_test_util.h"
#include "support/conv_case.h"

namespace {

using acltest::ConvCase;
using acltest::MakeGeom;
using acltest::ScopedEnv;

TEST(ConvWeightAhead, NextSampleAskedForAndGradientsExact) {
  // Not forced (forcing names no reason in the plan line): >= 4M multiply-adds each, where
  // grid_direct is the weight gradient planned.
  ScopedEnv verbose("ACLNN_CPU_VERBOSE", "1");
  const std::vector<ConvCase> cases = {
      acltest::MakeCase(MakeGeom({4, 32, 8, 8}, {64, 32, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1), "unit",
                        51),
      acltest::MakeCase(MakeGeom({3, 64, 10, 10}, {128, 64, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 1),
                        "stride2", 52),
      // 192 input channels: two blocks of 96, each its own tasks over the samples.
      acltest::MakeCase(MakeGeom({3, 192, 6, 6}, {64, 192, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1),
                        "two_blocks", 53),
  };
  ::testing::internal::CaptureStderr();
  for (const ConvCase& c : cases) EXPECT_TRUE(acltest::CheckConvBackward(c)) << c.label;
  const std::string log = ::testing::internal::GetCapturedStderr();
  int weights = 0, asked = 0;
  for (const std::string& line : acltest::VerbosePlanLines(log, ",backward_weight,grid_direct,")) {
    ++weights;
    asked += line.find("next sample asked for") != std::string::npos;
  }
  if (acltest::Avx512Runs()) {
    EXPECT_GE(weights, int(cases.size())) << log.substr(0, 2000);
    EXPECT_EQ(asked, weights) << log.substr(0, 2000);
  } else {  // AVX2 reads x through a band (and takes a GEMM above 64 output channels)
    EXPECT_EQ(asked, 0) << log.substr(0, 2000);
  }
}

}  // namespace
