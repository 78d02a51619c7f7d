// aclnnConvolutionBackward on HIFLOAT8 / FLOAT8_E4M3FN tensors, the one 8-bit case the spec
// allows (Ascend910_95, transposed = true, outputMask[0] = true; CONFORMANCE.md row 12). The
// inputs are decoded exactly, the sums accumulated in fp32 and each output encoded once, so every
// output must be the 8-bit rounding (support/float_formats.cpp: nearest code, E4M3FN ties to
// even, HIFLOAT8 ties away) of the float64 naive reference on the decoded inputs. fp32
// accumulation may move a sum by a few units of 2^-24 of its scale, so an element whose reference
// lies that close to a rounding boundary may take either neighbouring code; most elements are
// not that close and must match exactly (the tests count them).
#include <array>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "aclnn/aclnn_cpu_conv.h"
#include "support/conv_case.h"
#include "support/error_case.h"

namespace {

using acltest::ConvCase;
using acltest::Layout;
using acltest::MakeGeom;

constexpr aclDataType kFormats[] = {ACL_FLOAT8_E4M3FN, ACL_HIFLOAT8};

using acltest::ScopedEnv;

// Each got[i] is the rounding to `dt` of a value within 1e-5 * scale[i] of the reference (the
// fp32 accumulation bound of these sizes, with margin); `exact` counts the elements whose
// rounding that margin cannot change (they must equal the reference rounded once).
::testing::AssertionResult RoundedOnce(const std::string& what, const std::vector<double>& got,
                                       const naive::Result& ref, aclDataType dt, int* exact) {
  if (got.size() != ref.value.size())
    return ::testing::AssertionFailure()
           << what << ": " << got.size() << " elements, reference " << ref.value.size();
  for (size_t i = 0; i < got.size(); ++i) {
    const double eps = 1e-5 * ref.scale[i];
    const double want = acltest::RoundToDtype(ref.value[i], dt);
    const double lo = acltest::RoundToDtype(ref.value[i] - eps, dt);
    const double hi = acltest::RoundToDtype(ref.value[i] + eps, dt);
    *exact += lo == hi || (std::isnan(lo) && std::isnan(hi));
    const bool ok = got[i] == want || (std::isnan(got[i]) && std::isnan(want)) ||
                    (got[i] >= lo && got[i] <= hi) || (std::isnan(got[i]) && std::isnan(hi));
    if (!ok)
      return ::testing::AssertionFailure()
             << what << "[" << i << "] = " << got[i] << ", reference " << ref.value[i] << " (scale "
             << ref.scale[i] << ") rounds to " << want;
  }
  return ::testing::AssertionSuccess();
}

// Runs the case on Ascend910_95 and checks every requested output; returns the exact count.
int ExpectRoundedOnce(const ConvCase& c) {
  conv_errors::Soc soc("Ascend910_95");
  const acltest::BackwardValues v = acltest::RunConvBackward(c);
  EXPECT_TRUE(v.result.ok()) << c.Describe() << ": " << v.result.Describe();
  if (!v.result.ok()) return 0;
  const naive::Grads ref = naive::ConvBackward(c.geom, v.gy, v.x, v.w);
  int exact = 0;
  if (c.mask[0]) {
    EXPECT_TRUE(RoundedOnce("gradInput", v.grad_input, ref.input, c.x_dtype, &exact))
        << c.Describe();
  }
  if (c.mask[1]) {
    EXPECT_TRUE(RoundedOnce("gradWeight", v.grad_weight, ref.weight, c.w_dtype, &exact))
        << c.Describe();
  }
  if (c.mask[2]) {
    EXPECT_TRUE(RoundedOnce("gradBias", v.grad_bias, ref.bias, c.gy_dtype, &exact)) << c.Describe();
  }
  return exact;
}

ConvCase EightBit(ConvCase c, aclDataType dt) {
  c.x_dtype = c.w_dtype = c.gy_dtype = dt;
  return c;
}

// Transposed geometries of 1d, 2d and 3d (the 95 column allows all three), with stride, padding,
// dilation, output padding and groups; a larger one so the GEMM paths take it.
std::vector<ConvCase> TransposedCases() {
  return {
      acltest::MakeCase(MakeGeom({2, 4, 5}, {4, 3, 3}, {2}, {1}, {1}, 1, true, {1}), "t1d", 1),
      acltest::MakeCase(
          MakeGeom({2, 4, 5, 6}, {4, 2, 3, 2}, {2, 1}, {1, 0}, {1, 2}, 2, true, {1, 0}), "t2d", 2),
      acltest::MakeCase(MakeGeom({1, 2, 3, 4, 3}, {2, 3, 2, 3, 2}, {1, 2, 1}, {0, 1, 0}, {1, 1, 1},
                                 1, true, {0, 1, 0}),
                        "t3d", 3),
      acltest::MakeCase(
          MakeGeom({2, 16, 12, 11}, {16, 8, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 1, true, {1, 0}),
          "t2d_large", 4),
      acltest::MakeCase(MakeGeom({2, 6, 7, 7}, {6, 1, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 6, true),
                        "t2d_depthwise", 5),
      acltest::MakeCase(MakeGeom({2, 12, 5, 6}, {12, 10, 1, 1}, {1, 1}, {0, 0}, {1, 1}, 1, true),
                        "t2d_pointwise", 6),
  };
}

TEST(ConvFloat8, TransposedGradientsAreTheReferenceRoundedOnce) {
  for (aclDataType dt : kFormats) {
    int exact = 0, elements = 0;
    for (const ConvCase& base : TransposedCases()) {
      for (std::array<bool, 3> mask :
           {std::array<bool, 3>{true, false, false}, std::array<bool, 3>{true, true, true}}) {
        for (Layout layout : {Layout::kContiguous, Layout::kPadded}) {
          ConvCase c = EightBit(base, dt);
          c.mask = mask;
          c.layout = layout;
          exact += ExpectRoundedOnce(c);
          elements += static_cast<int>(acltest::Numel(c.geom.input));
          if (mask[1]) elements += static_cast<int>(acltest::Numel(c.geom.weight));
          if (mask[2]) elements += static_cast<int>(c.geom.out_channels());
        }
      }
    }
    SCOPED_TRACE(acltest::DtypeName(dt));
    EXPECT_GT(exact, elements * 9 / 10);  // the tolerance decides only near-boundary elements
  }
}

// cubeMathType has no effect on 8-bit inputs (95: "other dtypes are not processed"): every mode
// gives the same bits.
TEST(ConvFloat8, EveryCubeMathTypeGivesTheSameResult) {
  for (aclDataType dt : kFormats) {
    conv_errors::Soc soc("Ascend910_95");
    ConvCase c = EightBit(TransposedCases()[1], dt);
    const std::vector<double> first = acltest::RunConvBackward(c).grad_input;
    ASSERT_FALSE(first.empty());
    for (int cube : {1, 2, 3}) {
      c.cube = cube;
      const acltest::BackwardValues v = acltest::RunConvBackward(c);
      ASSERT_TRUE(v.result.ok()) << v.result.Describe();
      EXPECT_EQ(v.grad_input, first) << "cubeMathType " << cube;
    }
  }
}

// Every code through the kernels: a 1x1 transposed conv with weight 1 gives gradInput =
// gradOutput, so each of the 256 codes comes back as itself (NaN codes as NaN; -0 as 0: the sum
// starts from +0).
TEST(ConvFloat8, EveryCodePassesThroughAUnitKernel) {
  for (aclDataType dt : kFormats) {
    SCOPED_TRACE(acltest::DtypeName(dt));
    ConvCase c = EightBit(
        acltest::MakeCase(MakeGeom({1, 1, 256}, {1, 1, 1}, {1}, {0}, {1}, 1, true, {0}), "unit", 9),
        dt);
    c.mask = {true, false, false};
    std::vector<double> codes;
    for (int i = 0; i < 256; ++i)
      codes.push_back(dt == ACL_HIFLOAT8 ? acltest::DecodeHiF8(static_cast<uint8_t>(i))
                                         : acltest::DecodeE4M3FN(static_cast<uint8_t>(i)));
    c.edit_values = [&](std::vector<double>& gy, std::vector<double>&, std::vector<double>& w) {
      gy = codes;
      w = {1.0};
    };
    conv_errors::Soc soc("Ascend910_95");
    const acltest::BackwardValues v = acltest::RunConvBackward(c);
    ASSERT_TRUE(v.result.ok()) << v.result.Describe();
    for (size_t i = 0; i < codes.size(); ++i) {
      if (std::isnan(codes[i])) {
        EXPECT_TRUE(std::isnan(v.grad_input[i])) << "code " << i;
      } else {
        EXPECT_EQ(v.grad_input[i], codes[i]) << "code " << i;
      }
    }
  }
}

// Sums past the largest finite value: E4M3FN gives NaN (it has no infinity) once the sum
// exceeds 464, HIFLOAT8 gives +/-Inf from 40960 (ties away); a sum exactly halfway below those
// rounds back to the maximum (E4M3FN: 448 + 16 = 464 is a tie, to even 448).
TEST(ConvFloat8, OverflowIsNanForE4m3fnAndInfForHifloat8) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  struct Sums {
    aclDataType dt;
    std::vector<double> gy;  // [1, 2, 4]: channel 0 then channel 1; gradInput = their sum
    std::vector<double> want;
  };
  const Sums cases[] = {
      {ACL_FLOAT8_E4M3FN, {448, 448, -448, 448, 448, 16, -448, 32}, {nan, 448, nan, nan}},
      {ACL_HIFLOAT8,
       {32768, 32768, -32768, 32768, 32768, 8192, -32768, 4096},
       {inf, inf, -inf, 32768}},
  };
  for (const Sums& s : cases) {
    SCOPED_TRACE(acltest::DtypeName(s.dt));
    ConvCase c = EightBit(
        acltest::MakeCase(MakeGeom({1, 1, 4}, {1, 2, 1}, {1}, {0}, {1}, 1, true, {0}), "sum", 10),
        s.dt);
    c.mask = {true, false, false};
    c.edit_values = [&](std::vector<double>& gy, std::vector<double>&, std::vector<double>& w) {
      gy = s.gy;
      w = {1.0, 1.0};
    };
    conv_errors::Soc soc("Ascend910_95");
    const acltest::BackwardValues v = acltest::RunConvBackward(c);
    ASSERT_TRUE(v.result.ok()) << v.result.Describe();
    ASSERT_EQ(v.gy, s.gy);  // every operand is exact in the format
    for (size_t i = 0; i < s.want.size(); ++i) {
      if (std::isnan(s.want[i])) {
        EXPECT_TRUE(std::isnan(v.grad_input[i])) << i << ": " << v.grad_input[i];
      } else {
        EXPECT_EQ(v.grad_input[i], s.want[i]) << i;
      }
    }
  }
}

// Every registered algorithm of the primitives a transposed backward uses (forward computes
// gradInput, backward_weight gradWeight), forced, on 8-bit tensors; the verbose plan lines prove
// each ran on at least one case.
TEST(ConvFloat8, EveryForcedAlgorithmHandlesEightBitOperands) {
  for (int i = 0; i < aclnnCpuConvAlgorithmCount(); ++i) {
    const std::string name = aclnnCpuConvAlgorithmName(i);
    const std::string prim = aclnnCpuConvAlgorithmPrimitive(i);
    if ((prim != "forward" && prim != "backward_weight") || !aclnnCpuConvAlgorithmRunsHere(i))
      continue;
    SCOPED_TRACE(name);
    ScopedEnv force("ACLNN_CPU_CONV_ALGO", name);
    ScopedEnv verbose("ACLNN_CPU_VERBOSE", "1");
    ::testing::internal::CaptureStderr();
    for (aclDataType dt : kFormats) {
      for (const ConvCase& base : TransposedCases()) {
        ConvCase c = EightBit(base, dt);
        ExpectRoundedOnce(c);
      }
    }
    const std::string log = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(log.find("," + prim + "," + name + ","), std::string::npos)
        << name << " never ran on the 8-bit cases";
  }
}

}  // namespace
