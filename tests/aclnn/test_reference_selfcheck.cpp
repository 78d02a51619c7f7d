// Checks the test support itself: the float64 naive convolution reference (hand-computed cases,
// finite differences, adjoint identities, regular vs transposed vs ConvTbc formulations), the
// float-format rounding used to emulate cubeMathType, the strided test tensors and the comparator.
#include <cmath>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "support/acl_test_util.h"
#include "support/compare.h"
#include "support/conv_case.h"
#include "support/naive_conv.h"

namespace {

using acltest::MakeGeom;
using naive::ConvGeom;

double Dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

std::vector<double> Ints(std::initializer_list<double> v) {
  return v;
}

// ---- hand-computed cases -------------------------------------------------------------------

TEST(NaiveConv, HandComputed1d) {
  // x = [1, 2, 3], w = [1, 1], stride 1, no padding: y = [1+2, 2+3] = [3, 5].
  // With gy = [1, 1]: gx = [1, 1+1, 1] = [1, 2, 1]; gw = [1*1 + 2*1, 2*1 + 3*1] = [3, 5]; gb = 2.
  ConvGeom g = MakeGeom({1, 1, 3}, {1, 1, 2}, {1}, {0}, {1}, 1);
  EXPECT_EQ(naive::ConvForward(g, {1, 2, 3}, {1, 1}, {}).value, Ints({3, 5}));
  naive::Grads gr = naive::ConvBackward(g, {1, 1}, {1, 2, 3}, {1, 1});
  EXPECT_EQ(gr.input.value, Ints({1, 2, 1}));
  EXPECT_EQ(gr.weight.value, Ints({3, 5}));
  EXPECT_EQ(gr.bias.value, Ints({2}));
  EXPECT_EQ(gr.input.scale, Ints({1, 2, 1}));  // |gy * w| summed per element
}

TEST(NaiveConv, HandComputedStridePadBias) {
  // x = [1, 2, 3] padded to [0, 1, 2, 3, 0], w = [1, 10, 100], stride 2: out = (3+2-3)/2+1 = 2,
  // y0 = 0*1 + 1*10 + 2*100 = 210, y1 = 2*1 + 3*10 + 0*100 = 32; bias 0.5 added to both.
  ConvGeom g = MakeGeom({1, 1, 3}, {1, 1, 3}, {2}, {1}, {1}, 1);
  naive::Result y = naive::ConvForward(g, {1, 2, 3}, {1, 10, 100}, {0.5});
  EXPECT_EQ(y.value, Ints({210.5, 32.5}));
  EXPECT_EQ(y.scale, Ints({210.5, 32.5}));
}

TEST(NaiveConv, HandComputedTransposed) {
  // x = [1, 2], w = [1, 10, 100], stride 2, no padding: out = (2-1)*2 + 3 = 5, o = 2i + k:
  // i=0 -> o0 += 1, o1 += 10, o2 += 100; i=1 -> o2 += 2, o3 += 20, o4 += 200.
  ConvGeom g = MakeGeom({1, 1, 2}, {1, 1, 3}, {2}, {0}, {1}, 1, true);
  EXPECT_EQ(naive::ConvForward(g, {1, 2}, {1, 10, 100}, {}).value, Ints({1, 10, 102, 20, 200}));
  // pad 1, output_padding 1: out = (2-1)*2 - 2 + 2 + 1 + 1 = 4, o = 2i - 1 + k:
  // i=0 -> (o=-1 dropped), o0 += 10, o1 += 100; i=1 -> o1 += 2, o2 += 20, o3 += 200.
  ConvGeom gp = MakeGeom({1, 1, 2}, {1, 1, 3}, {2}, {1}, {1}, 1, true, {1});
  EXPECT_EQ(naive::ConvForward(gp, {1, 2}, {1, 10, 100}, {}).value, Ints({10, 102, 20, 200}));
}

TEST(NaiveConv, HandComputedDilationGroupsAsym) {
  // 3x3 input 1..9, 2x2 identity kernel with dilation 2 touches (0,0) and (2,2): 1 + 9 = 10.
  ConvGeom g = MakeGeom({1, 1, 3, 3}, {1, 1, 2, 2}, {1, 1}, {0, 0}, {2, 2}, 1);
  EXPECT_EQ(naive::ConvForward(g, {1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 0, 0, 1}, {}).value, Ints({10}));
  // groups 2: channel 0 [1, 2] * 2, channel 1 [3, 4] * 5.
  ConvGeom gg = MakeGeom({1, 2, 2}, {2, 1, 1}, {1}, {0}, {1}, 2);
  EXPECT_EQ(naive::ConvForward(gg, {1, 2, 3, 4}, {2, 5}, {}).value, Ints({2, 4, 15, 20}));
  // 1x2 input [1, 2], 1x1 kernel 1, padding [top 1, bottom 0, left 0, right 2]: output 2x4 with
  // the input at row 1, columns 0-1.
  ConvGeom ga =
      acltest::MakeGeom2dAsym({1, 1, 1, 2}, {1, 1, 1, 1}, {1, 1}, {1, 0, 0, 2}, {1, 1}, 1);
  EXPECT_EQ(ga.output(), (std::vector<int64_t>{1, 1, 2, 4}));
  EXPECT_EQ(naive::ConvForward(ga, {1, 2}, {1}, {}).value, Ints({0, 0, 0, 0, 1, 2, 0, 0}));
}

TEST(NaiveConv, HandComputedTbc) {
  // T=3, x = [1, 2, 3], K=2, w = [1, 10], pad 1: T_out = 3 + 2 + 1 - 2 = 4,
  // out[t] = x[t-1]*1 + x[t]*10: [10, 1 + 20, 2 + 30, 3] (+ bias 1).
  naive::TbcGeom g{3, 1, 1, 1, 2, 1};
  EXPECT_EQ(naive::TbcForward(g, {1, 2, 3}, {1, 10}, {1}).value, Ints({11, 22, 33, 4}));
  // gy = [1, 0, 0, 1]: gx[i] = sum over (t, k) with t-1+k = i of gy[t]*w[k]: gx0 = gy0*10 = 10,
  // gx1 = 0, gx2 = gy3*1 = 1; gw[k] = sum_t gy[t]*x[t-1+k]: gw0 = gy3*x2 = 3, gw1 = gy0*x0 = 1.
  naive::Grads gr = naive::TbcBackward(g, {1, 0, 0, 1}, {1, 2, 3}, {1, 10});
  EXPECT_EQ(gr.input.value, Ints({10, 0, 1}));
  EXPECT_EQ(gr.weight.value, Ints({3, 1}));
  EXPECT_EQ(gr.bias.value, Ints({2}));
}

// ---- identities over many geometries -----------------------------------------------------

std::vector<acltest::ConvCase> SelfCheckGeoms() {
  std::vector<acltest::ConvCase> v = acltest::RepresentativeCases();
  std::vector<acltest::ConvCase> x = acltest::GeometricCrossProduct();
  for (size_t i = 0; i < x.size(); i += 7) v.push_back(x[i]);  // a spread of the cross product
  return v;
}

std::vector<acltest::ConvCase> AllGeoms() {
  std::vector<acltest::ConvCase> v = acltest::RepresentativeCases();
  for (acltest::ConvCase& c : acltest::GeometricCrossProduct()) v.push_back(c);
  return v;
}

TEST(NaiveConv, AdjointIdentities) {
  // <conv(x, w), g> = <x, dL/dx> = <w, dL/dw>, and <b, dL/db> = <b broadcast, g>.
  for (const acltest::ConvCase& c : SelfCheckGeoms()) {
    acltest::Rng rng(c.seed);
    const ConvGeom& g = c.geom;
    const std::vector<int64_t> out = g.output();
    auto x = rng.Uniform(acltest::Numel(g.input)), w = rng.Uniform(acltest::Numel(g.weight));
    auto gy = rng.Uniform(acltest::Numel(out)), b = rng.Uniform(out[1]);
    const double lhs = Dot(naive::ConvForward(g, x, w, {}).value, gy);
    naive::Grads gr = naive::ConvBackward(g, gy, x, w);
    const double tol = 1e-12 * (1 + std::fabs(lhs) + Dot(gr.input.scale, gr.input.scale));
    EXPECT_NEAR(Dot(x, gr.input.value), lhs, tol) << g.Describe();
    EXPECT_NEAR(Dot(w, gr.weight.value), lhs, tol) << g.Describe();
    std::vector<double> zero_x(x.size(), 0.0);
    EXPECT_NEAR(Dot(naive::ConvForward(g, zero_x, w, b).value, gy), Dot(b, gr.bias.value), tol)
        << g.Describe();
  }
}

TEST(NaiveConv, FiniteDifferences) {
  // L(x, w, b) = sum(conv(x, w) + b) . gy; central differences in double against the gradients.
  for (const acltest::ConvCase& c : acltest::RepresentativeCases()) {
    const ConvGeom& g = c.geom;
    if (acltest::Numel(g.input) + acltest::Numel(g.weight) > 700) continue;  // keep it quick
    acltest::Rng rng(c.seed + 1);
    const std::vector<int64_t> out = g.output();
    auto x = rng.Uniform(acltest::Numel(g.input)), w = rng.Uniform(acltest::Numel(g.weight));
    auto gy = rng.Uniform(acltest::Numel(out)), b = rng.Uniform(out[1]);
    auto loss = [&] { return Dot(naive::ConvForward(g, x, w, b).value, gy); };
    naive::Grads gr = naive::ConvBackward(g, gy, x, w);
    const double h = 1e-3;  // L is linear in each variable: the difference is exact but rounding
    auto check = [&](std::vector<double>& v, const naive::Result& grad, const char* what) {
      for (size_t i = 0; i < v.size(); ++i) {
        const double keep = v[i];
        v[i] = keep + h;
        const double up = loss();
        v[i] = keep - h;
        const double down = loss();
        v[i] = keep;
        ASSERT_NEAR((up - down) / (2 * h), grad.value[i], 1e-8)
            << what << " " << i << " of " << g.Describe();
      }
    };
    check(x, gr.input, "dL/dx");
    check(w, gr.weight, "dL/dw");
    check(b, gr.bias, "dL/db");
  }
}

// The transposed reference (its own loop) against the regular one with the roles swapped: for a
// transposed geometry T (input [N, Cin, ...] -> [N, Cout, ...]) the regular geometry R with input
// T's output shape and the same weight maps back to T's input shape, and
//   T.forward(x, w) = R.backward(gy = x).input,  T.backward(gy).input = R.forward(gy, w),
//   T.backward(gy, x).weight = R.backward(gy = x, input = gy).weight.
TEST(NaiveConv, TransposedAgreesWithRegularAdjoint) {
  int checked = 0;
  for (const acltest::ConvCase& c : AllGeoms()) {
    const ConvGeom& t = c.geom;
    if (!t.transposed) continue;
    ConvGeom r = t;
    r.transposed = false;
    r.input = t.output();
    r.output_padding.assign(t.spatial(), 0);
    ASSERT_EQ(r.output(), t.input) << t.Describe();
    acltest::Rng rng(c.seed + 2);
    auto x = rng.Uniform(acltest::Numel(t.input)), w = rng.Uniform(acltest::Numel(t.weight));
    auto gy = rng.Uniform(acltest::Numel(r.input));
    naive::Result tf = naive::ConvForward(t, x, w, {});
    naive::Grads tb = naive::ConvBackward(t, gy, x, w);
    naive::Grads rb = naive::ConvBackward(r, x, gy, w);
    naive::Result rf = naive::ConvForward(r, gy, w, {});
    for (size_t i = 0; i < tf.value.size(); ++i) ASSERT_NEAR(tf.value[i], rb.input.value[i], 1e-12);
    for (size_t i = 0; i < rf.value.size(); ++i) ASSERT_NEAR(tb.input.value[i], rf.value[i], 1e-12);
    for (size_t i = 0; i < tb.weight.value.size(); ++i) {
      ASSERT_NEAR(tb.weight.value[i], rb.weight.value[i], 1e-12) << t.Describe();
    }
    ++checked;
  }
  EXPECT_GT(checked, 400);
}

TEST(NaiveConv, TbcAgreesWithConv1d) {
  // conv_tbc(x [T,B,Ci], w [K,Ci,Co]) = conv1d(x as [B,Ci,T], w as [Co,Ci,K], pad) as [T,B,Co].
  for (int64_t pad : {0, 1, 3})
    for (int64_t K : {1, 2, 3, 5}) {
      naive::TbcGeom tg{6, 3, 5, 7, K, pad};
      acltest::Rng rng(static_cast<uint64_t>(pad * 10 + K));
      auto x = rng.Uniform(tg.T * tg.B * tg.C_in), w = rng.Uniform(K * tg.C_in * tg.C_out);
      auto b = rng.Uniform(tg.C_out), gy = rng.Uniform(tg.t_out() * tg.B * tg.C_out);
      std::vector<double> xc(x.size()), wc(w.size()), gyc(gy.size());
      for (int64_t t = 0; t < tg.T; ++t)
        for (int64_t n = 0; n < tg.B; ++n)
          for (int64_t c = 0; c < tg.C_in; ++c)
            xc[(n * tg.C_in + c) * tg.T + t] = x[(t * tg.B + n) * tg.C_in + c];
      for (int64_t k = 0; k < K; ++k)
        for (int64_t ci = 0; ci < tg.C_in; ++ci)
          for (int64_t co = 0; co < tg.C_out; ++co)
            wc[(co * tg.C_in + ci) * K + k] = w[(k * tg.C_in + ci) * tg.C_out + co];
      for (int64_t t = 0; t < tg.t_out(); ++t)
        for (int64_t n = 0; n < tg.B; ++n)
          for (int64_t c = 0; c < tg.C_out; ++c)
            gyc[(n * tg.C_out + c) * tg.t_out() + t] = gy[(t * tg.B + n) * tg.C_out + c];
      ConvGeom cg = MakeGeom({tg.B, tg.C_in, tg.T}, {tg.C_out, tg.C_in, K}, {1}, {pad}, {1}, 1);
      naive::Result y = naive::TbcForward(tg, x, w, b), yc = naive::ConvForward(cg, xc, wc, b);
      naive::Grads g = naive::TbcBackward(tg, gy, x, w), gc = naive::ConvBackward(cg, gyc, xc, wc);
      for (int64_t t = 0; t < tg.t_out(); ++t)
        for (int64_t n = 0; n < tg.B; ++n)
          for (int64_t c = 0; c < tg.C_out; ++c)
            ASSERT_NEAR(y.value[(t * tg.B + n) * tg.C_out + c],
                        yc.value[(n * tg.C_out + c) * tg.t_out() + t], 1e-12);
      for (int64_t t = 0; t < tg.T; ++t)
        for (int64_t n = 0; n < tg.B; ++n)
          for (int64_t c = 0; c < tg.C_in; ++c)
            ASSERT_NEAR(g.input.value[(t * tg.B + n) * tg.C_in + c],
                        gc.input.value[(n * tg.C_in + c) * tg.T + t], 1e-12);
      for (int64_t k = 0; k < K; ++k)
        for (int64_t ci = 0; ci < tg.C_in; ++ci)
          for (int64_t co = 0; co < tg.C_out; ++co)
            ASSERT_NEAR(g.weight.value[(k * tg.C_in + ci) * tg.C_out + co],
                        gc.weight.value[(co * tg.C_in + ci) * K + k], 1e-12);
      for (int64_t co = 0; co < tg.C_out; ++co)
        ASSERT_NEAR(g.bias.value[co], gc.bias.value[co], 1e-12);
    }
}

// ---- float formats ---------------------------------------------------------------------------

TEST(FloatFormats, F16RoundTripsEveryBitPattern) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    double v = acltest::DecodeF16(static_cast<uint16_t>(bits));
    if (std::isnan(v)) continue;
    ASSERT_EQ(acltest::EncodeF16(v), bits) << std::hex << bits;
    ASSERT_EQ(acltest::RoundToF16(v), v);
  }
}

