// The bf16 row kernels of the time-major convolution (conv/kernels/tbc/tbc_kernels.h) called
// directly where this process may run AVX512_BF16, against the header's contract:
//
//   tile[i][j] = bias[j] + sum_{t < taps, c < C} a[t][i][c] * W_t(c, j)   i < rows, j < 16 nv
//
// (the weights packed per 64-column block as bf16 pairs of channels, bp[t][c2][64]), within the
// float64 bound, nothing else of the tile written; and the bias gradient's row sums acc[i] +=
// a[i], then b[i], in double (exact). Each activation row ends where the next element is a bf16
// NaN: an odd last channel read as a pair with it fails. Edges: every tile (rows 1..6, 1..4
// vectors), odd and even C, one to three taps, no bias.
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "conv/kernels/tbc/tbc_kernels.h"
#include "kernel_tester.h"

namespace {

namespace conv = aclnn_cpu::conv;
using namespace kernel_test;

constexpr uint16_t kBf16Nan = 0x7fc0;

class TbcTileTester {
 public:
  TbcTileTester& rows(int v) { return rows_ = v, *this; }
  TbcTileTester& nv(int v) { return nv_ = v, *this; }
  TbcTileTester& C(int64_t v) { return C_ = v, *this; }
  TbcTileTester& taps(int64_t v) { return taps_ = v, *this; }
  TbcTileTester& bias(bool v) { return bias_ = v, *this; }

  void Test() const {
    Random rng(static_cast<uint32_t>(rows_ * 61 + nv_ * 17 + C_ * 5 + taps_));
    const int64_t cols = conv::kTbcBlockCols, C2 = (C_ + 1) / 2;
    // W_t(c, j) and bias[j] bf16-exact; each activation row in its own run, NaN right after.
    std::vector<float> W(static_cast<size_t>(taps_ * C_ * cols)), bias(static_cast<size_t>(cols));
    for (float& v : W) v = FromBf16(rng.Bf16());
    for (float& v : bias) v = rng.Value();
    const int64_t run = C_ + 1;
    std::vector<uint16_t> act(static_cast<size_t>(taps_ * rows_ * run));
    std::vector<const uint16_t*> a(static_cast<size_t>(taps_ * rows_));
    for (int64_t r = 0; r < taps_ * rows_; ++r) {
      for (int64_t c = 0; c < C_; ++c) act[r * run + c] = rng.Bf16();
      act[r * run + C_] = kBf16Nan;
      a[r] = act.data() + r * run;
    }
    Buffer<uint32_t> bp(taps_ * C2 * cols);
    for (int64_t t = 0; t < taps_; ++t)
      for (int64_t c2 = 0; c2 < C2; ++c2)
        for (int64_t j = 0; j < cols; ++j) {
          auto w = [&](int64_t c) {
            return c < C_ ? ToBf16(W[(t * C_ + c) * cols + j]) : uint16_t{0};
          };
          bp[(t * C2 + c2) * cols + j] = Pair(w(2 * c2), w(2 * c2 + 1));
        }
    const conv::TbcPairTaps pt{taps_, C_, bp.data(), bias_ ? bias.data() : nullptr};
    Buffer<float> tile((rows_ + 1) * cols, Poison());
    conv::tbc_bf16_tile(pt, rows_, nv_, a.data(), tile.data());

    Mismatches bad;
    for (int64_t i = 0; i <= rows_; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        const std::string at = "tile[" + std::to_string(i) + "][" + std::to_string(j) + "]";
        if (i == rows_ || j >= 16 * nv_) {
          bad.Untouched(tile[i * cols + j], Poison(), at);
          continue;
        }
        Exact want;
        if (bias_) want.Add(bias[j]);
        for (int64_t t = 0; t < taps_; ++t)
          for (int64_t c = 0; c < C_; ++c)
            want.Add(FromBf16(a[t * rows_ + i][c]), W[(t * C_ + c) * cols + j]);
        bad.Near(tile[i * cols + j], want, at);
      }
    KERNEL_TEST_EXPECT_NONE(bad, "rows=" + std::to_string(rows_) + " nv=" + std::to_string(nv_) +
                                     " C=" + std::to_string(C_) + " taps=" + std::to_string(taps_) +
                                     (bias_ ? " bias" : ""));
  }

 private:
  int rows_ = 6, nv_ = 4;
  int64_t C_ = 7, taps_ = 2;
  bool bias_ = true;
};

TEST(TbcTile, Avx512Bf16EveryTile) {
  KERNEL_TEST_SKIP_UNLESS_RUNS(Isa::kAvx512Bf16);
  for (int rows = 1; rows <= conv::kTbcTileRows; ++rows)
    for (int nv = 1; nv <= 4; ++nv) TbcTileTester().rows(rows).nv(nv).Test();
}

TEST(TbcTile, Avx512Bf16ChannelsTapsAndBias) {
  KERNEL_TEST_SKIP_UNLESS_RUNS(Isa::kAvx512Bf16);
  for (int64_t C : {1, 2, 3, 8, 33})
    for (int64_t taps : {1, 3})
      for (bool bias : {false, true})
        TbcTileTester().C(C).taps(taps).bias(bias).rows(5).nv(3).Test();
}

TEST(TbcSumRows, Avx512Bf16AddsBothRowsInDouble) {
  KERNEL_TEST_SKIP_UNLESS_RUNS(Isa::kAvx512Bf16);
  for (int64_t n : {1, 7, 8, 9, 17, 64}) {
    Random rng(static_cast<uint32_t>(n));
    std::vector<uint16_t> a(static_cast<size_t>(n) + 1, kBf16Nan), b(a.size(), kBf16Nan);
    std::vector<double> acc(static_cast<size_t>(n) + 1);
    for (int64_t i = 0; i < n; ++i) a[i] = rng.Bf16(), b[i] = rng.Bf16();
    for (double& v : acc) v = rng.Value();
    const std::vector<double> before = acc;
    conv::tbc_sum_rows_bf16(a.data(), b.data(), n, acc.data());
    Mismatches bad;
    for (int64_t i = 0; i <= n; ++i) {
      const double want = i < n ? before[i] + FromBf16(a[i]) + FromBf16(b[i]) : before[i];
      bad.Equal(acc[i], want, "acc[" + std::to_string(i) + "]");
    }
    KERNEL_TEST_EXPECT_NONE(bad, "n=" + std::to_string(n));
  }
}

}  // namespace
