#include "conv/kernels/grid/padded_grid.h"

#include <algorithm>
#include <cstring>

namespace aclnn_cpu::conv {

PaddedGrid padded_grid(const ConvGeometry& g) {
  PaddedGrid pg;
  // Unit stride: in + pad_before + pad_after = out + dil * (k - 1) along each dim.
  pg.Dp = g.out[0] + g.dil[0] * (g.k[0] - 1);
  pg.Hp = g.out[1] + g.dil[1] * (g.k[1] - 1);
  pg.Wp = g.out[2] + g.dil[2] * (g.k[2] - 1);
  pg.plane = pg.Dp * pg.Hp * pg.Wp;
  pg.rows = g.out_size() > 0 ? (g.out[0] - 1) * pg.Hp + g.out[1] : 0;
  return pg;
}

double grid_waste(const ConvGeometry& g, const PaddedGrid& pg) {
  const double cols = static_cast<double>(pg.rows) * static_cast<double>(pg.Wp);
  return cols > 0 ? 1.0 - static_cast<double>(g.out_size()) / cols : 1.0;
}

int64_t grid_rows_per_task(const ConvGeometry& g, int64_t m, int64_t want) {
  constexpr int64_t kGridBlockBytes = int64_t{512} << 10;
  const PaddedGrid pg = padded_grid(g);
  if (pg.rows <= 0 || m <= 0) return 1;
  const int64_t by_budget = std::max<int64_t>(1, kGridBlockBytes / (m * pg.Wp * 4));
  const int64_t by_tasks = (pg.rows + std::max<int64_t>(want, 1) - 1) / std::max<int64_t>(want, 1);
  return std::clamp<int64_t>(std::min(by_budget, by_tasks), 1, pg.rows);
}

int64_t grid_scratch(const ConvGeometry& g, int64_t m, int64_t channels, int64_t rows) {
  const PaddedGrid pg = padded_grid(g);
  return (m * rows + channels * band_rows(g, pg, rows)) * pg.Wp;
}

int64_t band_rows(const ConvGeometry& g, const PaddedGrid& pg, int64_t out_rows) {
  // Output grid row r reads grid rows r + kd*dil0*Hp + kh*dil1 and, from its last columns (which
  // are dropped), up to dil2*(k2-1) <= Wp floats into the row after that.
  return out_rows + g.dil[0] * (g.k[0] - 1) * pg.Hp + g.dil[1] * (g.k[1] - 1) + 1;
}

PaddedGrid pad_band(const ConvGeometry& g, const PaddedGrid& pg, const Source& x, int64_t planes,
                    int64_t r0, int64_t out_rows, float* band) {
  const int64_t count = band_rows(g, pg, out_rows);
  const int64_t D = g.in[0], H = g.in[1], W = g.in[2], S_in = g.in_size();
  // Grid column w holds input column w - pad_before[2]: the valid ones are [w0, w1).
  const int64_t w0 = clamp_i64(g.pad_before[2], 0, pg.Wp);
  const int64_t w1 = clamp_i64(g.pad_before[2] + W, w0, pg.Wp);
  const int64_t first = w0 - g.pad_before[2];  // input column at grid column w0
  for (int64_t c = 0; c < planes; ++c) {
    const Source xc = x.at(c * S_in);
    float* dst = band + c * count * pg.Wp;
    for (int64_t i = 0; i < count; ++i, dst += pg.Wp) {
      const int64_t r = r0 + i;
      const int64_t id = r / pg.Hp - g.pad_before[0], ih = r % pg.Hp - g.pad_before[1];
      if (id < 0 || id >= D || ih < 0 || ih >= H || w1 <= w0) {  // padding, or past the grid
        std::fill(dst, dst + pg.Wp, 0.0f);
        continue;
      }
      std::fill(dst, dst + w0, 0.0f);
      xc.at((id * H + ih) * W + first).convert(w1 - w0, 1, dst + w0);
      std::fill(dst + w1, dst + pg.Wp, 0.0f);
    }
  }
  PaddedGrid bp = pg;
  bp.plane = count * pg.Wp;
  return bp;
}

void grid_to_output(const ConvGeometry& g, const PaddedGrid& pg, const float* grid,
                    int64_t channels, int64_t r0, int64_t r1, float* y) {
  const int64_t oH = g.out[1], oW = g.out[2], S_out = g.out_size(), ld = (r1 - r0) * pg.Wp;
  for (int64_t o = 0; o < channels; ++o) {
    const float* src = grid + o * ld;
    float* yo = y + o * S_out;
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t od = r / pg.Hp, oh = r % pg.Hp;
      if (oh >= oH) continue;  // between two 3d output planes
      std::memcpy(yo + (od * oH + oh) * oW, src + (r - r0) * pg.Wp,
                  static_cast<size_t>(oW) * sizeof(float));
    }
  }
}

void output_to_grid(const ConvGeometry& g, const PaddedGrid& pg, const Source& y, int64_t channels,
                    int64_t r0, int64_t r1, float* grid) {
  const int64_t oH = g.out[1], oW = g.out[2], S_out = g.out_size(), ld = (r1 - r0) * pg.Wp;
  for (int64_t o = 0; o < channels; ++o) {
    const Source yo = y.at(o * S_out);
    float* dst = grid + o * ld;
    for (int64_t r = r0; r < r1; ++r, dst += pg.Wp) {
      const int64_t od = r / pg.Hp, oh = r % pg.Hp;
      if (oh >= oH) {
        std::fill(dst, dst + pg.Wp, 0.0f);
        continue;
      }
      yo.at((od * oH + oh) * oW).convert(oW, 1, dst);
      std::fill(dst + oW, dst + pg.Wp, 0.0f);
    }
  }
}

}  // namespace aclnn_cpu::conv
