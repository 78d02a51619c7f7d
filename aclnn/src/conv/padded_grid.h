// The padded grid of a unit-stride convolution: the input copied once into zero-padded planes
// [Dp, Hp, Wp] (Dp = in + pad_before + pad_after along each dim; negative padding crops), and the
// output computed on the same row pitch. Output position (od, oh, ow) becomes the grid column
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

#include "conv/geometry.h"

namespace aclnn_cpu::conv {

struct PaddedGrid {
  int64_t Dp = 0, Hp = 0, Wp = 0;
  int64_t plane = 0;  // Dp * Hp * Wp: floats per padded channel
  int64_t rows = 0;   // grid rows (od * Hp + oh) spanning every output row: (oD - 1) * Hp + oH
  int64_t slack = 0;  // floats after the last plane that the last grid columns may read
};

// The grid of a convolution with every stride 1.
PaddedGrid padded_grid(const ConvGeometry& g);

// Fraction of the grid's columns that are not output positions.
double grid_waste(const ConvGeometry& g, const PaddedGrid& pg);

// Floats of the padded copy of `planes` input channels (plus the trailing slack).
int64_t grid_elems(const PaddedGrid& pg, int64_t planes);

// xp = the `planes` channels of x (each in_size() floats) padded into the grid, slack zeroed.
// Parallel over planes (oneTBB).
void pad_into_grid(const ConvGeometry& g, const PaddedGrid& pg, const float* x, int64_t planes,
                   float* xp);

// y[o, output rows of grid rows r0 .. r1) = the output columns of grid[o, (r1 - r0) * Wp], for
// o < channels; y's channel stride is out_size(), the grid's ld is (r1 - r0) * Wp.
void grid_to_output(const ConvGeometry& g, const PaddedGrid& pg, const float* grid,
                    int64_t channels, int64_t r0, int64_t r1, float* y);

// The inverse placement, for the weight gradient's dy: grid[o, (r1 - r0) * Wp] = the output
// columns of y's grid rows r0 .. r1), zero in the grid's extra columns, for o < channels.
void output_to_grid(const ConvGeometry& g, const PaddedGrid& pg, const float* y, int64_t channels,
                    int64_t r0, int64_t r1, float* grid);

}  // namespace aclnn_cpu::conv
