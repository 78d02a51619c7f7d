// The row cursor of the implicit GEMM panel sources (im2col_panels_avx512.cpp and
// im2col_panels_avx2.cpp): row r = c*K + tap of the column matrix (im2col.h's layout), decoded
// into (channel, kd, kh, kw) once and advanced incrementally. Include it only inside a target
// region, after im2col.h: everything here has internal linkage (an unnamed namespace), so the
// copies compiled for different instruction sets are never merged by the linker.
#pragma once

#include <cstdint>

#include "conv/engine/geometry.h"
#include "conv/kernels/grid/padded_grid.h"

namespace aclnn_cpu::conv {
namespace {  // NOLINT(google-build-namespaces): see above

constexpr int64_t kTileK = 256;       // the GEMM's deepest K block (gemm::kMaxPanelDepth)
constexpr int64_t kMaxPanels = 16;    // the GEMM's NC block is 10 panels
constexpr int64_t kGatherSlack = 16;  // floats a gather may write past its count (zeros)

struct Pos {
  int64_t od, oh, ow;
};

Pos position(const ConvGeometry& g, int64_t j) {
  const int64_t oH = g.out[1], oW = g.out[2];
  return Pos{j / (oH * oW), (j / oW) % oH, j % oW};
}

struct RowCursor {
  const ConvGeometry& g;
  const float* x;  // channel 0
  int64_t c, kd, kh, kw;

  RowCursor(const ConvGeometry& geo, const float* x0, int64_t r) : g(geo), x(x0) {
    const int64_t K = g.k_size(), tap = r % K;
    c = r / K;
    kd = tap / (g.k[1] * g.k[2]);
    kh = (tap / g.k[2]) % g.k[1];
    kw = tap % g.k[2];
  }
  void next() {
    if (++kw < g.k[2]) return;
    kw = 0;
    if (++kh < g.k[1]) return;
    kh = 0;
    if (++kd < g.k[0]) return;
    kd = 0;
    ++c;
  }
};

// Offset in the grid (or band) of a column-matrix row, decoded as (channel, kernel tap).
inline int64_t grid_row_offset(const ConvGeometry& g, const PaddedGrid& pg, const RowCursor& row) {
  return row.c * pg.plane + (row.kd * g.dil[0] * pg.Hp + row.kh * g.dil[1]) * pg.Wp +
         row.kw * g.dil[2];
}

}  // namespace
}  // namespace aclnn_cpu::conv
