// The AVX512_BF16 row kernel of tbc_bf16.cpp (tbc_bf16_avx512.cpp; call only where
// bf16_dot_kernels()). It sums the taps of one output tile in registers:
//
//   tile[i][j] = bias[j] + sum_t sum_{c < C} a[t][i][c] * W_t(c, j)     i < rows, j < 16 nv
//
// a[t][i] is the bf16 row of tap t that output row i reads (the caller's activation row, or a
// zero row in the padding): two adjacent channels (2 c2, 2 c2 + 1) are one 32-bit unit, so a
// broadcast of that unit against a vector of 16 weight pairs is one vdpbf16ps, no packing of the
// activations. The weights are packed per 64-column block: bp[t][c2][64], unit j =
// (W_t(2 c2, j), W_t(2 c2 + 1, j)), zero past C or the block's columns. An odd last channel is
// read alone (its pair would reach past the row).
#pragma once

#include <cstdint>

namespace aclnn_cpu::conv {

inline constexpr int64_t kTbcBlockCols = 64;  // columns of a packed weight block (4 vectors)
inline constexpr int kTbcTileRows = 6;        // output rows per register tile

struct TbcPairTaps {
  int64_t taps = 1;
  int64_t C = 0;                 // reduction channels of every row
  const uint32_t* bp = nullptr;  // [taps][ceil(C / 2)][kTbcBlockCols]
  const float* bias = nullptr;   // kTbcBlockCols floats, or null for zero
};

// tile [rows][kTbcBlockCols] fp32 (only the first 16 nv columns written); a[t * rows + i].
void tbc_bf16_tile(const TbcPairTaps& w, int rows, int nv, const uint16_t* const* a, float* tile);

// acc[i] += a[i], then += b[i], for i < n (two bf16 rows added in double: the bias gradient).
void tbc_sum_rows_bf16(const uint16_t* a, const uint16_t* b, int64_t n, double* acc);

}  // namespace aclnn_cpu::conv
