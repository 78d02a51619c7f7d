// The direct grid weight-gradient kernels (conv/kernels/grid/direct_grid.h) called directly, every
// variant this process may run, against the header's contract in float64:
//
//   dwt[(t * C + c) * m16 + o] += sum_{positions j of the runs in box[t]} x(t, j, c) * dyt[j * ldy
//   + o]
//
// with the positions j = r * pitch + k (r < rows, k < L) at output coordinates (o0, o1 + r,
// o2 + k), and x(t, j, c) = xt[off[t] + j * ldx + c] (channels-last band: AVX-512, AVX2 + FMA),
// x[xoff[t] + r * xpitch + k * step + c * ldc] (read in place: AVX-512), or bf16 pairs of
// positions (AVX512_BF16: a unit of x and of dy holds positions 2 p and 2 p + 1). Edges: output
// channel blocks of 16 / 32 / 64, input-channel tiles of 3 / 6 / 12 and their remainders, one
// position, tap boxes clipping runs and rows, empty boxes, runs shorter than their pitch.
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "conv/kernels/grid/direct_grid.h"
#include "kernel_tester.h"

namespace {

namespace conv = aclnn_cpu::conv;
using namespace kernel_test;

// Where the weight kernel reads x.
enum class XLayout {
  kBand,     // the channels-last band (direct_grid_weight*)
  kInPlace,  // channel-major rows where they lie (direct_weight_in_place_avx512)
  kAhead,  // the band, asking for memory meanwhile (direct_grid_weight_bf16 with GridWeight::ahead)
};

class GridWeightTester {
 public:
  GridWeightTester& m16(int64_t v) { return m16_ = v, *this; }
  GridWeightTester& C(int64_t v) { return C_ = v, *this; }
  GridWeightTester& T(int64_t v) { return T_ = v, *this; }
  // `rows` runs of L positions, `pitch` apart.
  GridWeightTester& runs(int64_t rows, int64_t L, int64_t pitch) {
    rows_ = rows, L_ = L, pitch_ = pitch;
    return *this;
  }
  // Tap t's box: every position (t % 4 == 0), the runs without their first and last row and
  // column (1), none (2), a random sub-box (3); all boxes are every position when false.
  GridWeightTester& clip(bool v) { return clip_ = v, *this; }
  GridWeightTester& layout(XLayout v) { return layout_ = v, *this; }

  void Test(Isa isa) const {
    const bool bf16 = isa == Isa::kAvx512Bf16;
    Random rng(static_cast<uint32_t>(m16_ * 131 + C_ * 31 + T_ * 7 + rows_ * 3 + L_));
    const conv::WeightRuns runs{rows_, L_, pitch_, 2, 3, 5};
    const int64_t P = (rows_ - 1) * pitch_ + L_;  // positions spanned
    const int64_t ldx = C_ + 3, ldy = m16_ + 16, step = 2, xpitch = pitch_ * step + 3;
    const int64_t ldc = (rows_ - 1) * xpitch + (L_ - 1) * step + 5;  // in place: channel stride
    std::vector<int64_t> shift(static_cast<size_t>(T_)), off(static_cast<size_t>(T_));
    std::vector<conv::TapBox> box(static_cast<size_t>(T_));
    for (int64_t t = 0; t < T_; ++t) {
      shift[t] = rng.Int(0, 6);
      off[t] = layout_ == XLayout::kInPlace ? shift[t] : shift[t] * ldx;
      box[t] = Box(t, runs, rng);
    }
    // x and dy as the kernel reads them: elements of fp32, or units of bf16 pairs.
    const int64_t x_elems = layout_ == XLayout::kInPlace ? 6 + C_ * ldc : (6 + P) * ldx;
    Buffer<float> xf(x_elems), dyf(P * ldy), dwt(T_ * C_ * m16_);
    Buffer<uint32_t> xu(x_elems), dyu(P * ldy);
    for (int64_t i = 0; i < x_elems; ++i) xf[i] = rng.Value(), xu[i] = Pair(rng.Bf16(), rng.Bf16());
    for (int64_t i = 0; i < P * ldy; ++i)
      dyf[i] = rng.Value(), dyu[i] = Pair(rng.Bf16(), rng.Bf16());
    for (int64_t i = 0; i < dwt.size(); ++i) dwt[i] = rng.Value();
    const std::vector<float> before(dwt.data(), dwt.data() + dwt.size());
    Run(isa, runs, off, box, xf, dyf, xu, dyu, ldx, ldy, conv::InPlaceX{ldc, step, xpitch}, dwt);

    Mismatches bad;
    for (int64_t t = 0; t < T_; ++t)
      for (int64_t c = 0; c < C_; ++c)
        for (int64_t o = 0; o < m16_; ++o) {
          const int64_t at = (t * C_ + c) * m16_ + o;
          Exact want;
          want.Add(before[at]);
          for (int64_t r = 0; r < rows_; ++r)
            for (int64_t k = 0; k < L_; ++k) {
              if (!Inside(box[t], runs, r, k)) continue;
              const int64_t j = r * pitch_ + k;
              const int64_t xi = layout_ == XLayout::kInPlace
                                     ? off[t] + r * xpitch + k * step + c * ldc
                                     : off[t] + j * ldx + c;
              if (!bf16) {
                want.Add(xf[xi], dyf[j * ldy + o]);
                continue;
              }
              want.Add(Lo(xu[xi]), Lo(dyu[j * ldy + o]));
              want.Add(Hi(xu[xi]), Hi(dyu[j * ldy + o]));
            }
          bad.Near(dwt[at], want,
                   "dwt[t=" + std::to_string(t) + "][c=" + std::to_string(c) +
                       "][o=" + std::to_string(o) + "]");
        }
    KERNEL_TEST_EXPECT_NONE(bad, Describe(isa));
  }

