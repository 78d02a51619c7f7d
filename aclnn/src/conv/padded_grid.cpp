#include "conv/padded_grid.h"

#include <algorithm>
#include <cstring>

#include <tbb/parallel_for.h>

namespace aclnn_cpu::conv {

PaddedGrid padded_grid(const ConvGeometry& g) {
  PaddedGrid pg;
  // Unit stride: in + pad_before + pad_after = out + dil * (k - 1) along each dim.
  pg.Dp = g.out[0] + g.dil[0] * (g.k[0] - 1);
  pg.Hp = g.out[1] + g.dil[1] * (g.k[1] - 1);
  pg.Wp = g.out[2] + g.dil[2] * (g.k[2] - 1);
  pg.plane = pg.Dp * pg.Hp * pg.Wp;
  pg.rows = g.out_size() > 0 ? (g.out[0] - 1) * pg.Hp + g.out[1] : 0;
  // The last grid column of the last row reads (k[2] - 1) * dil[2] past its plane (a dropped
  // column); one vector more keeps every load of the GEMM's panels inside the buffer.
  pg.slack = g.dil[2] * (g.k[2] - 1) + 16;
  return pg;
}

double grid_waste(const ConvGeometry& g, const PaddedGrid& pg) {
  const double cols = static_cast<double>(pg.rows) * static_cast<double>(pg.Wp);
  return cols > 0 ? 1.0 - static_cast<double>(g.out_size()) / cols : 1.0;
}

int64_t grid_elems(const PaddedGrid& pg, int64_t planes) {
  return planes * pg.plane + pg.slack;
}

void pad_into_grid(const ConvGeometry& g, const PaddedGrid& pg, const float* x, int64_t planes,
                   float* xp) {
  const int64_t D = g.in[0], H = g.in[1], W = g.in[2], S_in = g.in_size();
  // Grid column w holds input column w - pad_before[2]: the valid ones are [w0, w1).
  const int64_t w0 = clamp_i64(g.pad_before[2], 0, pg.Wp);
  const int64_t w1 = clamp_i64(g.pad_before[2] + W, w0, pg.Wp);
  const int64_t first = w0 - g.pad_before[2];  // input column at grid column w0
  tbb::parallel_for(int64_t{0}, planes, [&](int64_t c) {
    const float* xc = x + c * S_in;
    float* dst = xp + c * pg.plane;
    for (int64_t d = 0; d < pg.Dp; ++d) {
      const int64_t id = d - g.pad_before[0];
      for (int64_t h = 0; h < pg.Hp; ++h, dst += pg.Wp) {
        const int64_t ih = h - g.pad_before[1];
        if (id < 0 || id >= D || ih < 0 || ih >= H || w1 <= w0) {
          std::fill(dst, dst + pg.Wp, 0.0f);
          continue;
        }
        std::fill(dst, dst + w0, 0.0f);
        std::memcpy(dst + w0, xc + (id * H + ih) * W + first,
                    static_cast<size_t>(w1 - w0) * sizeof(float));
        std::fill(dst + w1, dst + pg.Wp, 0.0f);
      }
    }
  });
  std::fill(xp + planes * pg.plane, xp + planes * pg.plane + pg.slack, 0.0f);
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

void output_to_grid(const ConvGeometry& g, const PaddedGrid& pg, const float* y, int64_t channels,
                    int64_t r0, int64_t r1, float* grid) {
  const int64_t oH = g.out[1], oW = g.out[2], S_out = g.out_size(), ld = (r1 - r0) * pg.Wp;
  for (int64_t o = 0; o < channels; ++o) {
    const float* yo = y + o * S_out;
    float* dst = grid + o * ld;
    for (int64_t r = r0; r < r1; ++r, dst += pg.Wp) {
      const int64_t od = r / pg.Hp, oh = r % pg.Hp;
      if (oh >= oH) {
        std::fill(dst, dst + pg.Wp, 0.0f);
        continue;
      }
      std::memcpy(dst, yo + (od * oH + oh) * oW, static_cast<size_t>(oW) * sizeof(float));
      std::fill(dst + oW, dst + pg.Wp, 0.0f);
    }
  }
}

}  // namespace aclnn_cpu::conv
