// The channel-lane row kernels (conv/kernels/cl/cl_direct.h, cl_direct_bf16.h) called directly,
// every variant this process may run (fp32 AVX-512 with its broadcasts folded and in registers,
// fp32 AVX2 + FMA, bf16 channel pairs on AVX512_BF16), against the headers' contract in float64:
//
//   out[o * ld_out + u * os] = sum_{tap rows t, channels c, k < kw} W(t, c, k)[o] *
//                              src[c * ldc + soff[t] + col(u, k)]        o < nch, u < ur
//
// col(u, k) = col0 + (u + k) * cs (residues 1) or col0 + 2 u + k (residues 2: stride 2, taps
// listed by residue), terms whose column lies outside [0, width) left out. The source's columns
// outside a row hold NaN: a kernel reading the padding fails. Edges: every tile width ur and
// kernel width kw, left and right padding, rows narrower than the tile, no tap row, channel
// counts below 16, output column strides 1, 2 and 3, and the bf16 store of the rounded outputs.
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "conv/kernels/cl/cl_direct.h"
#include "conv/kernels/cl/cl_direct_bf16.h"
#include "kernel_tester.h"

namespace {

namespace conv = aclnn_cpu::conv;
using namespace kernel_test;

constexpr int64_t kGuard = 48;  // source columns each side of a row (outside it: NaN)

class ClRowTester {
 public:
  ClRowTester& ur(int64_t v) { return ur_ = v, *this; }
  ClRowTester& kw(int64_t v) { return kw_ = v, *this; }
  ClRowTester& rows(int64_t v) { return rows_ = v, *this; }
  ClRowTester& C(int64_t v) { return C_ = v, *this; }
  ClRowTester& cs(int64_t v) { return cs_ = v, *this; }
  ClRowTester& residues(int64_t v) { return residues_ = v, *this; }
  ClRowTester& col0(int64_t v) { return col0_ = v, *this; }
  ClRowTester& width(int64_t v) { return width_ = v, *this; }
  ClRowTester& nch(int64_t v) { return nch_ = v, *this; }
  ClRowTester& os(int64_t v) { return os_ = v, *this; }
  // bf16 only: the outputs stored rounded to bf16 (out16) rather than as fp32.
  ClRowTester& out16(bool v) { return out16_ = v, *this; }

  void Test(Isa isa) const {
    const bool bf16 = isa == Isa::kAvx512Bf16;
    Random rng(static_cast<uint32_t>(ur_ * 97 + kw_ * 31 + C_ * 7 + col0_ + width_ * 3));
    // Each channel: 3 input rows of kGuard + width + kGuard columns; tap row t reads row t % 3.
    const int64_t pitch = width_ + 2 * kGuard, ldc = 3 * pitch, C2 = (C_ + 1) / 2;
    std::vector<int64_t> soff(static_cast<size_t>(rows_) + 1);
    for (int64_t t = 0; t < rows_; ++t) soff[t] = t % 3 * pitch + kGuard;
    // src[c][row][col] and W(t, c, k)[o] = w[t][c][k][o] (bf16-exact for bf16); NaN outside rows.
    std::vector<float> src(static_cast<size_t>(2 * C2 * ldc), Poison());
    for (int64_t c = 0; c < C_; ++c)
      for (int64_t row = 0; row < 3; ++row)
        for (int64_t col = 0; col < width_; ++col)
          src[c * ldc + row * pitch + kGuard + col] = bf16 ? FromBf16(rng.Bf16()) : rng.Value();
    std::vector<float> w(static_cast<size_t>(rows_ * C_ * kw_ * 16));
    for (float& v : w) v = bf16 ? FromBf16(rng.Bf16()) : rng.Value();

    // The AVX-512 kernel in both broadcast forms (the bcast_reg policy picks one per CPU).
    for (const bool reg : {false, true}) {
      if (reg && isa != Isa::kAvx512) break;
      Check(isa, reg, src, ldc, soff, w);
    }
  }

