// The direct grid forward kernels (conv/kernels/grid/direct_grid.h) called directly, every variant
// this process may run (fp32 AVX-512 and AVX2 + FMA, bf16 channel pairs on AVX512_BF16), against
// the header's contract in float64:
//
//   out[o * ldo + j] = sum_{c < C, t < T} w[o][c][t] * x[c * plane + off[t] + j]   o < m, j < n
//
// (rows mode: n whole rows of `pitch` columns, only the first row_len of each computed), on the
// register tiles' edges: output channels around the blocks of 4 (AVX2) and 8, columns around the
// vectors of 8 / 16 and tiles of 24 / 48, channel chunks (a later chunk adds to out), narrow rows,
// taps reaching far (AVX2's chunk-outer order), and zero sizes.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "conv/kernels/grid/direct_grid.h"
#include "kernel_tester.h"

namespace {

namespace conv = aclnn_cpu::conv;
using namespace kernel_test;

class GridForwardTester {
 public:
  GridForwardTester& m(int64_t v) { return m_ = v, *this; }
  GridForwardTester& n(int64_t v) { return n_ = v, *this; }
  GridForwardTester& C(int64_t v) { return C_ = v, *this; }
  GridForwardTester& T(int64_t v) { return T_ = v, *this; }
  GridForwardTester& c_chunk(int64_t v) { return c_chunk_ = v, *this; }
  // Taps' offsets spread over [0, reach].
  GridForwardTester& reach(int64_t v) { return reach_ = v, *this; }
  // Rows mode: `count` rows of `pitch` columns, row_len of each computed (n = count * pitch).
  GridForwardTester& rows(int64_t count, int64_t row_len, int64_t pitch) {
    row_len_ = row_len, pitch_ = pitch, n_ = count * pitch;
    return *this;
  }

  void Test(Isa isa) const {
    const bool bf16 = isa == Isa::kAvx512Bf16;
    Random rng(static_cast<uint32_t>(m_ * 7919 + n_ * 131 + C_ * 31 + T_ * 7 + row_len_));
    std::vector<int64_t> off(static_cast<size_t>(T_));
    for (int64_t t = 0; t < T_; ++t)
      off[t] = t == 0 ? 0 : t == T_ - 1 ? reach_ : rng.Int(0, reach_);
    // Each channel's plane covers every read, with slack for AVX2's 16 lanes of a narrow row.
    const int64_t plane = reach_ + n_ + 32;
    const int64_t C2 = (C_ + 1) / 2, units = bf16 ? C2 : C_;
    // Values as the kernel sees them: x[c][s], w[o][c][t] (bf16-exact for the bf16 variant).
    auto value = [&] { return bf16 ? FromBf16(rng.Bf16()) : rng.Value(); };
    std::vector<float> x(static_cast<size_t>(2 * C2 * plane), 0.0f),
        w(static_cast<size_t>(m_ * C_ * T_));
    for (int64_t i = 0; i < C_ * plane; ++i) x[i] = value();
    for (float& v : w) v = value();

    const int64_t packed_elems = conv::direct_packed_w_elems(m_, units, T_);
    Buffer<float> xf(units * plane), pf(packed_elems);
    Buffer<uint32_t> x2(units * plane), p2(packed_elems);
    Pack(x, w, bf16, plane, xf, x2, pf, p2);

    const int64_t ldo = n_ + 5;  // columns past n must stay untouched
    Buffer<float> out((m_ + 1) * ldo, Poison());
    const int64_t cc = c_chunk_ > 0 ? c_chunk_ : units;
    const conv::GridForwardF32 f32{.m = m_,
                                   .n = n_,
                                   .C = C_,
                                   .T = T_,
                                   .off = off.data(),
                                   .x = xf.data(),
                                   .plane = plane,
                                   .packed = pf.data(),
                                   .out = out.data(),
                                   .ldo = ldo,
                                   .c_chunk = cc,
                                   .row_len = row_len_,
                                   .pitch = pitch_};
    if (isa == Isa::kAvx512) {
      conv::direct_grid_forward_avx512(f32);
    } else if (isa == Isa::kAvx2) {
      conv::direct_grid_forward_avx2(f32);
    } else {
      conv::GridForwardBf16 bf16{.m = m_,
                                 .n = n_,
                                 .C = C2,
                                 .T = T_,
                                 .off = off.data(),
                                 .x = x2.data(),
                                 .plane = plane,
                                 .packed = p2.data(),
                                 .out = out.data(),
                                 .ldo = ldo,
                                 .c_chunk = cc,
                                 .row_len = row_len_,
                                 .pitch = pitch_};
      conv::direct_grid_forward_bf16(bf16);
    }

    Mismatches bad;
    for (int64_t o = 0; o <= m_; ++o)
      for (int64_t j = 0; j < ldo; ++j) {
        const std::string at = "out[" + std::to_string(o) + "][" + std::to_string(j) + "]";
        const float got = out[o * ldo + j];
        if (o == m_ || j >= n_) {
          bad.Untouched(got, Poison(), at);
          continue;
        }
        if (row_len_ > 0 && j % pitch_ >= row_len_) continue;  // a dropped column: any value
        Exact want;
        for (int64_t c = 0; c < C_; ++c)
          for (int64_t t = 0; t < T_; ++t)
            want.Add(w[(o * C_ + c) * T_ + t], x[c * plane + off[t] + j]);
        bad.Near(got, want, at);
      }
    KERNEL_TEST_EXPECT_NONE(bad, Describe(isa));
  }

