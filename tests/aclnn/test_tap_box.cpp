// tap_box (aclnn/src/conv/kernels/grid/tap_grid.h, compiled into this test): the output positions
// where a weight tap reads inside the input. The weight kernels skip every product outside a tap's
// box, so a box one position too small drops real products and one too large only wastes time; the
// convolution sweeps catch the first, only an exact check catches the second. Hand-computed
// cases, then every tap of random 3-d geometries against a direct membership test.
#include <cstdint>
#include <random>

#include <gtest/gtest.h>

#include "conv/kernels/grid/tap_grid.h"

namespace {

using aclnn_cpu::conv::ConvGeometry;
using aclnn_cpu::conv::TapBox;

// A 1-d geometry (dims 0 and 1 of size 1): in, kernel k, stride s, dilation d, pads pb / pa.
ConvGeometry line(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pa) {
  ConvGeometry g;
  g.in[2] = in, g.k[2] = k, g.stride[2] = s, g.dil[2] = d, g.pad_before[2] = pb;
  g.pad_after[2] = pa;
  g.out[2] = (in + pb + pa - d * (k - 1) - 1) / s + 1;
  return g;
}

TEST(TapBox, HandComputedLines) {
  struct Case {
    ConvGeometry g;
    int64_t out, tap, lo, hi;
  };
  const Case cases[] = {
      // 14 wide, 5 taps, pad 2 (MNIST's second layer): tap 0 reads column o - 2, inside from
      // o = 2; tap 4 reads o + 2, inside up to o = 11.
      {line(14, 5, 1, 1, 2, 2), 14, 0, 2, 14},
      {line(14, 5, 1, 1, 2, 2), 14, 2, 0, 14},
      {line(14, 5, 1, 1, 2, 2), 14, 4, 0, 12},
      // 28 wide, 3 taps, stride 2, pad 1 -> 14: tap 0 reads 2 o - 1, inside from o = 1; tap 2
      // reads 2 o + 1 <= 27 for every o < 14.
      {line(28, 3, 2, 1, 1, 1), 14, 0, 1, 14},
      {line(28, 3, 2, 1, 1, 1), 14, 2, 0, 14},
      // 2 wide, 5 taps, pad 4 -> 6 outputs: tap 0 reads o - 4, inside for o = 4, 5; tap 4 reads
      // o, inside for o < 2.
      {line(2, 5, 1, 1, 4, 4), 6, 0, 4, 6},
      {line(2, 5, 1, 1, 4, 4), 6, 4, 0, 2},
  };
  for (const Case& c : cases) {
    ASSERT_EQ(c.g.out[2], c.out);
    const TapBox b = aclnn_cpu::conv::tap_box(c.g, c.tap);
    EXPECT_EQ(b.lo[2], c.lo) << "in " << c.g.in[2] << " tap " << c.tap;
    EXPECT_EQ(b.hi[2], c.hi) << "in " << c.g.in[2] << " tap " << c.tap;
  }
}

TEST(TapBox, EveryTapOfRandomGeometriesIsExact) {
  std::mt19937 rng(7);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  for (int trial = 0; trial < 400; ++trial) {
    ConvGeometry g;
    for (int d = 0; d < 3; ++d) {
      g.in[d] = pick(1, 12), g.k[d] = pick(1, 5), g.stride[d] = pick(1, 3), g.dil[d] = pick(1, 3);
      // Negative padding too: the flipped geometry of a data gradient has it.
      g.pad_before[d] = pick(-2, 6), g.pad_after[d] = pick(-2, 6);
      const int64_t span = g.in[d] + g.pad_before[d] + g.pad_after[d] - g.dil[d] * (g.k[d] - 1);
      g.out[d] = span > 0 ? (span - 1) / g.stride[d] + 1 : 0;
    }
    if (g.out[0] <= 0 || g.out[1] <= 0 || g.out[2] <= 0) continue;
    for (int64_t q = 0; q < g.k_size(); ++q) {
      const TapBox b = aclnn_cpu::conv::tap_box(g, q);
      const int64_t k[3] = {q / (g.k[1] * g.k[2]), q / g.k[2] % g.k[1], q % g.k[2]};
      for (int d = 0; d < 3; ++d) {
        ASSERT_LE(0, b.lo[d]);
        ASSERT_LE(b.lo[d], b.hi[d]);
        ASSERT_LE(b.hi[d], g.out[d]);
        for (int64_t o = 0; o < g.out[d]; ++o) {
          const int64_t at = g.stride[d] * o + k[d] * g.dil[d] - g.pad_before[d];
          const bool inside = at >= 0 && at < g.in[d];
          ASSERT_EQ(inside, o >= b.lo[d] && o < b.hi[d])
              << "trial " << trial << " tap " << q << " dim " << d << " output " << o;
        }
      }
    }
  }
}

}  // namespace