 private:
  void Check(Isa isa, bool reg, const std::vector<float>& src, int64_t ldc,
             const std::vector<int64_t>& soff, const std::vector<float>& w) const {
    const int64_t ld_out = ur_ * os_ + 3;
    Buffer<float> out(17 * ld_out, Poison());
    Buffer<uint16_t> out16(17 * ld_out, 0x7fc1);
    Run(isa, reg, src, ldc, soff, w, out, out16, ld_out);

    Mismatches bad;
    for (int64_t o = 0; o < 17; ++o)
      for (int64_t i = 0; i < ld_out; ++i) {
        const std::string at = "out[" + std::to_string(o) + "][" + std::to_string(i) + "]";
        const float got = out[o * ld_out + i];
        const int64_t u = i / os_;
        if (o >= nch_ || i % os_ != 0 || u >= ur_) {
          bad.Untouched(got, Poison(), at);
          if (out16_) bad.Equal(out16[o * ld_out + i], 0x7fc1, at + " of out16");
          continue;
        }
        Exact want;
        for (int64_t t = 0; t < rows_; ++t)
          for (int64_t c = 0; c < C_; ++c)
            for (int64_t k = 0; k < kw_; ++k) {
              const int64_t col = residues_ == 1 ? col0_ + (u + k) * cs_ : col0_ + 2 * u + k;
              if (col >= 0 && col < width_)
                want.Add(w[((t * C_ + c) * kw_ + k) * 16 + o], src[c * ldc + soff[t] + col]);
            }
        bad.Near(got, want, at);
        // The bf16 store rounds the same accumulators to nearest even.
        if (out16_) bad.Equal(out16[o * ld_out + i], ToBf16(got), at + " of out16");
      }
    KERNEL_TEST_EXPECT_NONE(bad, Describe(isa) + (reg ? " bcast_reg" : ""));
  }

  // Packs the operands as the kernel reads them and runs it: the weights of (tap row t, channel
  // c, or pair c2) at woff[t] + c * wc, [slot][16] (bf16: pairs of channels as units, and the
  // source's channel pairs interleaved, an odd C's last high half zero).
  void Run(Isa isa, bool reg, const std::vector<float>& src, int64_t ldc,
           const std::vector<int64_t>& soff, const std::vector<float>& w, Buffer<float>& out,
           Buffer<uint16_t>& out16, int64_t ld_out) const {
    const int64_t C2 = (C_ + 1) / 2, wc = 16 * kw_ + 16;
    auto weight = [&](int64_t t, int64_t c, int64_t k, int64_t o) {
      return c < C_ ? w[((t * C_ + c) * kw_ + k) * 16 + o] : 0.0f;
    };
    std::vector<int64_t> woff(soff.size());
    if (isa != Isa::kAvx512Bf16) {
      for (int64_t t = 0; t < rows_; ++t) woff[t] = t * C_ * wc;
      Buffer<float> sf(C_ * ldc), wf(rows_ * C_ * wc + 1);
      for (int64_t i = 0; i < sf.size(); ++i) sf[i] = src[i];
      for (int64_t t = 0; t < rows_; ++t)
        for (int64_t c = 0; c < C_; ++c)
          for (int64_t k = 0; k < kw_; ++k)
            for (int64_t o = 0; o < 16; ++o)
              wf[woff[t] + c * wc + 16 * Slot(k) + o] = weight(t, c, k, o);
      conv::ClRow r{sf.data(), soff.data(), woff.data(), rows_,  C_,  ldc,
                    wf.data(), wc,          col0_,       width_, cs_, residues_};
      r.bcast_reg = reg;
      (isa == Isa::kAvx512 ? conv::cl_direct_row_avx512 : conv::cl_direct_row_avx2)(
          ur_, kw_, r, out.data(), ld_out, nch_, os_);
      return;
    }
    for (int64_t t = 0; t < rows_; ++t) woff[t] = t * C2 * wc;
    Buffer<uint32_t> s2(C2 * ldc), w2(rows_ * C2 * wc + 1);
    for (int64_t c2 = 0; c2 < C2; ++c2)
      for (int64_t i = 0; i < ldc; ++i)
        s2[c2 * ldc + i] = Pair(ToBf16(src[2 * c2 * ldc + i]),
                                2 * c2 + 1 < C_ ? ToBf16(src[(2 * c2 + 1) * ldc + i]) : 0);
    for (int64_t t = 0; t < rows_; ++t)
      for (int64_t c2 = 0; c2 < C2; ++c2)
        for (int64_t k = 0; k < kw_; ++k)
          for (int64_t o = 0; o < 16; ++o)
            w2[woff[t] + c2 * wc + 16 * k + o] =
                Pair(ToBf16(weight(t, 2 * c2, k, o)), ToBf16(weight(t, 2 * c2 + 1, k, o)));
    const conv::ClRowBf16 r{s2.data(), soff.data(), woff.data(), rows_,  C2, ldc,
                            w2.data(), wc,          col0_,       width_, cs_};
    conv::cl_direct_row_bf16(ur_, kw_, r, out.data(), nullptr, ld_out, nch_, os_);
    if (out16_) conv::cl_direct_row_bf16(ur_, kw_, r, nullptr, out16.data(), ld_out, nch_, os_);
  }

  // The packed slot of row tap k: residue by residue for residues 2.
  int64_t Slot(int64_t k) const {
    return residues_ == 1 ? k : k % 2 == 0 ? k / 2 : (kw_ + 1) / 2 + k / 2;
  }