 private:
  // The kernel's operands: x as is (fp32) or as channel pairs (bf16: the high half of an odd
  // C's last pair zero), the weights packed as direct_grid.h says: blocks of 8 output channels,
  // packed[ob][c][t][8], zero past m (bf16: [ob][c2][t][8] pairs, zero past C).
  void Pack(const std::vector<float>& x, const std::vector<float>& w, bool bf16, int64_t plane,
            Buffer<float>& xf, Buffer<uint32_t>& x2, Buffer<float>& pf,
            Buffer<uint32_t>& p2) const {
    const int64_t C2 = (C_ + 1) / 2, ob = conv::kDirectOcBlock;
    auto wv = [&](int64_t o, int64_t c, int64_t t) {
      return o < m_ && c < C_ ? w[(o * C_ + c) * T_ + t] : 0.0f;
    };
    if (!bf16) {
      for (int64_t i = 0; i < C_ * plane; ++i) xf[i] = x[i];
      int64_t at = 0;
      for (int64_t o0 = 0; o0 < m_; o0 += ob)
        for (int64_t c = 0; c < C_; ++c)
          for (int64_t t = 0; t < T_; ++t)
            for (int64_t i = 0; i < ob; ++i) pf[at++] = wv(o0 + i, c, t);
      return;
    }
    for (int64_t c2 = 0; c2 < C2; ++c2)
      for (int64_t s = 0; s < plane; ++s)
        x2[c2 * plane + s] =
            Pair(ToBf16(x[2 * c2 * plane + s]), ToBf16(x[(2 * c2 + 1) * plane + s]));
    int64_t at = 0;
    for (int64_t o0 = 0; o0 < m_; o0 += ob)
      for (int64_t c2 = 0; c2 < C2; ++c2)
        for (int64_t t = 0; t < T_; ++t)
          for (int64_t i = 0; i < ob; ++i)
            p2[at++] = Pair(ToBf16(wv(o0 + i, 2 * c2, t)), ToBf16(wv(o0 + i, 2 * c2 + 1, t)));
  }

  std::string Describe(Isa isa) const {
    return std::string(IsaName(isa)) + ": m=" + std::to_string(m_) + " n=" + std::to_string(n_) +
           " C=" + std::to_string(C_) + " T=" + std::to_string(T_) +
           " c_chunk=" + std::to_string(c_chunk_) + " reach=" + std::to_string(reach_) +
           " row_len=" + std::to_string(row_len_) + " pitch=" + std::to_string(pitch_);
  }

  int64_t m_ = 8, n_ = 48, C_ = 3, T_ = 3, c_chunk_ = 0, reach_ = 20, row_len_ = 0;
  // Flat mode too passes a row pitch, as the callers do (the grid's): the AVX2 kernel divides by
  // it whatever the mode (the header does not say that a flat call needs one).
  int64_t pitch_ = 18;
};

class GridForward : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override { KERNEL_TEST_SKIP_UNLESS_RUNS(GetParam()); }
};

TEST_P(GridForward, ColumnsAroundVectorsAndTiles) {
  for (int64_t n : {1, 7, 8, 9, 15, 16, 17, 23, 24, 25, 47, 48, 49, 95, 97})
    GridForwardTester().n(n).Test(GetParam());
}

TEST_P(GridForward, OutputChannelsAroundBlocks) {
  for (int64_t m = 1; m <= 17; ++m) GridForwardTester().m(m).n(29).Test(GetParam());
}

TEST_P(GridForward, ChannelsInChunks) {
  for (int64_t C : {1, 2, 3, 5, 8})
    for (int64_t cc : {1, 2, 3, 100}) GridForwardTester().C(C).c_chunk(cc).n(33).Test(GetParam());
}

TEST_P(GridForward, TapCounts) {
  for (int64_t T : {1, 2, 4, 9, 27}) GridForwardTester().T(T).reach(3 * T).n(50).Test(GetParam());
}

// Rows of at most 8, 9 to 16 (AVX2: two vectors a row where the pitch exceeds 16) and exactly 16
// columns; 1 to 7 rows (tiles take 3).
TEST_P(GridForward, NarrowRows) {
  const int64_t shapes[][2] = {{1, 3},   {5, 6},   {8, 10},  {9, 18},
                               {14, 18}, {14, 16}, {16, 16}, {16, 20}};
  for (const auto& s : shapes)
    for (int64_t count : {1, 2, 3, 4, 7})
      GridForwardTester().m(5).C(3).rows(count, s[0], s[1]).Test(GetParam());
}

// Taps reaching across thousands of columns (3d kernels, strided phase planes): AVX2 then walks
// channel chunks outermost.
TEST_P(GridForward, FarReachingTaps) {
  GridForwardTester().C(9).c_chunk(4).reach(4000).n(61).Test(GetParam());
  GridForwardTester().C(9).c_chunk(4).reach(4000).m(3).rows(3, 14, 18).Test(GetParam());
}

TEST_P(GridForward, ZeroSizesWriteNothing) {
  GridForwardTester().n(0).Test(GetParam());
  GridForwardTester().m(0).Test(GetParam());
}

INSTANTIATE_TEST_SUITE_P(Isa, GridForward,
                         ::testing::Values(Isa::kAvx512, Isa::kAvx2, Isa::kAvx512Bf16),
                         IsaParamName);

}  // namespace
