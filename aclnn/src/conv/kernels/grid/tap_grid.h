// A convolution pass as a sum of shifted planes on an output grid: the form the direct kernels
// (direct_grid.h) compute, for any stride, dilation and padding.
//
// Per spatial dim, a kernel tap k reads the source at s*o + e with e = k*dil - pad_before. Writing
// e = s*m + a (0 <= a < s) splits the source into s phase planes, phase a holding the source at
// a, a + s, a + 2s, ...: the tap reads phase a at position o + m, a unit shift. So with every phase
// plane laid out on one zero-padded grid of extent out + (max m - min m), grid coordinate p of
// phase a holding src[s*(p + lo) + a] (lo = min m), every tap is a phase plane and a constant shift
// of the output grid column j = (o0*Hp + o1)*Wp + o2:
//
//   forward / weight   y[o][j] = sum_{c, t} w[o][c][q_t] * band[c][phase_t][j + shift_t]
//
// (unit stride: one phase, the padded grid of padded_grid.h). The data gradient of a strided conv
// is the same form per phase b of dx (dx index s*u + b): only the taps with a == b reach it, from
// dy at u - m (a unit-stride source, shift -m), and the results are placed at s*u + b; a phase
// no tap reaches is zero. Grid columns with o2 >= out[2] (and rows between 3d planes) are computed
// and dropped.
#pragma once

#include <array>
#include <cstdint>

#include "conv/kernels/grid/direct_grid.h"
#include "conv/engine/geometry.h"
#include "conv/engine/source.h"

namespace aclnn_cpu::conv {

// Phase planes a band may hold (product over the dims of the distinct phases the taps read).
inline constexpr int64_t kMaxPhases = 64;

struct TapGrid {
  std::array<int64_t, 3> out{};         // output positions per dim (the grid's computed extent)
  std::array<int64_t, 3> ext{};         // grid extent per dim: Dp, Hp, Wp
  std::array<int64_t, 3> src_size{};    // source extent per dim
  std::array<int64_t, 3> src_stride{};  // s: phase plane a at p holds src[s*(p + lo) + a]
  std::array<int64_t, 3> lo{};
  std::array<int64_t, 3> dst_stride{}, dst_offset{}, dst_size{};  // output o -> dst[s*o + off]
  // The phases in use per dim, as the rank of phase value a (-1: unused), and their counts.
  std::array<std::array<int8_t, 64>, 3> phase_rank{};
  std::array<int64_t, 3> phase_count{};
  std::array<int64_t, 3> data_phase{};  // data gradient: the phase b of dx (forward: -1)
  int64_t taps = 0;                     // taps in use

