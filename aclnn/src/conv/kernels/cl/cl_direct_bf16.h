// Channel-lane direct bf16 row kernel (AVX512_BF16): cl_direct.h's row tile with vdpbf16ps, so
// one instruction adds the products of a *pair* of reduction channels. The 16 lanes of a vector
// are 16 output channels; the reduction runs over pairs (c, c + 1) of source channels:
//
//   out[o][ud, uh, u] = sum_{c2 < C2, tap rows (kd, kh), k < KW, j < 2} W[o][2 c2 + j][kd, kh, k]
//                         * src[2 c2 + j][ud + e_kd, uh + e_kh, e_0 + (u + k) * cs]
//
// The source is channel-pair interleaved: src2[c2][s] is the 32-bit unit (src[2 c2][s] low,
// src[2 c2 + 1][s] high; zero high half past an odd C), and a weight vector is the 16 lanes'
// units (W[o][2 c2][q], W[o][2 c2 + 1][q]). vdpbf16ps with the source unit broadcast from memory
// ({1to16}) then adds, per lane, both products to the fp32 accumulator: the fp32 kernel's FMA
// count halves. The tile is one output row (up to 14 positions) of accumulators; source column p
// feeds outputs u = p - k; columns in the padding are skipped; tap rows outside the source are
// left out of the driver's list (algo_cl_direct_bf16.cpp). UR + KW <= 21 zmm.
//
// Products of bf16 values are exact in fp32; vdpbf16ps adds them rounding to nearest even but
// treats denormal inputs and results as zero (README).
#pragma once

#include <cstdint>

namespace aclnn_cpu::conv {

inline constexpr int64_t kClBf16MaxRow = 14;  // output positions per register tile
inline constexpr int64_t kClBf16MaxKw = 7;    // kernel width (taps along a row)

// One output row tile of 16 output channels over channel pairs.
struct ClRowBf16 {
  const uint32_t* src;  // the source [C2][ldc] of one (sample, group): channel pairs interleaved
  const int64_t* soff;  // per tap row t < rows: offset in a pair plane of its input row's column 0
  const int64_t* woff;  // per tap row: offset in w of its pair 0's weights [KW][16]
  int64_t rows;         // tap rows whose input row exists
  int64_t C2, ldc;      // channel pairs; units between pairs of src
  const uint32_t* w;    // packed weight pairs: tap row t, pair c2 at w + woff[t] + c2 * wc
  int64_t wc;
  int64_t col0;   // input column of the tile's first output at its first row tap (may be < 0)
  int64_t width;  // input columns per row: columns outside [0, width) are padding
  int64_t cs;     // input columns between row taps and between outputs: 1, or 2 (dilation 2)
};

// out[o * ld_out + u * os] = the tile's output channel o at position u (reading input columns
// col0 + (u + k) * cs for row tap k), for o < nch (<= 16) and u < ur (1..kClBf16MaxRow), with kw
// (1..kClBf16MaxKw) taps per row; zero when no tap row exists. os: the output's column stride (a
// strided data gradient's phase writes every os-th column). With out16 set, the outputs go there
// instead, as bf16 rounded to nearest even (the narrowing pass's rounding: no fp32 output to
// write and read back; out is then unused). Call only where bf16_dot_kernels().
void cl_direct_row_bf16(int64_t ur, int64_t kw, const ClRowBf16& r, float* out, uint16_t* out16,
                        int64_t ld_out, int64_t nch, int64_t os);

}  // namespace aclnn_cpu::conv