TEST(FloatFormats, F16MatchesCompilerConversion) {
#ifndef __FLT16_MANT_DIG__  // clang 14 has no _Float16 on x86 without AVX512-FP16
  GTEST_SKIP() << "this compiler has no _Float16 to compare with (GCC builds run this test)";
#else
  acltest::Rng rng(3);
  for (int i = 0; i < 200000; ++i) {
    // magnitudes from deep subnormal to overflow, plus exact ties (odd multiples of half an ulp)
    double v = std::ldexp(rng.Uniform(1, -1, 1)[0], static_cast<int>(rng.Int(-26, 17)));
    if (i % 2) v = std::ldexp(static_cast<double>(2 * rng.Int(1024, 4095) + 1), -12);
    ASSERT_EQ(acltest::RoundToF16(v), static_cast<double>(static_cast<_Float16>(v))) << v;
  }
  EXPECT_EQ(acltest::RoundToF16(1 + std::ldexp(1, -11)), 1.0);  // tie -> even
  EXPECT_EQ(acltest::RoundToF16(1 + 3 * std::ldexp(1, -11)), 1 + std::ldexp(1, -9));
  EXPECT_EQ(acltest::RoundToF16(65519.0), 65504.0);
  EXPECT_TRUE(std::isinf(acltest::RoundToF16(65520.0)));
#endif
}