 private:
  conv::TapBox Box(int64_t t, const conv::WeightRuns& runs, Random& rng) const {
    if (!clip_ || t % 4 == 0) return conv::kAnyPosition;
    conv::TapBox b{{runs.o0, runs.o1, runs.o2},
                   {runs.o0 + 1, runs.o1 + runs.rows, runs.o2 + runs.L}};
    if (t % 4 == 1) {
      ++b.lo[1], --b.hi[1], ++b.lo[2], --b.hi[2];
    } else if (t % 4 == 2) {
      b.lo[0] = runs.o0 + 1, b.hi[0] = runs.o0 + 2;  // another output plane: nothing here
    } else {
      b.lo[1] = runs.o1 + rng.Int(-1, runs.rows), b.hi[1] = b.lo[1] + rng.Int(0, runs.rows + 1);
      b.lo[2] = runs.o2 + rng.Int(-1, runs.L), b.hi[2] = b.lo[2] + rng.Int(0, runs.L + 1);
    }
    return b;
  }

  static bool Inside(const conv::TapBox& b, const conv::WeightRuns& runs, int64_t r, int64_t k) {
    const int64_t p[3] = {runs.o0, runs.o1 + r, runs.o2 + k};
    for (int d = 0; d < 3; ++d)
      if (p[d] < b.lo[d] || p[d] >= b.hi[d]) return false;
    return true;
  }

  void Run(Isa isa, const conv::WeightRuns& runs, const std::vector<int64_t>& off,
           const std::vector<conv::TapBox>& box, const Buffer<float>& xf, const Buffer<float>& dyf,
           const Buffer<uint32_t>& xu, const Buffer<uint32_t>& dyu, int64_t ldx, int64_t ldy,
           const conv::InPlaceX& in_place, Buffer<float>& dwt) const {
    const conv::GridWeightF32 f32{.m16 = m16_,
                                  .C = C_,
                                  .T = T_,
                                  .off = off.data(),
                                  .box = box.data(),
                                  .xt = xf.data(),
                                  .ldx = ldx,
                                  .dyt = dyf.data(),
                                  .ldy = ldy,
                                  .runs = runs,
                                  .dwt = dwt.data()};
    conv::GridWeightBf16 bf16{.m16 = m16_,
                              .C = C_,
                              .T = T_,
                              .off = off.data(),
                              .box = box.data(),
                              .xt = xu.data(),
                              .ldx = ldx,
                              .dyt = dyu.data(),
                              .ldy = ldy,
                              .runs = runs,
                              .dwt = dwt.data()};
    conv::WeightAhead ahead;
    if (isa == Isa::kAvx512Bf16 && layout_ == XLayout::kAhead) {
      // Ask for dy's memory over the call: it must not change a result.
      ahead.at[0] = reinterpret_cast<const char*>(dyu.data());
      ahead.stride[0] = 64, ahead.count[0] = dyu.size() / 16, ahead.bytes[0] = 64;
      conv::spread_ahead(ahead, conv::weight_tiles_bf16(m16_, C_, T_));
      bf16.ahead = &ahead;
    }
    if (isa == Isa::kAvx512Bf16) return conv::direct_grid_weight_bf16(bf16);
    if (isa == Isa::kAvx2) return conv::direct_grid_weight_avx2(f32);
    if (layout_ == XLayout::kInPlace)
      return conv::direct_weight_in_place_avx512(f32, xf.data(), in_place);
    conv::direct_grid_weight_avx512(f32);
  }

  std::string Describe(Isa isa) const {
    static const char* const kLayouts[] = {"band", "in place", "band, asking ahead"};
    return std::string(IsaName(isa)) + " (" + kLayouts[static_cast<int>(layout_)] +
           "): m16=" + std::to_string(m16_) + " C=" + std::to_string(C_) +
           " T=" + std::to_string(T_) + " rows=" + std::to_string(rows_) +
           " L=" + std::to_string(L_) + " pitch=" + std::to_string(pitch_) +
           (clip_ ? " clipped boxes" : "");
  }

