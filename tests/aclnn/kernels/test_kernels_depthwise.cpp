// The depthwise plane kernels (conv/kernels/depthwise/depthwise.h) called directly, every variant
// this process may run (fp32 AVX-512 and AVX2 + FMA; bf16 weight sums on AVX512_BF16), against the
// header's contract in float64, one [D, H, W] plane per call:
//
//   forward        y[o] = sum_q w[q] * x[o * s - pb + q * dil]
//   backward_data  dx[i] = sum_{j < m, q} w[j * K + q] * dy_j[o]      for o * s - pb + q * dil = i
//   tap sums       total[q] += sum_o dy[o] * x[o * s - pb + q * dil]
//
// terms whose input index lies outside the plane left out (padding). The planes sit between NaN
// guards (a read past them fails) and an output's guard must stay unwritten. Edges: rows around
// the vectors of 8 / 16 / 32 and the 64-column limit, every kernel width, padding wider than the
// kernel, negative padding (cropping), dilation, 3d planes, several dy planes, and the shapes a
// kernel declines (returning false, touching nothing).
#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "conv/kernels/depthwise/depthwise.h"
#include "kernel_tester.h"

namespace {

namespace conv = aclnn_cpu::conv;
using namespace kernel_test;

constexpr int64_t kGuard = 16;  // NaN floats each side of an input plane, unwritten after outputs

enum class Pass { kForward, kBackwardData, kTapSums, kBackwardData16 };

// fp16 bits of f rounded to nearest even (f finite), for the 16-bit data gradient.
uint16_t ToHalf(float f) {
  const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  const double a = std::fabs(static_cast<double>(f));
  if (a < std::ldexp(1.0, -14))  // subnormal (1024: the smallest normal, encoded alike)
    return sign | static_cast<uint16_t>(std::nearbyint(std::ldexp(a, 24)));
  int e = std::ilogb(a);
  double q = std::nearbyint(std::ldexp(a, 10 - e));
  if (q == 2048) q = 1024, ++e;
  if (e > 15) return sign | 0x7c00;
  return sign | static_cast<uint16_t>((e + 15) << 10 | (static_cast<int>(q) - 1024));
}

class DepthwiseTester {
 public:
  DepthwiseTester& in(int64_t d, int64_t h, int64_t w) { return g_.in = {d, h, w}, *this; }
  DepthwiseTester& k(int64_t d, int64_t h, int64_t w) { return g_.k = {d, h, w}, *this; }
  DepthwiseTester& dil(int64_t d, int64_t h, int64_t w) { return g_.dil = {d, h, w}, *this; }
  DepthwiseTester& stride(int64_t d, int64_t h, int64_t w) { return g_.stride = {d, h, w}, *this; }
  DepthwiseTester& pad(int64_t before, int64_t after) {  // H and W alike
    g_.pad_before[1] = g_.pad_before[2] = before, g_.pad_after[1] = g_.pad_after[2] = after;
    return *this;
  }
  DepthwiseTester& pad_d(int64_t before, int64_t after) {
    return g_.pad_before[0] = before, g_.pad_after[0] = after, *this;
  }
  DepthwiseTester& pad_w(int64_t before, int64_t after) {
    return g_.pad_before[2] = before, g_.pad_after[2] = after, *this;
  }
  DepthwiseTester& m(int64_t v) { return m_ = v, *this; }  // dy planes of a data gradient
  DepthwiseTester& bf16_out(bool v) { return bf16_out_ = v, *this; }
  // The kernel must decline the shape (return false, write nothing).
  DepthwiseTester& declined() { return declined_ = true, *this; }

