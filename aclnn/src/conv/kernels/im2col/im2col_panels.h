// Implicit im2col: the column matrix of a convolution (im2col.h's layout: row r = c*K + tap, column
// j = output position) handed to the packed GEMM panel by panel, gathered straight from the input
// into the packed format, so the column matrix is never stored. For a forward conv that saves
// writing the im2col chunk and reading it back to pack it (measured: bench/RESULTS.md, design
// im2col_panels.implicit).
#pragma once

#include <cstdint>

#include "conv/engine/geometry.h"
#include "conv/kernels/grid/padded_grid.h"
#include "gemm/sgemm.h"

namespace aclnn_cpu::conv {

class Im2colPanels final : public gemm::BPanels {
 public:
  // x: the first input channel of the (sample, group); columns are output positions
  // col0 + j of the geometry's output.
  Im2colPanels(const ConvGeometry& g, const float* x, int64_t col0) : g_(g), x_(x), col0_(col0) {}

  void pack(int64_t k0, int64_t kc, int64_t j0, int64_t n, float* Bp) const override;
  // The ISA-specific bodies (im2col_panels_avx512.cpp, im2col_panels_avx2.cpp) pack() picks from.
  void pack_avx512(int64_t k0, int64_t kc, int64_t j0, int64_t n, float* Bp) const;
  void pack_avx2(int64_t k0, int64_t kc, int64_t j0, int64_t n, float* Bp) const;

 private:
  const ConvGeometry& g_;
  const float* x_;
  int64_t col0_;
};

// The transposed column matrix, for the weight gradient dw = dy * col^T: B(k, r) = col[r][col0 + k]
// (k = output position, r = (channel, tap) row). Rows are gathered 16 (AVX2: 8) at a time into a
// small tile (contiguous along k, as in the input) and turned into panel rows with in-register
// transposes.
// `tile` is scratch of tile_elems() floats (64-byte aligned), private to the calling thread.
class Im2colPanelsT final : public gemm::BPanels {
 public:
  Im2colPanelsT(const ConvGeometry& g, const float* x, int64_t col0, float* tile)
      : g_(g), x_(x), col0_(col0), tile_(tile) {}

  void pack(int64_t k0, int64_t kc, int64_t j0, int64_t n, float* Bp) const override;
  // The ISA-specific bodies (im2col_panels_avx512.cpp, im2col_panels_avx2.cpp) pack() picks from.
  void pack_avx512(int64_t k0, int64_t kc, int64_t j0, int64_t n, float* Bp) const;
  void pack_avx2(int64_t k0, int64_t kc, int64_t j0, int64_t n, float* Bp) const;
  static int64_t tile_elems();

 private:
  const ConvGeometry& g_;
  const float* x_;
  int64_t col0_;
  float* tile_;
};

// What the grid panel sources read: the padded grid (or a band of it, with pg.plane its
// channel stride) from the first input channel of the (sample, group) or block, and the grid
// column where their columns start.
struct GridSource {
  const ConvGeometry& g;
  const PaddedGrid& pg;
  const float* xp;
  int64_t col0;
};

// The forward-form column matrix on a padded grid (padded_grid.h): every row is a contiguous run
// of the padded input, so a panel row is three vector copies. Columns are grid columns col0 + j.
class GridPanels final : public gemm::BPanels {
 public:
  explicit GridPanels(const GridSource& src) : src_(src) {}
  void pack(int64_t k0, int64_t kc, int64_t j0, int64_t n, float* Bp) const override;
  // The ISA-specific bodies (im2col_panels_avx512.cpp, im2col_panels_avx2.cpp) pack() picks from.
  void pack_avx512(int64_t k0, int64_t kc, int64_t j0, int64_t n, float* Bp) const;
  void pack_avx2(int64_t k0, int64_t kc, int64_t j0, int64_t n, float* Bp) const;

 private:
  GridSource src_;
};

// The transposed column matrix on the padded grid, for the weight gradient: B(k, r) = row r of
// GridPanels' matrix at grid column col0 + k. Each group of 16 rows is loaded straight from the
// padded input (16 contiguous runs) and turned into panel rows with 16 x 16 transposes.
class GridPanelsT final : public gemm::BPanels {
 public:
  explicit GridPanelsT(const GridSource& src) : src_(src) {}
  void pack(int64_t k0, int64_t kc, int64_t j0, int64_t n, float* Bp) const override;
  // The ISA-specific bodies (im2col_panels_avx512.cpp, im2col_panels_avx2.cpp) pack() picks from.
  void pack_avx512(int64_t k0, int64_t kc, int64_t j0, int64_t n, float* Bp) const;
  void pack_avx2(int64_t k0, int64_t kc, int64_t j0, int64_t n, float* Bp) const;

 private:
  GridSource src_;
};

}  // namespace aclnn_cpu::conv
