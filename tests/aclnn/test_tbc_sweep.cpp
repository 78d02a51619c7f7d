// ConvTbc sweep: aclnnConvTbcBackward and aclnnConvTbc against the naive float64 TBC reference for
// pad {0,1,3} x K {1,2,3,5} x T (incl. T_out = 1) x B {1,3} with odd channel counts, under dtypes,
// non-contiguous layouts and cubeMathType; and aclnnConvolutionBackward of the equivalent conv1d
// run on zero-copy permuted views of the same TBC buffers (input [T,B,C] seen as [B,C,T] through
// its strides, weight [K,Cin,Cout] as [Cout,Cin,K], gradients written straight into TBC storage).
#include <sstream>
#include <vector>

#include <gtest/gtest.h>

#include "aclnnop/aclnn_convolution.h"
#include "aclnnop/aclnn_convolution_backward.h"
#include "support/acl_test_util.h"
#include "support/compare.h"
#include "support/naive_conv.h"

namespace {

using acltest::Layout;
using acltest::TestTensor;

struct TbcCase {
  naive::TbcGeom g;
  aclDataType dtype = ACL_FLOAT;
  Layout layout = Layout::kContiguous;
  int cube = 0;
  uint64_t seed = 1;

  std::string Describe() const {
    std::ostringstream os;
    os << g.Describe() << "; dtype " << acltest::DtypeName(dtype) << "; layout "
       << acltest::LayoutName(layout) << "; cubeMathType " << cube << "; seed " << seed;
    return os.str();
  }
  std::string Name() const {
    std::ostringstream os;
    os << "T" << g.T << "_B" << g.B << "_Ci" << g.C_in << "_Co" << g.C_out << "_K" << g.K << "_p"
       << g.pad;
    return os.str();
  }
};
void PrintTo(const TbcCase& c, std::ostream* os) {
  *os << c.Describe();
}

std::vector<TbcCase> Geometries() {
  std::vector<TbcCase> v;
  uint64_t seed = 1;
  for (int64_t pad : {0, 1, 3})
    for (int64_t K : {1, 2, 3, 5})
      for (int64_t T :
           {std::max<int64_t>(1, K - 2 * pad), int64_t{7}})  // first: T_out = 1 if possible
        for (int64_t B : {1, 3}) {
          TbcCase c;
          c.g = naive::TbcGeom{T, B, B == 1 ? 1 : 3, B == 1 ? 5 : 7, K, pad};
          c.seed = seed++;
          v.push_back(c);
        }
  return v;
}

// f32, f16, bf16 contiguous; f32 permuted and padded (offset + gaps); f16 padded; f32 with
// cubeMathType 1 (HF32) and 2 (FP16).
std::vector<TbcCase> Variants(const TbcCase& base) {
  struct Axis {
    aclDataType dt;
    Layout layout;
    int cube;
  };
  const Axis kAxes[] = {{ACL_FLOAT, Layout::kContiguous, 0}, {ACL_FLOAT16, Layout::kContiguous, 0},
                        {ACL_BF16, Layout::kContiguous, 0},  {ACL_FLOAT, Layout::kPermuted, 0},
                        {ACL_FLOAT, Layout::kPadded, 0},     {ACL_FLOAT16, Layout::kPadded, 0},
                        {ACL_FLOAT, Layout::kContiguous, 1}, {ACL_FLOAT, Layout::kContiguous, 2}};
  std::vector<TbcCase> out;
  for (const Axis& a : kAxes) {
    TbcCase c = base;
    c.dtype = a.dt, c.layout = a.layout, c.cube = a.cube;
    out.push_back(c);
  }
  return out;
}

// Seeded operands of one case, in TBC layout.
struct Operands {
  TestTensor gy, x, w, b;
  explicit Operands(const TbcCase& c)
      : gy({c.g.t_out(), c.g.B, c.g.C_out}, c.dtype, c.layout, c.seed * 8 + 1, ACL_FORMAT_ND),
        x({c.g.T, c.g.B, c.g.C_in}, c.dtype, c.layout, c.seed * 8 + 2, ACL_FORMAT_ND),
        w({c.g.K, c.g.C_in, c.g.C_out}, c.dtype, c.layout, c.seed * 8 + 3, ACL_FORMAT_ND),
        b({c.g.C_out}, c.dtype, c.layout, c.seed * 8 + 4, ACL_FORMAT_ND) {
    acltest::Rng rng(c.seed);
    gy.Fill(rng.Uniform(gy.numel()));
    x.Fill(rng.Uniform(x.numel()));
    w.Fill(rng.Uniform(w.numel()));
    b.Fill(rng.Uniform(b.numel()));
  }
};

struct Outputs {
  TestTensor gi, gw, gb;
  Outputs(const TbcCase& c, uint64_t salt)
      : gi({c.g.T, c.g.B, c.g.C_in}, c.dtype, c.layout, c.seed * 8 + salt, ACL_FORMAT_ND),
        gw({c.g.K, c.g.C_in, c.g.C_out}, c.dtype, c.layout, c.seed * 8 + salt + 1, ACL_FORMAT_ND),
        gb({c.g.C_out}, c.dtype, c.layout, c.seed * 8 + salt + 2, ACL_FORMAT_ND) {}
};

naive::Grads Reference(const TbcCase& c, const Operands& o) {
  const naive::Rounder r = naive::CubeOperandRounding(c.dtype, c.cube);
  naive::Grads ref =
      naive::TbcBackward(c.g, naive::RoundAll(o.gy.values(), r), naive::RoundAll(o.x.values(), r),
                         naive::RoundAll(o.w.values(), r));
  // gradBias is a plain reduction of gradOutput: no operand rounding.
  ref.bias = naive::TbcBackward(c.g, o.gy.values(), o.x.values(), o.w.values()).bias;
  return ref;
}

::testing::AssertionResult CheckGrads(const std::string& api, const TbcCase& c, const Outputs& out,
                                      const naive::Grads& ref) {
  ::testing::AssertionResult verdict = ::testing::AssertionFailure();
  verdict << api << " mismatch for " << c.Describe();
  bool failed = false;
  auto check = [&](const char* name, const TestTensor& t, const naive::Result& want) {
    auto r = acltest::CompareToReference(name, t.Read(), want, t.shape(),
                                         acltest::ToleranceFor(t.dtype(), c.dtype));
    if (!r) failed = true, verdict << "\n  " << r.message();
    if (!t.OnlyViewWritten()) failed = true, verdict << "\n  " << name << " wrote outside its view";
  };
  check("gradInput", out.gi, ref.input);
  check("gradWeight", out.gw, ref.weight);
  check("gradBias", out.gb, ref.bias);
  return failed ? verdict : ::testing::AssertionSuccess();
}

::testing::AssertionResult CheckTbcBackward(const TbcCase& c) {
  Operands o(c);
  Outputs out(c, 5);
  acltest::CallResult r = acltest::RunTwoPhase(
      [&](uint64_t* ws, aclOpExecutor** ex) {
        return aclnnConvTbcBackwardGetWorkspaceSize(
            o.gy.get(), o.x.get(), o.w.get(), o.b.get(), c.g.pad, static_cast<int8_t>(c.cube),
            out.gi.get(), out.gw.get(), out.gb.get(), ws, ex);
      },
      aclnnConvTbcBackward);
  if (!r.ok()) {
    return ::testing::AssertionFailure()
           << "aclnnConvTbcBackward failed for " << c.Describe() << ": " << r.Describe();
  }
  return CheckGrads("aclnnConvTbcBackward", c, out, Reference(c, o));
}

::testing::AssertionResult CheckTbcForward(const TbcCase& c) {
  Operands o(c);
  TestTensor y({c.g.t_out(), c.g.B, c.g.C_out}, c.dtype, c.layout, c.seed * 8 + 5, ACL_FORMAT_ND);
  acltest::CallResult r = acltest::RunTwoPhase(
      [&](uint64_t* ws, aclOpExecutor** ex) {
        return aclnnConvTbcGetWorkspaceSize(o.x.get(), o.w.get(), o.b.get(), c.g.pad, y.get(),
                                            static_cast<int8_t>(c.cube), ws, ex);
      },
      aclnnConvTbc);
  if (!r.ok()) {
    return ::testing::AssertionFailure()
           << "aclnnConvTbc failed for " << c.Describe() << ": " << r.Describe();
  }
  const naive::Rounder rd = naive::CubeOperandRounding(c.dtype, c.cube);
  naive::Result ref = naive::TbcForward(c.g, naive::RoundAll(o.x.values(), rd),
                                        naive::RoundAll(o.w.values(), rd), o.b.values());
  ::testing::AssertionResult cmp = acltest::CompareToReference(
      "output", y.Read(), ref, y.shape(), acltest::ToleranceFor(c.dtype, c.dtype));
  if (!cmp) {
    return ::testing::AssertionFailure()
           << "aclnnConvTbc mismatch for " << c.Describe() << "\n  " << cmp.message();
  }
  if (!y.OnlyViewWritten()) {
    return ::testing::AssertionFailure()
           << "aclnnConvTbc output wrote outside its view, " << c.Describe();
  }
  return ::testing::AssertionSuccess();
}

// The same gradients through aclnnConvolutionBackward (conv1d, stride 1, padding pad) on
// permuted zero-copy views: [T,B,C] with strides (sT,sB,sC) is [B,C,T] with (sB,sC,sT), and
// [K,Cin,Cout] with (sK,sCi,sCo) is the conv weight [Cout,Cin,K] with (sCo,sCi,sK).
::testing::AssertionResult CheckConv1dOnViews(const TbcCase& c) {
  Operands o(c);
  Outputs out(c, 8);
  auto as_ncl = [](const TestTensor& t) {  // [A, B, C] -> [B, C, A]
    const auto& s = t.strides();
    return t.View({t.shape()[1], t.shape()[2], t.shape()[0]}, {s[1], s[2], s[0]}, t.offset(),
                  ACL_FORMAT_NCL);
  };
  auto as_weight = [](const TestTensor& t) {  // [K, Cin, Cout] -> [Cout, Cin, K]
    const auto& s = t.strides();
    return t.View({t.shape()[2], t.shape()[1], t.shape()[0]}, {s[2], s[1], s[0]}, t.offset(),
                  ACL_FORMAT_NCL);
  };
  acltest::AclTensorPtr gy = as_ncl(o.gy), x = as_ncl(o.x), w = as_weight(o.w);
  acltest::AclTensorPtr gi = as_ncl(out.gi), gw = as_weight(out.gw);
  acltest::IntArrayPtr stride = acltest::MakeIntArray({1}), pad = acltest::MakeIntArray({c.g.pad});
  acltest::IntArrayPtr dil = acltest::MakeIntArray({1}), op = acltest::MakeIntArray({0});
  acltest::IntArrayPtr bias_sizes = acltest::MakeIntArray({c.g.C_out});
  acltest::BoolArrayPtr mask = acltest::MakeBoolArray({true, true, true});
  acltest::CallResult r = acltest::RunTwoPhase(
      [&](uint64_t* ws, aclOpExecutor** ex) {
        return aclnnConvolutionBackwardGetWorkspaceSize(
            gy.get(), x.get(), w.get(), bias_sizes.get(), stride.get(), pad.get(), dil.get(), false,
            op.get(), 1, mask.get(), static_cast<int8_t>(c.cube), gi.get(), gw.get(), out.gb.get(),
            ws, ex);
      },
      aclnnConvolutionBackward);
  if (!r.ok()) {
    return ::testing::AssertionFailure() << "aclnnConvolutionBackward on TBC views failed for "
                                         << c.Describe() << ": " << r.Describe();
  }
  return CheckGrads("aclnnConvolutionBackward on TBC views", c, out, Reference(c, o));
}

class TbcSweep : public ::testing::TestWithParam<TbcCase> {};

TEST_P(TbcSweep, Backward) {
  for (const TbcCase& c : Variants(GetParam())) EXPECT_TRUE(CheckTbcBackward(c));
}
TEST_P(TbcSweep, Forward) {
  for (const TbcCase& c : Variants(GetParam())) EXPECT_TRUE(CheckTbcForward(c));
}
TEST_P(TbcSweep, Conv1dBackwardOnPermutedViews) {
  for (const TbcCase& c : Variants(GetParam())) EXPECT_TRUE(CheckConv1dOnViews(c));
}

// The time-major 16-bit forms forced at the sweep's sizes (they are chosen from larger ones):
// tbc_bf16 where the bf16 dot kernels run, tbc_convert for fp16 and USE_FP16 (and bf16
// elsewhere), so the sanitizer stage, which runs this sweep, reads their tails too.
TEST_P(TbcSweep, ForcedTimeMajorForms) {
  acltest::ScopedEnv force("ACLNN_CPU_CONV_ALGO", "tbc_bf16,tbc_convert");
  for (const TbcCase& v : Variants(GetParam())) {
    if (v.layout != Layout::kContiguous || (v.dtype == ACL_FLOAT && v.cube == 0)) continue;
    EXPECT_TRUE(CheckTbcBackward(v));
    EXPECT_TRUE(CheckTbcForward(v));
  }
}

INSTANTIATE_TEST_SUITE_P(Tbc, TbcSweep, ::testing::ValuesIn(Geometries()),
                         [](const ::testing::TestParamInfo<TbcCase>& info) {
                           return info.param.Name();
                         });

}  // namespace
