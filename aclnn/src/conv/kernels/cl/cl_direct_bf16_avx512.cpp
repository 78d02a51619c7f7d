// The channel-lane bf16 row kernels of cl_direct_bf16.h, compiled for AVX-512 + AVX512_BF16
// (reached only after the runtime check, bf16_dot_kernels()). The fp32 row kernel of
// cl_direct_avx512.cpp with vdpbf16ps on channel pairs: per (tap row, channel pair) KW weight
// vectors of 16 lanes x 2 bf16, and each source unit (a pair of channels at one column) broadcast
// into the (up to KW) accumulators it reaches. No standard-library template is
// instantiated inside the target region.
#include <immintrin.h>

#include <cstdint>

#include "conv/kernels/cl/cl_direct_bf16.h"
#include "int_math.h"

#include "gemm/target_avx512bf16_begin.h"
// GCC 12 sees the intrinsics' internal __Y as uninitialized in the transposes.
#if !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "conv/kernels/bf16_dot_avx512.h"
#include "gemm/avx512_util.h"
#include "gemm/bf16_narrow_avx512.h"
#include "conv/kernels/cl/cl_store_avx512.h"

namespace aclnn_cpu::conv {

using gemm::bf16_bits_rne;

namespace {

// acc + the lanes' pair dot of w with the unit *p broadcast from memory: vdpbf16ps's {1to16}
// operand, one instruction where the intrinsics give two (GCC 12 does not fold the
// _mm512_set1_epi32 of a load into it).
inline __m512 dot2_from(__m512 acc, __m512i w, const uint32_t* p) {
  asm("vdpbf16ps %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(w), "m"(*p));
  return acc;
}

// acc[u] (16 output channels at output u of the tile) += sum over tap rows t, channel pairs c2,
// row taps k of W2[t][c2][k] . src2[c2][row t][col0 + (u + k) * CS] (one vdpbf16ps per term:
// both channels of the pair). Source column p = u + k is dotted into the (up to KW) accumulators
// it reaches; p outside [plo, phi) is padding and skipped. kGuard 0: no test (an interior tile);
// 1: the first and last KW - 1 columns are tested (a row's edge within the kernel's reach); 2:
// every column.
//
// KW <= 2 (stride 2's phases: 1 or 2 taps a row) broadcasts each unit from memory in its dot
// products (dot2_from): with KW = 1 a broadcast per dot, the separate vpbroadcastd doubled the
// instructions. KW = 3 keeps the broadcast in a register for its three dots, which was faster there
// than the memory form (measured: bench/RESULTS.md, design cl_direct_bf16_avx512.broadcast).
template <int UR, int KW, int CS, int kGuard>
inline void accumulate(__m512 (&acc)[UR], const ClRowBf16& r, int64_t plo, int64_t phi) {
  constexpr int P = UR + KW - 1;
  const uint32_t* const src = r.src;
  const int64_t C2 = r.C2, ldc = r.ldc, wc = r.wc, rows = r.rows;
  for (int64_t t = 0; t < rows; ++t) {
    const uint32_t* wt = r.w + r.woff[t];
    int64_t at = r.soff[t] + r.col0;  // column col0 of this tap row in pair 0
    for (int64_t c = 0; c < C2; ++c, wt += wc, at += ldc) {
      __m512i wv[KW];
#pragma GCC unroll 8
      for (int k = 0; k < KW; ++k) wv[k] = _mm512_loadu_si512(wt + 16 * k);
#pragma GCC unroll 32
      for (int p = 0; p < P; ++p) {
        if (kGuard == 2 && (p < plo || p >= phi)) continue;
        if (kGuard == 1 && ((p < KW - 1 && p < plo) || (p >= UR && p >= phi))) continue;
        if constexpr (KW <= 2) {
#pragma GCC unroll 8
          for (int k = 0; k < KW; ++k) {
            const int u = p - k;
            if (u >= 0 && u < UR) acc[u] = dot2_from(acc[u], wv[k], src + at + p * CS);
          }
          continue;
        }
        // KW >= 3: the unit broadcast once into a register for its (up to KW) dot products: level
        // with broadcasting it from memory in each (vdpbf16ps's {1to16} operand; measured:
        // bench/RESULTS.md, design cl_direct_bf16_avx512.broadcast).
        const __m512i xb = _mm512_set1_epi32(static_cast<int>(src[at + p * CS]));
#pragma GCC unroll 8
        for (int k = 0; k < KW; ++k) {
          const int u = p - k;
          if (u >= 0 && u < UR) acc[u] = dot2(acc[u], wv[k], xb);
        }
      }
    }
  }
}

// cl_store_tile's bf16 form: acc[u] (16 channels at position u < UR) -> out16[o * ld_out + u * os]
// for o < nch, rounded to bf16 after the transpose (bf16_bits_rne: the narrowing pass's
// rounding). A stride-2 phase's row widens each 16-bit value to 32 bits and stores the low halves
// only, which are the even 16-bit positions.
template <int UR>
ACLNN_AVX512_INLINE void store_tile_bf16(const __m512 (&acc)[UR], uint16_t* out16, int64_t ld_out,
                                         int64_t nch, int64_t os) {
  __m512 v[16];
  cl_tile_by_channel<UR>(acc, v);
  const __mmask16 m = gemm::first_lanes(UR);
  const __mmask32 even = 0x55555555u & ((1u << (2 * UR - 1)) - 1);  // positions 0, 2, .., 2 UR - 2
  if (os == 1 || os == 2) {
#pragma GCC unroll 16
    for (int o = 0; o < 16; ++o) {
      if (o >= nch) break;
      const __m512i bits = bf16_bits_rne(v[o]);
      if (os == 1) {
        _mm256_mask_storeu_epi16(out16 + o * ld_out, m, _mm512_cvtepi32_epi16(bits));
      } else {
        _mm512_mask_storeu_epi16(out16 + o * ld_out, even, bits);
      }
    }
    return;
  }
  alignas(64) uint32_t lanes[16];
  for (int64_t o = 0; o < nch; ++o) {
    _mm512_store_si512(lanes, bf16_bits_rne(v[o]));
    for (int64_t u = 0; u < UR; ++u) out16[o * ld_out + u * os] = static_cast<uint16_t>(lanes[u]);
  }
}

// One row tile: the accumulators, then out[o][u * os] = acc[u][o] (a 16 x 16 transpose), or
// out16's bf16 where set.
template <int UR, int KW, int CS>
void row_tile(const ClRowBf16& r, float* out, uint16_t* out16, int64_t ld_out, int64_t nch,
              int64_t os) {
  constexpr int P = UR + KW - 1;  // source columns the tile reads, CS apart
  // Column p reads input column col0 + p * CS: inside the row for p in [plo, phi).
  const int64_t plo = r.col0 < 0 ? (CS - 1 - r.col0) / CS : 0;
  const int64_t phi = r.width > r.col0 ? min64(P, (r.width - r.col0 + CS - 1) / CS) : 0;
  __m512 acc[UR];
#pragma GCC unroll 16
  for (int u = 0; u < UR; ++u) acc[u] = _mm512_setzero_ps();
  if (plo == 0 && phi == P) {
    accumulate<UR, KW, CS, 0>(acc, r, plo, phi);
  } else if (plo < KW && phi >= UR) {
    accumulate<UR, KW, CS, 1>(acc, r, plo, phi);
  } else {
    accumulate<UR, KW, CS, 2>(acc, r, plo, phi);
  }
  if (out16) {
    store_tile_bf16<UR>(acc, out16, ld_out, nch, os);
  } else {
    cl_store_tile<UR>(acc, out, ld_out, nch, os);
  }
}

using RowTile = void (*)(const ClRowBf16&, float*, uint16_t*, int64_t, int64_t, int64_t);

template <int KW, int CS>
constexpr RowTile kRowTiles[kClBf16MaxRow + 1] = {nullptr,
                                                  row_tile<1, KW, CS>,
                                                  row_tile<2, KW, CS>,
                                                  row_tile<3, KW, CS>,
                                                  row_tile<4, KW, CS>,
                                                  row_tile<5, KW, CS>,
                                                  row_tile<6, KW, CS>,
                                                  row_tile<7, KW, CS>,
                                                  row_tile<8, KW, CS>,
                                                  row_tile<9, KW, CS>,
                                                  row_tile<10, KW, CS>,
                                                  row_tile<11, KW, CS>,
                                                  row_tile<12, KW, CS>,
                                                  row_tile<13, KW, CS>,
                                                  row_tile<14, KW, CS>};

template <int CS>
RowTile row_tile_for(int64_t ur, int64_t kw) {
  switch (kw) {
    case 1:
      return kRowTiles<1, CS>[ur];
    case 2:
      return kRowTiles<2, CS>[ur];
    case 3:
      return kRowTiles<3, CS>[ur];
    case 4:
      return kRowTiles<4, CS>[ur];
    case 5:
      return kRowTiles<5, CS>[ur];
    case 6:
      return kRowTiles<6, CS>[ur];
    default:
      return kRowTiles<7, CS>[ur];
  }
}

}  // namespace

void cl_direct_row_bf16(int64_t ur, int64_t kw, const ClRowBf16& r, float* out, uint16_t* out16,
                        int64_t ld_out, int64_t nch, int64_t os) {
  (r.cs == 2 ? row_tile_for<2>(ur, kw) : row_tile_for<1>(ur, kw))(r, out, out16, ld_out, nch, os);
}

}  // namespace aclnn_cpu::conv

#if !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#include "gemm/target_end.h"
