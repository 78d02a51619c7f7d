// Small AVX-512 helpers shared by the packing routines (gemm/,
// conv/kernels/im2col/im2col_panels_avx512.cpp). Include only inside an AVX-512 target region
// (#pragma GCC target), after the runtime CPU check has been made by the caller's dispatch.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace aclnn_cpu::gemm {

// The lowest n lanes of 16 (n clamped to [0, 16]).
static inline __mmask16 first_lanes(int64_t n) {
  return static_cast<__mmask16>(n >= 16 ? 0xffffu : n <= 0 ? 0u : (1u << n) - 1);
}

// Forced inline for the register-only helpers below (an out-of-line call passes its __m512
// arrays through the stack), except under AddressSanitizer: there, clang 14 took over 15 minutes
// (against 11) for cl_direct_avx512.cpp's instantiations with them inlined, and speed does not
// matter.
#if defined(__SANITIZE_ADDRESS__)
#define ACLNN_AVX512_INLINE static inline
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ACLNN_AVX512_INLINE static inline
#endif
#endif
#ifndef ACLNN_AVX512_INLINE
#define ACLNN_AVX512_INLINE __attribute__((always_inline)) static inline
#endif

// In-register transpose of 16 x 16: r[i] holds row i on entry and column i on exit. Every loop is
// unrolled: GCC 12 at -O2 left them rolled where it did not inline this, its arrays on the stack,
// at about three times the cycles (measured: bench/RESULTS.md, design avx512_util.transpose16),
// which the channel-lane row kernels paid once per tile.
ACLNN_AVX512_INLINE void transpose16(__m512 r[16]) {
  __m512 t[16];
#pragma GCC unroll 8
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
#pragma GCC unroll 4
  for (int i = 0; i < 16; i += 4) {
    const __m512d a = _mm512_castps_pd(t[i]), b = _mm512_castps_pd(t[i + 1]);
    const __m512d c = _mm512_castps_pd(t[i + 2]), d = _mm512_castps_pd(t[i + 3]);
    r[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
    r[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
    r[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
    r[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
  }
  // r[4q + j] now holds, in 128-bit lane L, element j of rows 4L' .. (rows 4q..4q+3 of lane L):
  // lanes still need a 4 x 4 transpose of 128-bit blocks across r[j], r[4+j], r[8+j], r[12+j].
#pragma GCC unroll 4
  for (int j = 0; j < 4; ++j) {
    const __m512 a = _mm512_shuffle_f32x4(r[j], r[4 + j], 0x88);       // lanes 0,2 | 0,2
    const __m512 b = _mm512_shuffle_f32x4(r[j], r[4 + j], 0xdd);       // lanes 1,3 | 1,3
    const __m512 c = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0x88);  // lanes 0,2 | 0,2
    const __m512 d = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0xdd);  // lanes 1,3 | 1,3
    t[j] = _mm512_shuffle_f32x4(a, c, 0x88);                           // lane 0 of all four
    t[8 + j] = _mm512_shuffle_f32x4(a, c, 0xdd);                       // lane 2
    t[4 + j] = _mm512_shuffle_f32x4(b, d, 0x88);                       // lane 1
    t[12 + j] = _mm512_shuffle_f32x4(b, d, 0xdd);                      // lane 3
  }
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i) r[i] = t[i];
}

}  // namespace aclnn_cpu::gemm
