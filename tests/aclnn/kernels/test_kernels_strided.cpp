// strided_direct's kernels (conv/kernels/strided/strided_direct.h) called directly, each where this
// process may run its instruction set, against the header's contract:
//
//   strided_forward_avx2      yt[p * ldy + o] = (add ? yt : 0) + sum_{c, t} packed(o, c, t) *
//                                               x[c * cstride + off[t] + p * xstep]   (float64
//                                               bound)
//   weight_acc_to_dw_avx512   dw[o * ld + c * K + q] = dwt[(q * nc + c) * m16 + o]  (bit for bit)
//   positions_to_channels_avx2  dst[o * ld_dst + p] = src[p * ld_src + o]             (bit for bit)
//   channels_last_sums_avx2   sums[o] += sum_{r, j} t[(r * pitch + j) * m16 + o]      (float64
//   bound)
//
// Edges: output-channel blocks in groups of up to 3 (4 = 2 + 2) and their position tiles of 4, 6
// and 12, steps between positions, accumulation; sizes around 8 and 16 (the transposes' blocks,
// the sums' runs of 16); and that nothing outside the outputs is written.
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "conv/kernels/strided/strided_direct.h"
#include "kernel_tester.h"

namespace {

namespace conv = aclnn_cpu::conv;
using namespace kernel_test;

class StridedForwardTester {
 public:
  StridedForwardTester& blocks(int64_t v) { return blocks_ = v, *this; }
  StridedForwardTester& n(int64_t v) { return n_ = v, *this; }
  StridedForwardTester& C(int64_t v) { return C_ = v, *this; }
  StridedForwardTester& T(int64_t v) { return T_ = v, *this; }
  StridedForwardTester& xstep(int64_t v) { return xstep_ = v, *this; }
  StridedForwardTester& add(bool v) { return add_ = v, *this; }

  void Test() const {
    Random rng(static_cast<uint32_t>(blocks_ * 131 + n_ * 31 + C_ * 7 + T_ + xstep_));
    std::vector<int64_t> off(static_cast<size_t>(T_));
    for (int64_t t = 0; t < T_; ++t) off[t] = rng.Int(0, 2 * T_);
    const int64_t cstride = 2 * T_ + n_ * xstep_ + 3, ob_stride = C_ * T_ * 8 + 8;
    const int64_t M = 8 * blocks_, ldy = M + 8;  // columns past M must stay untouched
    Buffer<float> x(C_ * cstride), packed(blocks_ * ob_stride), yt((n_ + 1) * ldy, Poison());
    for (int64_t i = 0; i < x.size(); ++i) x[i] = rng.Value();
    for (int64_t i = 0; i < packed.size(); ++i) packed[i] = rng.Value();
    if (add_)
      for (int64_t p = 0; p < n_; ++p)
        for (int64_t o = 0; o < M; ++o) yt[p * ldy + o] = rng.Value();
    const std::vector<float> before(yt.data(), yt.data() + yt.size());
    conv::strided_forward_avx2({.blocks = blocks_,
                                .n = n_,
                                .C = C_,
                                .T = T_,
                                .off = off.data(),
                                .x = x.data(),
                                .cstride = cstride,
                                .xstep = xstep_,
                                .packed = packed.data(),
                                .ob_stride = ob_stride,
                                .yt = yt.data(),
                                .ldy = ldy,
                                .add = add_});
    Mismatches bad;
    for (int64_t p = 0; p <= n_; ++p)
      for (int64_t o = 0; o < ldy; ++o) {
        const std::string at = "yt[" + std::to_string(p) + "][" + std::to_string(o) + "]";
        if (p == n_ || o >= M) {
          bad.Untouched(yt[p * ldy + o], Poison(), at);
          continue;
        }
        Exact want;
        if (add_) want.Add(before[p * ldy + o]);
        for (int64_t c = 0; c < C_; ++c)
          for (int64_t t = 0; t < T_; ++t)
            want.Add(packed[o / 8 * ob_stride + (c * T_ + t) * 8 + o % 8],
                     x[c * cstride + off[t] + p * xstep_]);
        bad.Near(yt[p * ldy + o], want, at);
      }
    KERNEL_TEST_EXPECT_NONE(bad, "blocks=" + std::to_string(blocks_) + " n=" + std::to_string(n_) +
                                     " C=" + std::to_string(C_) + " T=" + std::to_string(T_) +
                                     " xstep=" + std::to_string(xstep_) + (add_ ? " add" : ""));
  }

