// The channels-last row kernels of cl_direct.h for AVX2 + FMA CPUs (reached only after the runtime
// CPU check). The same walk as cl_direct_avx512.cpp with 8 lanes: a 16-channel tile (the packed
// weights' block) is two halves of 8 output channels, both held over the tile's UR outputs.
//
//   per (tap row t, channel c):  wv[k]   = W[o0 .. o0+8][c][t][k]                   KW ymm
//                                acc0[u] += wv[k] * x[c][t][col0 + u + k]            UR ymm
//                                acc1[u] += W[o0+8 .. o0+16][c][t][k] (memory) * x   UR ymm
//   source column p = u + k (p < UR + KW - 1) broadcast once into a register, then its (up to
//   2 KW) FMAs; columns in the padding are skipped.
//
// 16 ymm registers hold 2 UR accumulators, KW weight vectors and the broadcast column, so a tile is
// at most (15 - KW) / 2 outputs (cl_row_kernel): mnist2's 14-wide rows with a 5-tap kernel run as
// tiles of 4, 5 and 5, 50 FMAs per 5 + 25 weight loads and 9 broadcasts. Half 1's weights are read
// by the FMAs rather than held, so that both halves' 2 UR chains are in flight: one half at a time
// (7-wide tiles, weights in registers) had 7 chains, each 5 FMAs (20 cycles) deep per channel, and
// was latency-bound (measured: bench/RESULTS.md, design cl_direct_avx2.two-halves). Unit stride and
// dilation along rows only (cl_direct's plan says so on AVX2). No standard-library template is
// instantiated inside the target region.
#include <immintrin.h>

#include <cstdint>

#include "conv/kernels/cl/cl_direct.h"
#include "int_math.h"

#include "gemm/target_avx2_begin.h"

#include "gemm/avx2_util.h"