// Round-to-nearest-even of a float bit pattern, dropping the low `drop` bits (bf16: 16, HF32: 12).
float DropLowBits(float f, int drop) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint32_t half = 1u << (drop - 1), lsb = (u >> drop) & 1u;
  u = (u + half - 1 + lsb) & ~((1u << drop) - 1);
  std::memcpy(&f, &u, 4);
  return f;
}

TEST(FloatFormats, Bf16AndHf32MatchBitDropping) {
  acltest::Rng rng(4);
  for (int i = 0; i < 200000; ++i) {
    auto f = static_cast<float>(
        std::ldexp(rng.Uniform(1, -1, 1)[0], static_cast<int>(rng.Int(-140, 120))));
    ASSERT_EQ(acltest::RoundToBF16(f), DropLowBits(f, 16)) << f;
    ASSERT_EQ(acltest::RoundToHF32(f), DropLowBits(f, 12)) << f;
    uint16_t b = acltest::EncodeBF16(f);
    ASSERT_EQ(acltest::DecodeBF16(b), acltest::RoundToBF16(f));
  }
  EXPECT_EQ(acltest::UlpOf(1.0, ACL_FLOAT16), std::ldexp(1, -10));
  EXPECT_EQ(acltest::UlpOf(3.0, ACL_BF16), std::ldexp(1, -6));
}