 private:
  int64_t blocks_ = 3, n_ = 13, C_ = 3, T_ = 4, xstep_ = 2;
  bool add_ = false;
};

TEST(StridedForward, Avx2BlocksAndPositionTiles) {
  KERNEL_TEST_SKIP_UNLESS_RUNS(Isa::kAvx2);
  for (int64_t blocks = 1; blocks <= 7; ++blocks)
    for (int64_t n : {1, 3, 4, 5, 6, 7, 11, 12, 13, 25})
      StridedForwardTester().blocks(blocks).n(n).Test();
}

TEST(StridedForward, Avx2ChannelsTapsStepsAndAccumulation) {
  KERNEL_TEST_SKIP_UNLESS_RUNS(Isa::kAvx2);
  for (int64_t C : {1, 2, 9})
    for (int64_t T : {1, 9})
      for (int64_t xstep : {1, 2, 3})
        for (bool add : {false, true})
          StridedForwardTester().C(C).T(T).xstep(xstep).add(add).Test();
  StridedForwardTester().n(0).Test();  // no position: nothing written
}

TEST(WeightAccToDw, Avx512TransposesEveryBlock) {
  KERNEL_TEST_SKIP_UNLESS_RUNS(Isa::kAvx512);
  for (int64_t K : {1, 9, 15, 16, 17, 27, 33})
    for (int64_t Cog : {1, 15, 16, 17, 40})
      for (int64_t nc : {1, 3}) {
        Random rng(static_cast<uint32_t>(K * 61 + Cog * 7 + nc));
        const int64_t m16 = (Cog + 15) / 16 * 16 + 16, ld = nc * K + 5;
        Buffer<float> dwt(K * nc * m16), dw((Cog + 1) * ld, Poison());
        for (int64_t i = 0; i < dwt.size(); ++i) dwt[i] = rng.Value();
        conv::weight_acc_to_dw_avx512(dwt.data(), K, nc, m16, Cog, dw.data(), ld);
        Mismatches bad;
        for (int64_t o = 0; o <= Cog; ++o)
          for (int64_t i = 0; i < ld; ++i) {
            const std::string at = "dw[" + std::to_string(o) + "][" + std::to_string(i) + "]";
            if (o == Cog || i >= nc * K) {
              bad.Untouched(dw[o * ld + i], Poison(), at);
              continue;
            }
            const int64_t c = i / K, q = i % K;
            bad.Equal(dw[o * ld + i], dwt[(q * nc + c) * m16 + o], at);
          }
        KERNEL_TEST_EXPECT_NONE(bad, "K=" + std::to_string(K) + " Cog=" + std::to_string(Cog) +
                                         " nc=" + std::to_string(nc));
      }
}

TEST(PositionsToChannels, Avx2AroundBlocksOf8) {
  KERNEL_TEST_SKIP_UNLESS_RUNS(Isa::kAvx2);
  for (int64_t n : {1, 7, 8, 9, 16, 23})
    for (int64_t m : {1, 7, 8, 9, 17}) {
      Random rng(static_cast<uint32_t>(n * 37 + m));
      const int64_t ld_src = m + 3, ld_dst = n + 5;
      Buffer<float> src(n * ld_src), dst((m + 1) * ld_dst, Poison());
      for (int64_t i = 0; i < src.size(); ++i) src[i] = rng.Value();
      conv::positions_to_channels_avx2(src.data(), ld_src, n, m, dst.data(), ld_dst);
      Mismatches bad;
      for (int64_t o = 0; o <= m; ++o)
        for (int64_t p = 0; p < ld_dst; ++p) {
          const std::string at = "dst[" + std::to_string(o) + "][" + std::to_string(p) + "]";
          if (o == m || p >= n)
            bad.Untouched(dst[o * ld_dst + p], Poison(), at);
          else
            bad.Equal(dst[o * ld_dst + p], src[p * ld_src + o], at);
        }
      KERNEL_TEST_EXPECT_NONE(bad, "n=" + std::to_string(n) + " m=" + std::to_string(m));
    }
}

TEST(ChannelsLastSums, Avx2RunsRowsAndChannelTails) {
  KERNEL_TEST_SKIP_UNLESS_RUNS(Isa::kAvx2);
  for (int64_t n : {1, 3, 4, 5, 15, 16, 17, 40})
    for (int64_t rows : {1, 3})
      for (int64_t cnt : {1, 15, 16, 17, 40}) {
        Random rng(static_cast<uint32_t>(n * 91 + rows * 13 + cnt));
        const int64_t m16 = (cnt + 15) / 16 * 16, pitch = n + 2;
        Buffer<float> t(rows * pitch * m16);
        for (int64_t i = 0; i < t.size(); ++i) t[i] = rng.Value();
        std::vector<double> sums(static_cast<size_t>(m16 + 1));
        for (double& s : sums) s = rng.Value();
        const std::vector<double> before = sums;
        conv::channels_last_sums_avx2(t.data(), rows, n, pitch, m16, cnt, sums.data());
        Mismatches bad;
        for (int64_t o = 0; o <= m16; ++o) {
          const std::string at = "sums[" + std::to_string(o) + "]";
          if (o >= cnt) {
            bad.Equal(sums[o], before[o], at + " (must not change)");
            continue;
          }
          Exact want;
          want.Add(before[o]);
          for (int64_t r = 0; r < rows; ++r)
            for (int64_t j = 0; j < n; ++j) want.Add(t[(r * pitch + j) * m16 + o]);
          bad.Near(sums[o], want, at);
        }
        KERNEL_TEST_EXPECT_NONE(bad, "n=" + std::to_string(n) + " rows=" + std::to_string(rows) +
                                         " cnt=" + std::to_string(cnt));
      }
}

}  // namespace
