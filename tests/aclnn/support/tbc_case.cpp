#include "support/tbc_case.h"

#include "aclnnop/aclnn_convolution.h"
#include "aclnnop/aclnn_convolution_backward.h"
#include "support/compare.h"

namespace acltest {

::testing::AssertionResult CheckTbcBackward(const TbcCase& c) {
  const uint64_t seed = 7;
  TestTensor gy({c.g.t_out(), c.g.B, c.g.C_out}, c.dtype, c.layout, seed + 1, ACL_FORMAT_ND);
  TestTensor x({c.g.T, c.g.B, c.g.C_in}, c.dtype, c.layout, seed + 2, ACL_FORMAT_ND);
  TestTensor w({c.g.K, c.g.C_in, c.g.C_out}, c.dtype, c.layout, seed + 3, ACL_FORMAT_ND);
  TestTensor b({c.g.C_out}, c.dtype, c.layout, seed + 4, ACL_FORMAT_ND);
  Rng rng(seed);
  gy.Fill(rng.Uniform(gy.numel()));
  x.Fill(rng.Uniform(x.numel()));
  w.Fill(rng.Uniform(w.numel()));
  b.Fill(rng.Uniform(b.numel()));
  TestTensor gi({c.g.T, c.g.B, c.g.C_in}, c.dtype, c.layout, seed + 5, ACL_FORMAT_ND);
  TestTensor gw({c.g.K, c.g.C_in, c.g.C_out}, c.dtype, c.layout, seed + 6, ACL_FORMAT_ND);
  TestTensor gb({c.g.C_out}, c.dtype, c.layout, seed + 7, ACL_FORMAT_ND);
  CallResult r = RunTwoPhase(
      [&](uint64_t* ws, aclOpExecutor** ex) {
        return aclnnConvTbcBackwardGetWorkspaceSize(gy.get(), x.get(), w.get(), b.get(), c.g.pad,
                                                    static_cast<int8_t>(c.cube), gi.get(), gw.get(),
                                                    gb.get(), ws, ex);
      },
      aclnnConvTbcBackward);
  if (!r.ok()) return ::testing::AssertionFailure() << r.Describe();
  const naive::Rounder rd = naive::CubeOperandRounding(c.dtype, c.cube);
  naive::Grads ref =
      naive::TbcBackward(c.g, naive::RoundAll(gy.values(), rd), naive::RoundAll(x.values(), rd),
                         naive::RoundAll(w.values(), rd));
  // gradBias is a plain reduction of gradOutput: no operand rounding.
  ref.bias = naive::TbcBackward(c.g, gy.values(), x.values(), w.values()).bias;
  ::testing::AssertionResult verdict = ::testing::AssertionFailure();
  verdict << "ConvTbcBackward mismatch for " << c.g.Describe() << " layout " << LayoutName(c.layout)
          << " dtype " << DtypeName(c.dtype) << " cube " << c.cube;
  bool failed = false;
  auto check = [&](const char* name, const TestTensor& t, const naive::Result& want) {
    auto res = CompareToReference(name, t.Read(), want, t.shape(), ToleranceFor(c.dtype, c.dtype));
    if (!res) failed = true, verdict << "\n  " << res.message();
    if (!t.OnlyViewWritten()) failed = true, verdict << "\n  " << name << " wrote outside";
  };
  check("gradInput", gi, ref.input);
  check("gradWeight", gw, ref.weight);
  check("gradBias", gb, ref.bias);
  return failed ? verdict : ::testing::AssertionSuccess();
}

// aclnnConvTbc (forward, with bias) on the per-tap GEMM path.
::testing::AssertionResult CheckTbcForward(const TbcCase& c) {
  const uint64_t seed = 11;
  TestTensor x({c.g.T, c.g.B, c.g.C_in}, c.dtype, c.layout, seed + 1, ACL_FORMAT_ND);
  TestTensor w({c.g.K, c.g.C_in, c.g.C_out}, c.dtype, c.layout, seed + 2, ACL_FORMAT_ND);
  TestTensor b({c.g.C_out}, c.dtype, c.layout, seed + 3, ACL_FORMAT_ND);
  Rng rng(seed);
  x.Fill(rng.Uniform(x.numel()));
  w.Fill(rng.Uniform(w.numel()));
  b.Fill(rng.Uniform(b.numel()));
  TestTensor y({c.g.t_out(), c.g.B, c.g.C_out}, c.dtype, c.layout, seed + 4, ACL_FORMAT_ND);
  CallResult r = RunTwoPhase(
      [&](uint64_t* ws, aclOpExecutor** ex) {
        return aclnnConvTbcGetWorkspaceSize(x.get(), w.get(), b.get(), c.g.pad, y.get(),
                                            static_cast<int8_t>(c.cube), ws, ex);
      },
      aclnnConvTbc);
  if (!r.ok()) return ::testing::AssertionFailure() << r.Describe();
  const naive::Rounder rd = naive::CubeOperandRounding(c.dtype, c.cube);
  const naive::Result ref = naive::TbcForward(c.g, naive::RoundAll(x.values(), rd),
                                              naive::RoundAll(w.values(), rd), b.values());
  auto cmp = CompareToReference("output", y.Read(), ref, y.shape(), ToleranceFor(c.dtype, c.dtype));
  if (!cmp)
    return ::testing::AssertionFailure() << c.g.Describe() << " dtype " << DtypeName(c.dtype)
                                         << " cube " << c.cube << "\n  " << cmp.message();
  if (!y.OnlyViewWritten()) return ::testing::AssertionFailure() << "output wrote outside";
  return ::testing::AssertionSuccess();
}

}  // namespace acltest