  void Test(Isa isa, Pass pass) const {
    conv::ConvGeometry g = g_;
    g.N = 1, g.C_in = g.C_out = g.groups = 1;
    for (int d = 0; d < 3; ++d)
      g.out[d] = static_cast<int64_t>(conv::conv_out_len(g.in[d], g.k[d], g.stride[d], g.dil[d],
                                                         g.pad_before[d], g.pad_after[d]));
    const int64_t S_in = g.in_size(), S_out = g.out_size(), K = g.k_size();
    const bool bf16 = isa == Isa::kAvx512Bf16;
    Random rng(static_cast<uint32_t>(S_in * 31 + S_out * 7 + K + m_));
    auto value = [&] { return bf16 ? FromBf16(rng.Bf16()) : rng.Value(); };
    // x [S_in] and m dy planes [S_out] between guards; w [m][K]; total [K] starting nonzero.
    Buffer<float> x(S_in + 2 * kGuard, Poison()), dy(m_ * S_out + 2 * kGuard, Poison());
    std::vector<float> w(static_cast<size_t>(m_ * K));
    for (int64_t i = 0; i < S_in; ++i) x[kGuard + i] = value();
    for (int64_t i = 0; i < m_ * S_out; ++i) dy[kGuard + i] = value();
    for (float& v : w) v = value();
    const float* xp = x.data() + kGuard;
    const float* dyp = dy.data() + kGuard;
    const int64_t out_elems = pass == Pass::kForward ? S_out : pass == Pass::kTapSums ? K : S_in;
    Buffer<float> out(out_elems + kGuard, Poison());
    Buffer<uint16_t> out16(out_elems + kGuard, 0x7fc1);
    std::vector<double> total(static_cast<size_t>(K));
    for (double& t : total) t = rng.Value();
    const std::vector<double> total0 = total;

    const bool done = Run(isa, pass, g, xp, dyp, w.data(), out.data(), out16.data(), total.data());
    Mismatches bad;
    if (declined_) {
      EXPECT_FALSE(done) << Describe(isa, pass, g) << ": expected the kernel to decline";
      for (int64_t i = 0; i < out.size(); ++i) bad.Untouched(out[i], Poison(), "out");
      for (int64_t q = 0; q < K; ++q) bad.Equal(total[q], total0[q], "total");
      KERNEL_TEST_EXPECT_NONE(bad, Describe(isa, pass, g));
      return;
    }
    ASSERT_TRUE(done) << Describe(isa, pass, g) << ": the kernel declined the shape";
    // Input position of output position (od, oh, ow) at tap q, or -1 in the padding.
    auto input_at = [&](const std::array<int64_t, 3>& o, int64_t q) -> int64_t {
      const int64_t tap[3] = {q / (g.k[1] * g.k[2]), q / g.k[2] % g.k[1], q % g.k[2]};
      int64_t at = 0;
      for (int d = 0; d < 3; ++d) {
        const int64_t i = o[d] * g.stride[d] - g.pad_before[d] + tap[d] * g.dil[d];
        if (i < 0 || i >= g.in[d]) return -1;
        at = at * g.in[d] + i;
      }
      return at;
    };
    // Every (output position, tap) pair reading inside the plane, into the exact sums.
    std::vector<Exact> want(static_cast<size_t>(out_elems));
    for (int64_t p = 0; p < S_out; ++p) {
      const std::array<int64_t, 3> o{p / (g.out[1] * g.out[2]), p / g.out[2] % g.out[1],
                                     p % g.out[2]};
      for (int64_t q = 0; q < K; ++q) {
        const int64_t i = input_at(o, q);
        if (i < 0) continue;
        if (pass == Pass::kForward) want[p].Add(w[q], xp[i]);
        if (pass == Pass::kTapSums) want[q].Add(dyp[p], xp[i]);
        if (pass == Pass::kBackwardData || pass == Pass::kBackwardData16)
          for (int64_t j = 0; j < m_; ++j) want[i].Add(w[j * K + q], dyp[j * S_out + p]);
      }
    }
    int64_t terms = 0;  // a plane of padding alone tests little
    for (const Exact& e : want) terms += e.terms;
    EXPECT_GT(terms, 0) << Describe(isa, pass, g) << ": every tap reads padding";
    for (int64_t i = 0; i < out_elems; ++i) {
      const std::string at = "out[" + std::to_string(i) + "]";
      if (pass == Pass::kTapSums) {
        want[i].Add(total0[i]);
        bad.Near(total[i], want[i], at, 1);  // + the fp32 sum's rounding into double
      } else if (pass == Pass::kBackwardData16) {
        bad.Equal(out16[i], bf16_out_ ? ToBf16(out[i]) : ToHalf(out[i]), at + " (16-bit)");
      } else {
        bad.Near(out[i], want[i], at);
      }
    }
    for (int64_t i = out_elems; i < out.size(); ++i) {
      bad.Untouched(out[i], Poison(), "guard");
      bad.Equal(out16[i], 0x7fc1, "16-bit guard");
    }
    KERNEL_TEST_EXPECT_NONE(bad, Describe(isa, pass, g));
  }

