// Channel-lane ("cl") direct fp32 kernels (AVX-512, or AVX2 for unit stride and dilation along
// rows: cl_direct_avx2.cpp): the 16 lanes of a vector are 16 output channels, and one register tile
// is a whole output row (up to 16 positions), so every multiply-add lands on a real input element:
// no tap reaching into the padding is computed and no lane is spent past the end of a row.
//
// One pass of algo_cl_direct.cpp (the forward, or one phase of a data gradient) of one (sample,
// group) is a sum of shifted source rows:
//
//   out[o][ud, uh, u] = sum_{c < C, tap rows (kd, kh), k < KW} W[o][c][kd, kh, k] *
//                       src[c][ud + e_kd, uh + e_kh, u * cs + e_0 + k * cs]
//
// (e: the taps' source offsets; cs: 1, or 2 for dilation 2 along rows, each residue of u a row of
// its own, or for stride 2 with dilation 2). A forward of stride 2 (dilation 1) along rows reads
// src[..][u * 2 + e_0 + k]: its taps split by residue, k = r + 2 * j reads column
// (u + j) * 2 + e_0 + r, so it is the cs = 2 walk twice per tap row, with ceil((K - r) / 2) taps
// at column offset r (residues = 2; no tap is padded to a common width). The kernel reads src as
// stored (channel-major rows) and holds, for one output row, acc[u] = out[o0 .. o0+16][u0 + u]. The
// driver lists the tap rows whose source row exists for that row, so the kh range is clipped per
// output row at no cost. Along the row, source column p (p < UR + KW - 1) feeds the outputs u = p -
// k: per (tap row, c) the kernel loads the KW weight vectors W[o0..][c][kd, kh, k] and issues, for
// every source column inside the input row, its (up to KW) FMAs with the element broadcast from
// memory, or from a register it is broadcast into once (bcast_reg); columns in the padding are
// skipped, so the left and right edges cost nothing either. UR + KW + 1 <= 24 zmm.
#pragma once

#include <cstdint>

#include "gemm/sgemm.h"

namespace aclnn_cpu::conv {

inline constexpr int64_t kClMaxRow = 16;  // output positions per register tile
inline constexpr int64_t kClMaxKw = 7;    // kernel width (taps along a row)

// One output row tile of 16 output channels.
struct ClRow {
  const float* src;     // the source [C][ldc] of one (sample, group), channel-major as stored
  const int64_t* soff;  // per tap row t < rows: offset in a channel of its input row's column 0
  const int64_t* woff;  // per tap row: offset in w of its channel 0's weights [KW][16]
  int64_t rows;         // tap rows whose input row exists
  int64_t C, ldc;       // source channels; floats between channels of src
  const float* w;       // packed weights: tap row t, channel c at w + woff[t] + c * wc
  int64_t wc;
  int64_t col0;   // input column of the tile's first output at its first row tap (may be < 0)
  int64_t width;  // input columns per row: columns outside [0, width) are padding
  int64_t cs;     // input columns between row taps and between outputs: 1, or 2 (dilation 2)
  int64_t residues = 1;  // 1, or 2 = cs: stride 2 with dilation 1, the taps split by residue
  // AVX-512: each source column broadcast into a register once for all its taps (the bcast_reg
  // policy, cpu.h), rather than folded into every FMA as its memory operand.
  bool bcast_reg = false;
};

// out[o * ld_out + u * os] = the tile's output channel o at position u (reading input columns
// col0 + (u + k) * cs for row tap k; residues 2: col0 + u * 2 + k), for o < nch (<= 16) and
// u < ur (1..kClMaxRow), with kw (1..kClMaxKw) taps per row; zero when no tap row exists. os:
// the output's column stride (a strided data gradient's phase writes every os-th column).
void cl_direct_row_avx512(int64_t ur, int64_t kw, const ClRow& r, float* out, int64_t ld_out,
                          int64_t nch, int64_t os);
// The same on AVX2 + FMA (two halves of 8 channels), for r.cs == 1 and ur at most
// cl_row_kernel(kw).max_row only.
void cl_direct_row_avx2(int64_t ur, int64_t kw, const ClRow& r, float* out, int64_t ld_out,
                        int64_t nch, int64_t os);

// The row kernel this CPU runs (gemm::isa()), chosen once per pass: AVX-512's, whose tiles are
// up to kClMaxRow wide, or AVX2's, whose 16 ymm registers hold two halves' accumulators beside
// kw weight vectors and a broadcast column ((15 - kw) / 2 outputs).
struct ClRowKernel {
  void (*run)(int64_t ur, int64_t kw, const ClRow& r, float* out, int64_t ld_out, int64_t nch,
              int64_t os);
  int64_t max_row;  // widest tile for the pass's kw
};
inline ClRowKernel cl_row_kernel(int64_t kw) {
  if (gemm::isa() >= gemm::Isa::kAvx512) return {cl_direct_row_avx512, kClMaxRow};
  return {cl_direct_row_avx2, (15 - kw) / 2};
}

}  // namespace aclnn_cpu::conv