  int64_t m16_ = 32, C_ = 5, T_ = 4, rows_ = 2, L_ = 7, pitch_ = 9;
  bool clip_ = true;
  XLayout layout_ = XLayout::kBand;
};

class GridWeight : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override { KERNEL_TEST_SKIP_UNLESS_RUNS(GetParam()); }
};

// AVX-512: blocks of 64 (6 channels a tile), 32 and 16 (12); AVX2: 32 (3) and 16 (6).
TEST_P(GridWeight, OutputChannelBlocks) {
  for (int64_t m16 : {16, 32, 48, 64, 80, 112, 128}) GridWeightTester().m16(m16).Test(GetParam());
}

TEST_P(GridWeight, InputChannelTiles) {
  for (int64_t C : {1, 2, 3, 4, 5, 6, 7, 11, 12, 13, 18, 25})
    for (int64_t m16 : {16, 64}) GridWeightTester().m16(m16).C(C).Test(GetParam());
}

TEST_P(GridWeight, RunsAndPositions) {
  const int64_t shapes[][3] = {{1, 1, 1}, {1, 1, 4}, {1, 17, 17},
                               {3, 1, 2}, {4, 5, 5}, {2, 16, 20}};
  for (const auto& s : shapes)
    for (bool clip : {false, true})
      GridWeightTester().runs(s[0], s[1], s[2]).clip(clip).T(9).Test(GetParam());
}

TEST_P(GridWeight, ManyTapsClipped) {
  GridWeightTester().T(27).C(7).runs(5, 6, 8).Test(GetParam());
}

INSTANTIATE_TEST_SUITE_P(Isa, GridWeight,
                         ::testing::Values(Isa::kAvx512, Isa::kAvx2, Isa::kAvx512Bf16),
                         IsaParamName);

// x read where it lies: channel rows ldc apart, positions `step` apart, runs further.
TEST(GridWeightInPlace, Avx512) {
  KERNEL_TEST_SKIP_UNLESS_RUNS(Isa::kAvx512);
  for (int64_t m16 : {16, 32, 64, 96})
    for (int64_t C : {1, 5, 6, 7, 13})
      GridWeightTester().layout(XLayout::kInPlace).m16(m16).C(C).runs(3, 5, 6).Test(Isa::kAvx512);
}

TEST(GridWeightAhead, Avx512Bf16) {
  KERNEL_TEST_SKIP_UNLESS_RUNS(Isa::kAvx512Bf16);
  for (int64_t m16 : {16, 32, 48})
    for (int64_t C : {1, 12, 13})
      GridWeightTester().layout(XLayout::kAhead).m16(m16).C(C).Test(Isa::kAvx512Bf16);
}

// dwt[c][o] += sum_{p < L2} dyt[p][o] . x[c * ldc + p] (pointwise: x's rows of position pairs).
TEST(GridRowsWeight, Avx512Bf16) {
  KERNEL_TEST_SKIP_UNLESS_RUNS(Isa::kAvx512Bf16);
  for (int64_t m16 : {16, 32, 48, 80})
    for (int64_t C : {1, 11, 12, 13})
      for (int64_t L2 : {1, 9}) {
        Random rng(static_cast<uint32_t>(m16 + C * 7 + L2));
        const int64_t ldc = L2 + 3, ldy = m16;
        Buffer<uint32_t> x(C * ldc), dyt(L2 * ldy);
        Buffer<float> dwt(C * m16);
        for (int64_t i = 0; i < x.size(); ++i) x[i] = Pair(rng.Bf16(), rng.Bf16());
        for (int64_t i = 0; i < dyt.size(); ++i) dyt[i] = Pair(rng.Bf16(), rng.Bf16());
        for (int64_t i = 0; i < dwt.size(); ++i) dwt[i] = rng.Value();
        const std::vector<float> before(dwt.data(), dwt.data() + dwt.size());
        conv::direct_rows_weight_bf16(m16, C, x.data(), ldc, dyt.data(), ldy, L2, dwt.data());
        Mismatches bad;
        for (int64_t c = 0; c < C; ++c)
          for (int64_t o = 0; o < m16; ++o) {
            Exact want;
            want.Add(before[c * m16 + o]);
            for (int64_t p = 0; p < L2; ++p) {
              want.Add(Lo(dyt[p * ldy + o]), Lo(x[c * ldc + p]));
              want.Add(Hi(dyt[p * ldy + o]), Hi(x[c * ldc + p]));
            }
            bad.Near(dwt[c * m16 + o], want,
                     "dwt[" + std::to_string(c) + "][" + std::to_string(o) + "]");
          }
        KERNEL_TEST_EXPECT_NONE(bad, "m16=" + std::to_string(m16) + " C=" + std::to_string(C) +
                                         " L2=" + std::to_string(L2));
      }
}

}  // namespace