 private:
  bool Run(Isa isa, Pass pass, const conv::ConvGeometry& g, const float* x, const float* dy,
           const float* w, float* out, uint16_t* out16, double* total) const {
    const bool avx512 = isa == Isa::kAvx512;
    switch (pass) {
      case Pass::kForward:
        return avx512 ? conv::dw_plane_forward_avx512(g, out, x, w)
                      : conv::dw_plane_forward_avx2(g, out, x, w);
      case Pass::kBackwardData:
        return avx512 ? conv::dw_plane_backward_data_avx512(g, out, dy, g.out_size(), w, m_)
                      : conv::dw_plane_backward_data_avx2(g, out, dy, g.out_size(), w, m_);
      case Pass::kBackwardData16:  // and the fp32 plane it must equal when rounded
        return conv::dw_plane_backward_data_avx2(g, out, dy, g.out_size(), w, m_) &&
               conv::dw_plane_backward_data16_avx2(g, bf16_out_, out16, dy, g.out_size(), w, m_);
      case Pass::kTapSums:
        break;
    }
    if (isa == Isa::kAvx512Bf16) {
      std::vector<uint16_t> x16(static_cast<size_t>(g.in_size())),
          dy16(static_cast<size_t>(g.out_size()));
      for (size_t i = 0; i < x16.size(); ++i) x16[i] = ToBf16(x[i]);
      for (size_t i = 0; i < dy16.size(); ++i) dy16[i] = ToBf16(dy[i]);
      return conv::dw_plane_tap_sums_bf16_avx512(g, dy16.data(), x16.data(), total);
    }
    return avx512 ? conv::dw_plane_tap_sums_avx512(g, dy, x, total)
                  : conv::dw_plane_tap_sums_avx2(g, dy, x, total);
  }

  std::string Describe(Isa isa, Pass pass, const conv::ConvGeometry& g) const {
    static const char* const kPasses[] = {"forward", "backward_data", "tap sums",
                                          "backward_data16"};
    auto dims = [](const std::array<int64_t, 3>& a) {
      return std::to_string(a[0]) + "x" + std::to_string(a[1]) + "x" + std::to_string(a[2]);
    };
    return std::string(IsaName(isa)) + " " + kPasses[static_cast<int>(pass)] + ": in " +
           dims(g.in) + " k " + dims(g.k) + " out " + dims(g.out) + " stride " + dims(g.stride) +
           " dil " + dims(g.dil) + " pad " + dims(g.pad_before) + "/" + dims(g.pad_after) +
           " m=" + std::to_string(m_);
  }

  conv::ConvGeometry g_;
  int64_t m_ = 1;
  bool bf16_out_ = false, declined_ = false;
};

class DepthwisePlane : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override { KERNEL_TEST_SKIP_UNLESS_RUNS(GetParam()); }
  // The passes the variant has: bf16 only sums the weight gradient.
  std::vector<Pass> Passes() const {
    if (GetParam() == Isa::kAvx512Bf16) return {Pass::kTapSums};
    return {Pass::kForward, Pass::kBackwardData, Pass::kTapSums};
  }
};

TEST_P(DepthwisePlane, RowsAroundVectors) {
  for (Pass pass : Passes())
    for (int64_t W : {1, 2, 7, 8, 9, 15, 16, 17, 31, 32, 33, 47, 63, 64})
      DepthwiseTester().in(1, 4, W).k(1, 3, 3).pad(1, 1).Test(GetParam(), pass);
}

