// The padded grid of a unit-stride convolution: the input copied into zero-padded planes
// [Dp, Hp, Wp] (a band of rows at a time, per task) (Dp = in + pad_before + pad_after along each
// dim; negative padding crops), and the output computed on the same row pitch. Output position (od,
// oh, ow) becomes the grid column
//
//   j = (od * Hp + oh) * Wp + ow,
//
// and the column-matrix entry of row (c, kd, kh, kw) is then
//
//   xp[c * plane + (kd * dil0 * Hp + kh * dil1) * Wp + kw * dil2 + j],
//
// a plain shift of the padded input: each row of the implicit im2col is one contiguous run, with
// no bounds to check (im2col_panels.h, GridPanels). The price is the grid's extra columns
// (ow >= out[2], and oh >= out[1] between 3d planes), computed and then dropped when the result
// is copied to the output; plan_kernels uses the grid only where they are few.
#pragma once

#include <cstdint>

#include "conv/engine/geometry.h"
#include "conv/engine/source.h"

namespace aclnn_cpu::conv {

struct PaddedGrid {
  int64_t Dp = 0, Hp = 0, Wp = 0;
  int64_t plane = 0;  // Dp * Hp * Wp: floats per padded channel
  int64_t rows = 0;   // grid rows (od * Hp + oh) spanning every output row: (oD - 1) * Hp + oH
};

// The grid of a convolution with every stride 1.
PaddedGrid padded_grid(const ConvGeometry& g);

// Fraction of the grid's columns that are not output positions.
double grid_waste(const ConvGeometry& g, const PaddedGrid& pg);

// Grid rows per task for a forward-form pass of `m` output channels over the grid: the task's
// result block (m x rows x Wp floats) stays around half of L2, and there are about `want` tasks
// per (sample, group). Unit stride only.
int64_t grid_rows_per_task(const ConvGeometry& g, int64_t m, int64_t want);

// Per-slot scratch of a grid task: its m x rows x Wp result (or dy) block and the band of
// `channels` padded input channels it reads.
int64_t grid_scratch(const ConvGeometry& g, int64_t m, int64_t channels, int64_t rows);

// Padded rows a band needs for `out_rows` output grid rows: the kernel's reach down the rows
// (and planes), plus one row for the last grid columns' reads past their row (dropped columns).
int64_t band_rows(const ConvGeometry& g, const PaddedGrid& pg, int64_t out_rows);

// The band of the padded input that output grid rows [r0, r0 + out_rows) read:
// band[c][i][Wp] = padded grid row r0 + i of channel c (each in_size() floats of x), for
// i < band_rows(out_rows) and c < planes; rows past the grid are zero. x is read as stored
// (fp16 / bf16 / rounded fp32 converted as the rows are copied). Returns the grid as the
// band presents it (plane = the band's channel stride): the panels read it at the same offsets
// as the whole grid.
PaddedGrid pad_band(const ConvGeometry& g, const PaddedGrid& pg, const Source& x, int64_t planes,
                    int64_t r0, int64_t out_rows, float* band);

// y[o, output rows of grid rows r0 .. r1) = the output columns of grid[o, (r1 - r0) * Wp], for
// o < channels; y's channel stride is out_size(), the grid's ld is (r1 - r0) * Wp.
void grid_to_output(const ConvGeometry& g, const PaddedGrid& pg, const float* grid,
                    int64_t channels, int64_t r0, int64_t r1, float* y);

// The inverse placement, for the weight gradient's dy: grid[o, (r1 - r0) * Wp] = the output
// columns of y's grid rows r0 .. r1), zero in the grid's extra columns, for o < channels; y is
// read as stored, like pad_band's x.
void output_to_grid(const ConvGeometry& g, const PaddedGrid& pg, const Source& y, int64_t channels,
                    int64_t r0, int64_t r1, float* grid);

}  // namespace aclnn_cpu::conv