// ---- test tensors and the comparator -------------------------------------------------------

TEST(TestTensor, FillReadRoundTripInEveryLayoutAndDtype) {
  for (aclDataType dt : {ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_DOUBLE})
    for (acltest::Layout lay :
         {acltest::Layout::kContiguous, acltest::Layout::kPermuted, acltest::Layout::kPadded})
      for (const std::vector<int64_t>& shape : std::vector<std::vector<int64_t>>{
               {5}, {2, 3, 4}, {3, 1, 2, 5}, {2, 2, 1, 3, 2}, {0, 3}}) {
        acltest::TestTensor t(shape, dt, lay, 11);
        acltest::StridedLayout l = acltest::MakeLayout(shape, lay, 11);
        if (lay != acltest::Layout::kContiguous && shape.size() >= 2) {
          EXPECT_NE(l.strides, acltest::MakeLayout(shape, acltest::Layout::kContiguous, 0).strides);
        }
        auto v = acltest::Rng(5).Uniform(t.numel(), -3, 3);
        t.Fill(v);
        EXPECT_EQ(t.Read(), t.values()) << t.Describe();
        EXPECT_TRUE(t.OnlyViewWritten());
        for (size_t i = 0; i < v.size(); ++i)
          ASSERT_EQ(t.values()[i], acltest::RoundToDtype(v[i], dt));
      }
}

