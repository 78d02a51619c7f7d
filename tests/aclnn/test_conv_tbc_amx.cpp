// tbc_amx, the time-major form of bf16 ConvTbc on the AMX tiles, against the float64 reference:
// forward and both gradients, forced and as the planner chooses it, through aclnnConvTbc /
// aclnnConvTbcBackward and through aclnnConvolution / aclnnConvolutionBackward on zero-copy
// [B, C, T] views of the same [T, B, C] buffers (every output mask, bias on and off, bf16 and
// fp32 outputs, rows stored with gaps). The tolerance is the aclnn tests' policy
// (support/compare.h): bf16 operands are exact, so only the fp32 accumulation (1e-5 of the sum of
// the terms' magnitudes) and the final rounding to the output's dtype remain; one dropped or
// misplaced term fails it.
//
// Built twice: against libaclnn_amx_model (every machine: the tiles' software model) and against
// libaclnn, where it runs on the CPU's tiles and skips on machines without AMX.
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "aclnnop/aclnn_convolution.h"
#include "aclnnop/aclnn_convolution_backward.h"
#include "support/acl_test_util.h"
#include "support/compare.h"
#include "support/naive_conv.h"
#include "support/tbc_case.h"

namespace {

using acltest::Layout;
using acltest::ScopedEnv;
using acltest::TestTensor;

#define SKIP_WITHOUT_AMX()                                                             \
  if (acltest::AmxTilesInForce() == "off")                                             \
  GTEST_SKIP() << "no AMX tiles in this library here (amx=off); the test's twin over " \
                  "libaclnn_amx_model runs tbc_amx on the tile model"

// (T, B, C_in, C_out, K, pad): T*B never a multiple of 16, channels not multiples of 16 or 32,
// pad 0, 1, 2 and K - 1, B = 1, K = 1, T_out = 1, several row tasks (630 rows), three weight
// chunks with edge taps (630 rows: 256 + 256 + 118), two k blocks of a tap (C 40 -> 64), two
// C_out blocks of the weight gradient (140 > 128), a long B = 1 sequence.
const naive::TbcGeom kGeoms[] = {
    {9, 3, 5, 7, 3, 1},    {8, 1, 6, 4, 2, 0},     {12, 5, 17, 33, 1, 0},
    {11, 2, 40, 20, 4, 3}, {20, 3, 33, 50, 5, 2},  {3, 5, 9, 11, 3, 0},
    {70, 9, 67, 70, 3, 1}, {40, 7, 48, 140, 3, 2}, {301, 1, 16, 34, 2, 1}};

// Expects `want` plan lines in `log`, every one naming tbc_amx, bf16 products and the tiles in
// force (amx=model on the model library, amx=on on the CPU's tiles).
void ExpectTbcAmxRan(const std::string& log, size_t want) {
  const std::vector<std::string> lines = acltest::VerbosePlanLines(log);
  EXPECT_EQ(lines.size(), want) << log.substr(0, 3000);
  const std::string amx = ",amx=" + acltest::AmxTilesInForce() + ",";
  for (const std::string& line : lines) {
    EXPECT_NE(line.find(",tbc_amx,"), std::string::npos) << line;
    EXPECT_NE(line.find(" bf16,threads="), std::string::npos) << line;
    EXPECT_NE(line.find(amx), std::string::npos) << line;
    EXPECT_NE(line.find(",blocking=amx-tap-panels,"), std::string::npos) << line;
  }
}

// aclnnConvTbcBackward (all three gradients: plan lines for gradInput and gradWeight, gradBias
// summed in the weight pass) and aclnnConvTbc (with bias) on every geometry, tbc_amx forced.
TEST(TbcAmx, ForcedMatchesReference) {
  SKIP_WITHOUT_AMX();
  ScopedEnv force("ACLNN_CPU_CONV_ALGO", "tbc_amx");
  ScopedEnv verbose("ACLNN_CPU_VERBOSE", "1");
  ::testing::internal::CaptureStderr();
  size_t plans = 0;
  for (const naive::TbcGeom& g : kGeoms) {
    EXPECT_TRUE(acltest::CheckTbcBackward({g, Layout::kContiguous, ACL_BF16}));
    EXPECT_TRUE(acltest::CheckTbcForward({g, Layout::kContiguous, ACL_BF16}));
    plans += 2 + 1;
  }
  ExpectTbcAmxRan(::testing::internal::GetCapturedStderr(), plans);
}

// Unforced: wherever the bf16_amx policy is on, the planner takes tbc_amx for bf16 ConvTbc at
// every size (before tbc_bf16 and tbc_convert), and the plan line says which tiles ran.
TEST(TbcAmx, ChosenWhereTheTilesRun) {
  SKIP_WITHOUT_AMX();
  ScopedEnv unforced("ACLNN_CPU_CONV_ALGO", "");
  ScopedEnv verbose("ACLNN_CPU_VERBOSE", "1");
  ::testing::internal::CaptureStderr();
  for (const naive::TbcGeom& g : {kGeoms[0], kGeoms[6]}) {
    EXPECT_TRUE(acltest::CheckTbcBackward({g, Layout::kContiguous, ACL_BF16}));
    EXPECT_TRUE(acltest::CheckTbcForward({g, Layout::kContiguous, ACL_BF16}));
  }
  ExpectTbcAmxRan(::testing::internal::GetCapturedStderr(), 2 * (2 + 1));
}

// A time-major tensor [A, B, C] (or a weight [K, C_in, C_out]) whose rows are stored C + gap
// elements apart: storage [A, B, C + gap], the last `gap` elements of every row never read and
// never to be written. Its views for the convolution APIs see the same buffer, no copy: [A, B, C]
// with strides (sA, sB, 1) as [B, C, A] with (sB, 1, sA), and the weight as the conv weight
// [C_out, C_in, K] with (1, sCi, sK).
class Gapped {
 public:
  Gapped(const std::vector<int64_t>& shape, int64_t gap, bool output, uint64_t seed)
      : shape_(shape),
        gap_(gap),
        t_(output ? TestTensor::Output(Full(shape, gap), ACL_BF16)
                  : TestTensor(Full(shape, gap), ACL_BF16)) {
    if (output) return;
    acltest::Rng rng(seed);
    t_.Fill(rng.Uniform(t_.numel()));
  }
  std::vector<double> Values() const { return Inner(t_.values()); }
  std::vector<double> Read() const { return Inner(t_.Read()); }
  // Whether every gap element still holds the output sentinel (a NaN).
  bool GapsUntouched() const {
    const std::vector<double> all = t_.Read();
    const int64_t row = shape_[2] + gap_;
    for (int64_t i = 0; i < static_cast<int64_t>(all.size()); ++i)
      if (i % row >= shape_[2] && !std::isnan(all[i])) return false;
    return true;
  }
  bool Untouched() const { return t_.Untouched(); }
  const std::vector<int64_t>& shape() const { return shape_; }
  acltest::AclTensorPtr Ncl() const {
    const auto& s = t_.strides();
    return t_.View({shape_[1], shape_[2], shape_[0]}, {s[1], s[2], s[0]}, 0, ACL_FORMAT_NCL);
  }
  acltest::AclTensorPtr ConvWeight() const {
    const auto& s = t_.strides();
    return t_.View({shape_[2], shape_[1], shape_[0]}, {s[2], s[1], s[0]}, 0, ACL_FORMAT_NCL);
  }