  std::string Describe(Isa isa) const {
    return std::string(IsaName(isa)) + ": ur=" + std::to_string(ur_) +
           " kw=" + std::to_string(kw_) + " rows=" + std::to_string(rows_) +
           " C=" + std::to_string(C_) + " cs=" + std::to_string(cs_) +
           " residues=" + std::to_string(residues_) + " col0=" + std::to_string(col0_) +
           " width=" + std::to_string(width_) + " nch=" + std::to_string(nch_) +
           " os=" + std::to_string(os_) + (out16_ ? " out16" : "");
  }

  int64_t ur_ = 5, kw_ = 3, rows_ = 2, C_ = 3, cs_ = 1, residues_ = 1, col0_ = 0, width_ = 20;
  int64_t nch_ = 16, os_ = 1;
  bool out16_ = false;
};

// The widest tile each variant takes for kw taps (cl_direct.h: AVX2 holds (15 - kw) / 2; the bf16
// kernel has its own width, cl_direct_bf16.h).
int64_t MaxRow(Isa isa, int64_t kw) {
  if (isa == Isa::kAvx2) return (15 - kw) / 2;
  return isa == Isa::kAvx512Bf16 ? conv::kClBf16MaxRow : conv::kClMaxRow;
}

class ClRow : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override { KERNEL_TEST_SKIP_UNLESS_RUNS(GetParam()); }
};

// Every (ur, kw) tile, interior (no padding) and with the row's edges inside the kernel's reach.
TEST_P(ClRow, EveryTileInteriorAndAtRowEdges) {
  const Isa isa = GetParam();
  for (int64_t kw = 1; kw <= conv::kClMaxKw; ++kw)
    for (int64_t ur = 1; ur <= MaxRow(isa, kw); ++ur) {
      ClRowTester().ur(ur).kw(kw).col0(2).width(ur + kw + 4).Test(isa);  // interior
      ClRowTester().ur(ur).kw(kw).col0(1 - kw).width(ur).Test(isa);      // left edge
      ClRowTester().ur(ur).kw(kw).col0(0).width(ur).Test(isa);           // right edge
      ClRowTester().ur(ur).kw(kw).col0(-1).width(ur).Test(isa);          // both
    }
}

// Rows shorter than the tile, tiles starting far left or right of the row: most columns padding.
TEST_P(ClRow, MostlyPadding) {
  const Isa isa = GetParam();
  for (int64_t width : {1, 2, 5})
    for (int64_t col0 : {-9, -3, 0, 4})
      ClRowTester().ur(MaxRow(isa, 3)).kw(3).width(width).col0(col0).Test(isa);
}

TEST_P(ClRow, ChannelsTapRowsAndOutputStrides) {
  const Isa isa = GetParam();
  for (int64_t nch : {1, 7, 8, 9, 15, 16})
    for (int64_t os : {1, 2, 3}) ClRowTester().nch(nch).os(os).ur(MaxRow(isa, 3)).Test(isa);
  for (int64_t C : {1, 2, 5})
    for (int64_t rows : {1, 3, 7}) ClRowTester().C(C).rows(rows).Test(isa);
}

TEST_P(ClRow, NoTapRowWritesZeros) {
  ClRowTester().rows(0).Test(GetParam());
}

INSTANTIATE_TEST_SUITE_P(Isa, ClRow, ::testing::Values(Isa::kAvx512, Isa::kAvx2, Isa::kAvx512Bf16),
                         IsaParamName);

// Dilation 2 along rows (cs = 2), and stride 2 with its taps split by residue: the AVX-512 forms
// (the AVX2 kernel is for cs 1 only; bf16 has no residue form).
class ClRowStrided : public ClRow {};

TEST_P(ClRowStrided, DilationAndStrideTwo) {
  const Isa isa = GetParam();
  for (int64_t kw = 1; kw <= conv::kClMaxKw; ++kw)
    for (int64_t ur : {1, 6, 14}) {
      ClRowTester().cs(2).ur(ur).kw(kw).col0(-3).width(2 * ur + 1).Test(isa);
      if (isa == Isa::kAvx512)
        ClRowTester().cs(2).residues(2).ur(ur).kw(kw).col0(-2).width(2 * ur + kw - 3).Test(isa);
    }
}

INSTANTIATE_TEST_SUITE_P(Isa, ClRowStrided, ::testing::Values(Isa::kAvx512, Isa::kAvx512Bf16),
                         IsaParamName);

TEST(ClRowBf16, RoundedStoreEqualsRoundedOutputs) {
  KERNEL_TEST_SKIP_UNLESS_RUNS(Isa::kAvx512Bf16);
  for (int64_t os : {1, 2, 3})
    for (int64_t ur : {1, 7, 14})
      for (int64_t nch : {3, 16})
        ClRowTester().out16(true).os(os).ur(ur).nch(nch).col0(-1).Test(Isa::kAvx512Bf16);
}

}  // namespace