TEST(Compare, FlagsOneWrongTermAndNaN) {
  naive::Result want{{1.0, 2.0, 0.0}, {3.0, 2.0, 0.0}};
  auto tol = acltest::ToleranceFor(ACL_FLOAT, ACL_FLOAT);
  EXPECT_TRUE(acltest::CompareToReference("y", {1.0, 2.0, 0.0}, want, {3}, tol));
  EXPECT_FALSE(acltest::CompareToReference("y", {1.0, 2.001, 0.0}, want, {3}, tol));
  EXPECT_FALSE(acltest::CompareToReference("y", {1.0, 2.0, 1e-30}, want, {3}, tol));
  EXPECT_FALSE(acltest::CompareToReference("y", {NAN, 2.0, 0.0}, want, {3}, tol));
  // f16 output: one ulp at the scale is allowed, two are not.
  auto t16 = acltest::ToleranceFor(ACL_FLOAT16, ACL_FLOAT16);
  EXPECT_TRUE(
      acltest::CompareToReference("y", {1.0 + std::ldexp(1, -10), 2.0, 0.0}, want, {3}, t16));
  EXPECT_FALSE(
      acltest::CompareToReference("y", {1.0 + std::ldexp(1, -8), 2.0, 0.0}, want, {3}, t16));
}

}  // namespace