namespace aclnn_cpu::conv {
namespace {

// acc1[u] += w * xb with the weight vector w read from memory by the FMA itself. Compilers hold a
// vector read by several FMAs in a register instead, and the 16 ymm registers are taken.
static inline void fma_mem(__m256& acc, __m256 xb, const float* w) {
  asm("vfmadd231ps %[w], %[xb], %[acc]"
      : [acc] "+x"(acc)
      : [xb] "x"(xb), [w] "m"(*reinterpret_cast<const __m256*>(w)));
}

// acc0[u], acc1[u] += the KW taps of one (tap row, channel) for the tile's two halves: source
// column p (p < UR + KW - 1) at x + p feeds the outputs u = p - k with the weight vectors
// w[16 * k] (half 0, held in registers) and w[16 * k + 8] (half 1, FMA memory operands). kGuard:
// columns outside [plo, phi) are padding and skipped (false: an interior tile).
template <int UR, int KW, bool kGuard>
__attribute__((always_inline)) inline void taps(__m256 (&acc0)[UR], __m256 (&acc1)[UR],
                                                const float* w, const float* x, int64_t plo,
                                                int64_t phi) {
  constexpr int P = UR + KW - 1;
  __m256 wv[KW];
#pragma GCC unroll 8
  for (int k = 0; k < KW; ++k) wv[k] = _mm256_loadu_ps(w + 16 * k);
#pragma GCC unroll 32
  for (int p = 0; p < P; ++p) {
    if (kGuard && (p < plo || p >= phi)) continue;
    const __m256 xb = _mm256_broadcast_ss(x + p);
#pragma GCC unroll 8
    for (int k = 0; k < KW; ++k) {
      const int u = p - k;
      if (u < 0 || u >= UR) continue;
      acc0[u] = _mm256_fmadd_ps(wv[k], xb, acc0[u]);
      fma_mem(acc1[u], xb, w + 16 * k + 8);
    }
  }
}

// acc0/acc1[u] = sum over tap rows t, channels c and row taps k of W[c][t][k] * src[c][row
// t][col0 + u + k] for the tile's 16 output channels (8 in each).
template <int UR, int KW, bool kGuard>
inline void accumulate(__m256 (&acc0)[UR], __m256 (&acc1)[UR], const ClRow& r, int64_t plo,
                       int64_t phi) {
  const float* const src = r.src;
  const int64_t C = r.C, ldc = r.ldc, wc = r.wc, rows = r.rows;
  for (int64_t t = 0; t < rows; ++t) {
    const float* wt = r.w + r.woff[t];
    int64_t at = r.soff[t] + r.col0;  // column col0 of this tap row in channel 0
    for (int64_t c = 0; c < C; ++c, wt += wc, at += ldc)
      taps<UR, KW, kGuard>(acc0, acc1, wt, src + at, plo, phi);
  }
}

// out[o * ld_out + u * os] = acc[u] lane o for o < nch (<= 8), u < UR: an 8 x 8 transpose, then
// each channel's row stored masked (os == 1) or element by element.
template <int UR>
inline void store_half(const __m256 (&acc)[UR], float* out, int64_t ld_out, int64_t nch,
                       int64_t os) {
  static_assert(UR <= 8);
  __m256 v[8];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) v[i] = i < UR ? acc[i < UR ? i : 0] : _mm256_setzero_ps();
  gemm::transpose8(v);
  if (os == 1) {
    const __m256i m = gemm::first_lanes8(UR);
    for (int64_t o = 0; o < nch; ++o) _mm256_maskstore_ps(out + o * ld_out, m, v[o]);
  } else {
    alignas(32) float lanes[8];
    for (int64_t o = 0; o < nch; ++o) {
      _mm256_store_ps(lanes, v[o]);
      for (int u = 0; u < UR; ++u) out[o * ld_out + u * os] = lanes[u];
    }
  }
}

// Both halves at once: 2 UR accumulators, so that at least 8 FMA chains are in flight (one half
// at a time, mnist2's 7-wide tiles had 7, each 5 FMAs deep per channel: latency-bound).
template <int UR, int KW>
void row_tile(const ClRow& r, float* out, int64_t ld_out, int64_t nch, int64_t os) {
  constexpr int64_t P = UR + KW - 1;
  const int64_t c0 = r.col0;  // column p of the tile reads input column c0 + p
  const int64_t plo = c0 < 0 ? -c0 : 0, phi = r.width > c0 ? min64(P, r.width - c0) : 0;
  __m256 acc0[UR], acc1[UR];
#pragma GCC unroll 16
  for (int u = 0; u < UR; ++u) acc0[u] = acc1[u] = _mm256_setzero_ps();
  if (plo == 0 && phi == P) {
    accumulate<UR, KW, false>(acc0, acc1, r, plo, phi);
  } else {
    accumulate<UR, KW, true>(acc0, acc1, r, plo, phi);
  }
  store_half<UR>(acc0, out, ld_out, min64(8, nch), os);
  if (nch > 8) store_half<UR>(acc1, out + 8 * ld_out, ld_out, nch - 8, os);
}

using RowTile = void (*)(const ClRow&, float*, int64_t, int64_t, int64_t);

// The tile of UR outputs where its registers fit (2 UR + KW <= 15), else none (never asked for).
template <int UR, int KW>
constexpr RowTile tile_or_none() {
  if constexpr (2 * UR + KW <= 15) {
    return row_tile<UR, KW>;
  } else {
    return nullptr;
  }
}

template <int KW, int... U>
constexpr RowTile kTilesFor[8] = {nullptr, tile_or_none<U, KW>()...};

template <int KW>
constexpr const RowTile* tiles_for() {
  return kTilesFor<KW, 1, 2, 3, 4, 5, 6, 7>;
}

}  // namespace

void cl_direct_row_avx2(int64_t ur, int64_t kw, const ClRow& r, float* out, int64_t ld_out,
                        int64_t nch, int64_t os) {
  const RowTile* const tiles[kClMaxKw + 1] = {nullptr,        tiles_for<1>(), tiles_for<2>(),
                                              tiles_for<3>(), tiles_for<4>(), tiles_for<5>(),
                                              tiles_for<6>(), tiles_for<7>()};
  tiles[kw][ur](r, out, ld_out, nch, os);
}

}  // namespace aclnn_cpu::conv

#include "gemm/target_end.h"