TEST_P(DepthwisePlane, KernelWidthsAndPadding) {
  for (Pass pass : Passes())
    for (int64_t kw = 1; kw <= 7; ++kw) {
      DepthwiseTester().in(1, 3, 20).k(1, 2, kw).pad_w(kw / 2, (kw - 1) / 2).Test(GetParam(), pass);
      DepthwiseTester().in(1, 3, 5).k(1, 1, kw).pad_w(kw + 1, 2).Test(GetParam(),
                                                                      pass);  // wider than the row
      DepthwiseTester().in(1, 2, 40).k(1, 2, kw).pad_w(-2, -1).Test(GetParam(), pass);  // cropping
    }
}

TEST_P(DepthwisePlane, DilatedAnd3d) {
  for (Pass pass : Passes()) {
    DepthwiseTester().in(1, 9, 30).k(1, 3, 3).dil(1, 2, 3).pad(2, 2).Test(GetParam(), pass);
    DepthwiseTester().in(4, 5, 17).k(3, 2, 3).pad(1, 0).pad_d(1, 0).Test(GetParam(), pass);
    DepthwiseTester().in(3, 3, 3).k(3, 3, 3).dil(2, 2, 2).pad(2, 2).pad_d(2, 2).Test(GetParam(),
                                                                                     pass);
  }
}

// Stride along D and H: the weight sums take it (W stride 1), the others decline.
TEST_P(DepthwisePlane, StridedRowsAndDeclinedShapes) {
  for (Pass pass : Passes()) {
    const bool sums = pass == Pass::kTapSums;
    DepthwiseTester t =
        DepthwiseTester().in(3, 9, 14).k(2, 3, 3).stride(2, 2, 1).pad(1, 1).pad_d(1, 1);
    if (!sums) t.declined();
    t.Test(GetParam(), pass);
    DepthwiseTester().in(1, 3, 70).k(1, 1, 3).pad(1, 1).declined().Test(GetParam(), pass);
    DepthwiseTester().in(1, 3, 20).k(1, 1, 3).stride(1, 1, 2).declined().Test(GetParam(), pass);
  }
  for (Pass pass : Passes())  // wider kernels than the sums' 7 registers: only they decline
    if (pass == Pass::kTapSums)
      DepthwiseTester().in(1, 2, 20).k(1, 1, 8).declined().Test(GetParam(), pass);
}

INSTANTIATE_TEST_SUITE_P(Isa, DepthwisePlane,
                         ::testing::Values(Isa::kAvx512, Isa::kAvx2, Isa::kAvx512Bf16),
                         IsaParamName);

// A data-gradient plane from several dy planes (a channel multiplier): the fp32 variants.
class DepthwiseData : public DepthwisePlane {};

TEST_P(DepthwiseData, ManyDyPlanes) {
  for (int64_t m : {2, 3, 8})
    DepthwiseTester().in(1, 6, 21).k(1, 3, 5).pad(1, 2).m(m).Test(GetParam(), Pass::kBackwardData);
}

INSTANTIATE_TEST_SUITE_P(Isa, DepthwiseData, ::testing::Values(Isa::kAvx512, Isa::kAvx2),
                         IsaParamName);

// The AVX2 data gradient stored as fp16 or bf16: bit for bit its fp32 plane rounded to nearest
// even.
TEST(DepthwisePlane16, Avx2RoundsLikeTheFp32Plane) {
  KERNEL_TEST_SKIP_UNLESS_RUNS(Isa::kAvx2);
  for (bool bf16 : {false, true})
    for (int64_t W : {1, 7, 8, 9, 33, 64}) {
      DepthwiseTester().in(1, 3, W).k(1, 3, 3).pad(1, 1).m(2).bf16_out(bf16).Test(
          Isa::kAvx2, Pass::kBackwardData16);
      DepthwiseTester().in(2, 2, W).k(2, 1, 2).pad(0, 1).pad_d(0, 1).bf16_out(bf16).Test(
          Isa::kAvx2, Pass::kBackwardData16);
    }
}

}  // namespace
