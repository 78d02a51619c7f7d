// tbc_kernels.h's row kernel, compiled for AVX512_BF16 (reached only after the runtime check,
// bf16_dot_kernels()). A register tile of up to 6 output rows x 4 vectors of 16 columns: per
// channel pair, 4 weight vectors are loaded once and each row's pair is broadcast against them
// (24 vdpbf16ps for 10 loads), all taps summed before the tile is stored. No standard-library
// template is instantiated inside the target region.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "conv/kernels/tbc/tbc_kernels.h"

// The whole file is compiled for AVX-512 with BF16.
#include "gemm/target_avx512bf16_begin.h"
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "conv/kernels/bf16_dot_avx512.h"

namespace aclnn_cpu::conv {
namespace {

constexpr int kMR = kTbcTileRows;
constexpr int kMaxNV = static_cast<int>(kTbcBlockCols / 16);

// The 32-bit unit at p (two bf16), read without an alignment assumption.
inline int unit_at(const uint16_t* p) {
  int u;
  std::memcpy(&u, p, sizeof(u));
  return u;
}

// acc[i][v] = bias[16 v + lane] + sum_t sum_c2 a[t][i](c2) . bp[t][c2][16 v + lane]
template <int MR, int NV>
void tile(const TbcPairTaps& w, const uint16_t* const* a, float* out) {
  __m512 acc[MR][NV];
#pragma GCC unroll 8
  for (int v = 0; v < NV; ++v) {
    const __m512 b = w.bias ? _mm512_loadu_ps(w.bias + 16 * v) : _mm512_setzero_ps();
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) acc[i][v] = b;
  }
  const int64_t full = w.C / 2, C2 = (w.C + 1) / 2;
  for (int64_t t = 0; t < w.taps; ++t) {
    const uint32_t* b = w.bp + t * C2 * kTbcBlockCols;
    const uint16_t* r[MR];
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) r[i] = a[t * MR + i];
    for (int64_t c2 = 0; c2 < full; ++c2, b += kTbcBlockCols)
      dot2_outer<MR, NV>(acc, b, [&](int i) { return unit_at(r[i] + 2 * c2); });
    if (full < C2)  // the odd last channel, paired with zero
      dot2_outer<MR, NV>(acc, b, [&](int i) { return static_cast<int>(r[i][2 * full]); });
  }
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) _mm512_storeu_ps(out + i * kTbcBlockCols + 16 * v, acc[i][v]);
}

using Tile = void (*)(const TbcPairTaps&, const uint16_t* const*, float*);

template <int NV>
constexpr Tile kByRows[kMR + 1] = {nullptr,     tile<1, NV>, tile<2, NV>, tile<3, NV>,
                                   tile<4, NV>, tile<5, NV>, tile<6, NV>};
constexpr const Tile* kTiles[kMaxNV + 1] = {nullptr, kByRows<1>, kByRows<2>, kByRows<3>,
                                            kByRows<4>};

}  // namespace

void tbc_bf16_tile(const TbcPairTaps& w, int rows, int nv, const uint16_t* const* a, float* out) {
  kTiles[nv][rows](w, a, out);
}

void tbc_sum_rows_bf16(const uint16_t* a, const uint16_t* b, int64_t n, double* acc) {
  for (int64_t i = 0; i < n; i += 8) {
    const __mmask8 m = static_cast<__mmask8>(n - i >= 8 ? 0xff : (1u << (n - i)) - 1);
    const __m256 fa = _mm256_castsi256_ps(
        _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_maskz_loadu_epi16(m, a + i)), 16));
    const __m256 fb = _mm256_castsi256_ps(
        _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_maskz_loadu_epi16(m, b + i)), 16));
    __m512d s = _mm512_maskz_loadu_pd(m, acc + i);
    s = _mm512_add_pd(s, _mm512_cvtps_pd(fa));
    s = _mm512_add_pd(s, _mm512_cvtps_pd(fb));
    _mm512_mask_storeu_pd(acc + i, m, s);
  }
}

}  // namespace aclnn_cpu::conv

#pragma GCC diagnostic pop
#include "gemm/target_end.h"