  int64_t Hp() const { return ext[1]; }
  int64_t Wp() const { return ext[2]; }
  int64_t phases() const { return phase_count[0] * phase_count[1] * phase_count[2]; }
  // Grid rows (o0 * Hp + o1) spanning every output row.
  int64_t rows() const { return out[0] > 0 && out[1] > 0 ? (out[0] - 1) * ext[1] + out[1] : 0; }
  // Band rows a block of `r` grid rows reads: the taps' reach down the rows and planes, plus one
  // row for the last columns' reads past their row (dropped columns).
  int64_t band_rows(int64_t r) const {
    return r + (ext[0] - out[0]) * ext[1] + (ext[1] - out[1]) + 1;
  }
  // Fraction of the computed grid columns that are not output positions.
  double waste() const;
  bool empty() const { return taps == 0 || out[0] <= 0 || out[1] <= 0 || out[2] <= 0; }
};

// One tap of a tap grid: the weight tap it applies, the phase plane it reads and its grid shift.
struct GridTap {
  int64_t q, phase, shift;
};

// The grid of the forward / weight-gradient pass of g (source x, output y), or of the data
// gradient's phase b (source dy, output dx at s*u + b). The phases of a strided source must be at
// most kMaxPhases: check with forward_phases() first.
TapGrid forward_grid(const ConvGeometry& g);
TapGrid data_grid(const ConvGeometry& g, const std::array<int64_t, 3>& b);
int64_t forward_phases(const ConvGeometry& g);

// The data gradient's phases of dx (s0 * s1 * s2), phase i as b = its (b0, b1, b2).
int64_t data_phase_count(const ConvGeometry& g);
std::array<int64_t, 3> data_phase(const ConvGeometry& g, int64_t i);

// Writes the tap grid's taps in weight-tap order (q ascending) to taps[0 .. tg.taps).
void grid_taps(const ConvGeometry& g, const TapGrid& tg, GridTap* taps);

// The output positions where weight tap q (kernel index (k0 * k1 + k1) * k2 + k2 order) of g
// reads inside the input: s*o + k*dil - pad_before in [0, in) per dim.
TapBox tap_box(const ConvGeometry& g, int64_t q);

// x read where it lies (direct_weight_in_place_avx512) for g's input [C_in, S_in]: weight tap q
// reads output position o at source element (s*o per dim) + tap_source_offset(g, q), and a call's
// runs start at source element run_source_offset(g, runs).
int64_t tap_source_offset(const ConvGeometry& g, int64_t q);
inline int64_t run_source_offset(const ConvGeometry& g, const WeightRuns& runs) {
  return (g.stride[0] * runs.o0 * g.in[1] + g.stride[1] * runs.o1) * g.in[2] +
         g.stride[2] * runs.o2;
}
inline InPlaceX in_place_layout(const ConvGeometry& g) {
  return InPlaceX{g.in_size(), g.stride[2], g.stride[1] * g.in[2]};
}

// band[c][phase][i * Wp + col] for c < channels, every phase, i < band_rows(rows): phase plane
// rows r0 + i of source channel c (element c * src_cstride on), zero outside the source. `plane` is
// the band's phase stride (>= band_rows(rows) * Wp); channel stride phases() * plane.
void build_band(const TapGrid& tg, const Source& src, int64_t src_cstride, int64_t channels,
                int64_t r0, int64_t rows, int64_t plane, float* band);

// The source offset (element of one channel) of grid row r's source row in phase (a0, a1) of
// the D and H strides, or -1 where that row lies outside the source.
inline int64_t phase_source_row(const TapGrid& tg, int64_t r, int64_t a0, int64_t a1) {
  const int64_t i0 = tg.src_stride[0] * (r / tg.Hp() + tg.lo[0]) + a0;
  const int64_t i1 = tg.src_stride[1] * (r % tg.Hp() + tg.lo[1]) + a1;
  const bool inside = i0 >= 0 && i0 < tg.src_size[0] && i1 >= 0 && i1 < tg.src_size[1];
  return inside ? (i0 * tg.src_size[1] + i1) * tg.src_size[2] : -1;
}

// One band row: dst[c * dst_cstride + phase * phase_stride + col] for col < Wp = phase plane row r
// of source channel c, for c < channels and every phase (build_band's rows), converted to fp32;
// or, for the bf16 dot kernels, the bf16 bits copied as they are.
void build_band_row(const TapGrid& tg, const Source& src, int64_t src_cstride, int64_t channels,
                    int64_t r, float* dst, int64_t dst_cstride, int64_t phase_stride);
void build_band_row(const TapGrid& tg, const uint16_t* src, int64_t src_cstride, int64_t channels,
                    int64_t r, uint16_t* dst, int64_t dst_cstride, int64_t phase_stride);

// The offset in one channel of the destination of output row (o0, o1): where its column 0 goes.
inline int64_t output_row(const TapGrid& tg, int64_t o0, int64_t o1) {
  return ((tg.dst_stride[0] * o0 + tg.dst_offset[0]) * tg.dst_size[1] + tg.dst_stride[1] * o1 +
          tg.dst_offset[1]) *
             tg.dst_size[2] +
         tg.dst_offset[2];
}

// Calls row(o, i, at) for each channel o < channels and each grid row r0 + i of [r0, r1) that
// holds outputs (not those between two 3d output planes), with at = output_row of that row.
template <typename Row>
void for_output_rows(const TapGrid& tg, int64_t channels, int64_t r0, int64_t r1, Row&& row) {
  for (int64_t o = 0; o < channels; ++o)
    for (int64_t r = r0; r < r1; ++r)
      if (r % tg.Hp() < tg.out[1]) row(o, r - r0, output_row(tg, r / tg.Hp(), r % tg.Hp()));
}

// dst[channel o][s*out + off] = block[o][(r - r0) * Wp + o2] for the output positions of grid
// rows [r0, r1), o < channels (block row stride ld, dst channel stride dst_cstride).
void scatter_block(const TapGrid& tg, const float* block, int64_t ld, int64_t channels, int64_t r0,
                   int64_t r1, float* dst, int64_t dst_cstride);

// The inverse placement with unit output stride (the weight gradient's dy on the forward grid):
// grid[o][(r - r0) * Wp + o2] = src[o][out position], zero in the extra columns.
void gather_block(const TapGrid& tg, const float* src, int64_t src_cstride, int64_t channels,
                  int64_t r0, int64_t r1, float* grid, int64_t ld);

// even[i] = src[2 i], odd[i] = src[2 i + 1] for i < n: the two phase planes of a stride-2 row
// (AVX2 + FMA; call only where gemm::isa() is at least kAvx2).
void phase_split2_avx2(const float* src, int64_t n, float* even, float* odd);

// Zeroes the dst positions of every output of the grid (a data-gradient phase no tap reaches):
// fp32, or bf16 bits (+0.0 is all zero bits in both).
template <typename T>
void zero_outputs(const TapGrid& tg, int64_t channels, T* dst, int64_t dst_cstride) {
  for (int64_t o = 0; o < channels; ++o)
    for (int64_t o0 = 0; o0 < tg.out[0]; ++o0)
      for (int64_t o1 = 0; o1 < tg.out[1]; ++o1) {
        T* row = dst + o * dst_cstride + output_row(tg, o0, o1);
        for (int64_t w = 0; w < tg.out[2]; ++w) row[w * tg.dst_stride[2]] = T{0};
      }
}

}  // namespace aclnn_cpu::conv