 private:
  static std::vector<int64_t> Full(std::vector<int64_t> shape, int64_t gap) {
    shape[2] += gap;
    return shape;
  }
  std::vector<double> Inner(const std::vector<double>& all) const {
    std::vector<double> v;
    const int64_t row = shape_[2] + gap_;
    for (int64_t i = 0; i < static_cast<int64_t>(all.size()); ++i)
      if (i % row < shape_[2]) v.push_back(all[i]);
    return v;
  }
  std::vector<int64_t> shape_;
  int64_t gap_;
  TestTensor t_;
};

// Checks a requested output against the reference (and that its gaps were not written), and that
// a masked-out one was not touched at all.
void CheckOutput(const char* name, const Gapped& t, bool requested, aclDataType dtype,
                 const naive::Result& want, const std::string& what) {
  if (!requested) {
    EXPECT_TRUE(t.Untouched()) << name << " was not requested but was written; " << what;
    return;
  }
  EXPECT_TRUE(acltest::CompareToReference(name, t.Read(), want, t.shape(),
                                          acltest::ToleranceFor(dtype, ACL_BF16)))
      << what;
  EXPECT_TRUE(t.GapsUntouched()) << name << " wrote into the gaps between its rows; " << what;
}

std::string Describe(const naive::TbcGeom& g, int64_t gap) {
  return g.Describe() + ", rows stored " + std::to_string(gap) + " elements apart beyond C";
}

// aclnnConvolutionBackward on the views with output mask `mask`; returns the plan lines expected
// (one per requested gradient that is a GEMM: gradInput, gradWeight).
size_t CheckBackwardOnViews(const naive::TbcGeom& g, int64_t gap, const bool mask[3],
                            uint64_t seed) {
  const Gapped gy({g.t_out(), g.B, g.C_out}, gap, false, seed),
      x({g.T, g.B, g.C_in}, gap, false, seed + 1), w({g.K, g.C_in, g.C_out}, gap, false, seed + 2);
  const Gapped gi({g.T, g.B, g.C_in}, gap, true, 0), gw({g.K, g.C_in, g.C_out}, gap, true, 0);
  auto gb = TestTensor::Output({g.C_out}, ACL_BF16);
  acltest::AclTensorPtr gy_v = gy.Ncl(), x_v = x.Ncl(), w_v = w.ConvWeight();
  acltest::AclTensorPtr gi_v = gi.Ncl(), gw_v = gw.ConvWeight();
  auto stride = acltest::MakeIntArray({1}), pad = acltest::MakeIntArray({g.pad});
  auto dil = acltest::MakeIntArray({1}), op = acltest::MakeIntArray({0});
  auto bias_sizes = acltest::MakeIntArray({g.C_out});
  auto m = acltest::MakeBoolArray({mask[0], mask[1], mask[2]});
  const acltest::CallResult r = acltest::RunTwoPhase(
      [&](uint64_t* ws, aclOpExecutor** ex) {
        return aclnnConvolutionBackwardGetWorkspaceSize(
            gy_v.get(), x_v.get(), w_v.get(), bias_sizes.get(), stride.get(), pad.get(), dil.get(),
            false, op.get(), 1, m.get(), 0, gi_v.get(), gw_v.get(), gb.get(), ws, ex);
      },
      aclnnConvolutionBackward);
  const std::string what = Describe(g, gap) + ", mask " + std::to_string(mask[0]) +
                           std::to_string(mask[1]) + std::to_string(mask[2]);
  EXPECT_TRUE(r.ok()) << r.Describe() << "; " << what;
  if (!r.ok()) return 0;
  const naive::Grads ref = naive::TbcBackward(g, gy.Values(), x.Values(), w.Values());
  CheckOutput("gradInput", gi, mask[0], ACL_BF16, ref.input, what);
  CheckOutput("gradWeight", gw, mask[1], ACL_BF16, ref.weight, what);
  if (mask[2]) {
    EXPECT_TRUE(acltest::CompareToReference("gradBias", gb.Read(), ref.bias, gb.shape(),
                                            acltest::ToleranceFor(ACL_BF16, ACL_BF16)))
        << what;
  } else {
    EXPECT_TRUE(gb.Untouched()) << "gradBias was not requested but was written; " << what;
  }
  return static_cast<size_t>(mask[0]) + static_cast<size_t>(mask[1]);
}

// aclnnConvolution on the views: bias absent or of dtype `bias_dt`, output of dtype `out_dt`
// (stored without gaps: a fp32 output's rows are its own).
void CheckForwardOnViews(const naive::TbcGeom& g, int64_t gap, bool with_bias, aclDataType bias_dt,
                         aclDataType out_dt, uint64_t seed) {
  const Gapped x({g.T, g.B, g.C_in}, gap, false, seed),
      w({g.K, g.C_in, g.C_out}, gap, false, seed + 1);
  TestTensor bias({g.C_out}, bias_dt);
  acltest::Rng rng(seed + 2);
  bias.Fill(rng.Uniform(bias.numel()));
  auto y = TestTensor::Output({g.t_out(), g.B, g.C_out}, out_dt);
  const auto& s = y.strides();
  acltest::AclTensorPtr x_v = x.Ncl(), w_v = w.ConvWeight();
  acltest::AclTensorPtr y_v =
      y.View({g.B, g.C_out, g.t_out()}, {s[1], s[2], s[0]}, 0, ACL_FORMAT_NCL);
  auto stride = acltest::MakeIntArray({1}), pad = acltest::MakeIntArray({g.pad});
  auto dil = acltest::MakeIntArray({1}), op = acltest::MakeIntArray({0});
  const acltest::CallResult r = acltest::RunTwoPhase(
      [&](uint64_t* ws, aclOpExecutor** ex) {
        return aclnnConvolutionGetWorkspaceSize(
            x_v.get(), w_v.get(), with_bias ? bias.get() : nullptr, stride.get(), pad.get(),
            dil.get(), false, op.get(), 1, y_v.get(), 0, ws, ex);
      },
      aclnnConvolution);
  const std::string what = Describe(g, gap) + (with_bias ? ", bias " : ", no bias ") +
                           acltest::DtypeName(bias_dt) + ", output " + acltest::DtypeName(out_dt);
  ASSERT_TRUE(r.ok()) << r.Describe() << "; " << what;
  const std::vector<double> b = with_bias ? bias.values() : std::vector<double>(g.C_out, 0.0);
  EXPECT_TRUE(acltest::CompareToReference("output", y.Read(),
                                          naive::TbcForward(g, x.Values(), w.Values(), b),
                                          y.shape(), acltest::ToleranceFor(out_dt, ACL_BF16)))
      << what;
}

// Every output mask of the backward and the forward with and without bias, bf16 and fp32 outputs,
// through the convolution APIs on time-major views: tbc_amx takes them as it takes ConvTbc.
TEST(TbcAmx, EveryMaskAndBiasOnConvolutionViews) {
  SKIP_WITHOUT_AMX();
  ScopedEnv force("ACLNN_CPU_CONV_ALGO", "tbc_amx");
  ScopedEnv verbose("ACLNN_CPU_VERBOSE", "1");
  ::testing::internal::CaptureStderr();
  size_t plans = 0;
  uint64_t seed = 40;
  for (const naive::TbcGeom& g : {kGeoms[0], kGeoms[2], kGeoms[3], kGeoms[7]})
    for (int64_t gap : {0, 3}) {
      for (int bits = 1; bits < 8; ++bits) {
        const bool mask[3] = {(bits & 1) != 0, (bits & 2) != 0, (bits & 4) != 0};
        plans += CheckBackwardOnViews(g, gap, mask, seed += 3);
      }
      for (aclDataType out_dt : {ACL_BF16, ACL_FLOAT}) {
        CheckForwardOnViews(g, gap, false, ACL_BF16, out_dt, seed += 3);
        CheckForwardOnViews(g, gap, true, ACL_BF16, out_dt, seed += 3);
        CheckForwardOnViews(g, gap, true, ACL_FLOAT, out_dt, seed += 3);
        plans += 3;
      }
    }
  ExpectTbcAmxRan(::testing::internal::GetCapturedStderr(), plans);
}

}  // namespace
