// Small AVX2 helpers shared by the AVX2 kernel files (gemm/sgemm_avx2.cpp, conv/*_avx2.cpp).
// Include only inside an AVX2 (+ F16C) target region (gemm/target_avx2_begin.h), after the
// runtime CPU check has been made by the caller's dispatch.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace aclnn_cpu::gemm {

// A maskload / maskstore mask selecting lanes [lo, hi) of 8 (bounds clamped to [0, 8]).
static inline __m256i lane_range8(int64_t lo, int64_t hi) {
  const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const int l = static_cast<int>(lo < 0 ? 0 : lo > 8 ? 8 : lo);
  const int h = static_cast<int>(hi < 0 ? 0 : hi > 8 ? 8 : hi);
  // lane i selected when lo <= i < hi: (i > lo - 1) and (h > i).
  return _mm256_and_si256(_mm256_cmpgt_epi32(iota, _mm256_set1_epi32(l - 1)),
                          _mm256_cmpgt_epi32(_mm256_set1_epi32(h), iota));
}

// The lowest n lanes of 8.
static inline __m256i first_lanes8(int64_t n) {
  return lane_range8(0, n);
}

// The fp16 value nearest each lane (ties to even; overflow to inf), widened back to fp32: half.h's
// round_to_half, which F16C's conversion is exactly (cubeMathType USE_FP16's operand rounding).
static inline __m256 round_to_fp16(__m256 v) {
  return _mm256_cvtph_ps(_mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

// 8 fp32 lanes rounded to fp16 or bf16 (to nearest even) in the low 128 bits, in order. bf16:
// x + 0x7FFF + (bit 16 of x), upper half; a NaN keeps its upper half with the quiet bit set.
static inline __m128i narrow8(bool bf16, __m256 v) {
  if (!bf16) return _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m256i x = _mm256_castps_si256(v);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1));
  const __m256i rounded =
      _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(x, _mm256_set1_epi32(0x7FFF)), lsb), 16);
  const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(0x40));
  const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  const __m256i r = _mm256_blendv_epi8(rounded, quiet, nan);  // [r0..r7], each < 2^16
  // packus works per 128-bit half: [r0..r3 r0..r3 | r4..r7 r4..r7]; keep quadwords 0 and 2.
  return _mm256_castsi256_si128(_mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08));
}

// In-register transpose of 8 x 8: r[i] holds row i on entry and column i on exit.
static inline void transpose8(__m256 r[8]) {
  __m256 t[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  __m256 u[8];
  for (int i = 0; i < 8; i += 4) {
    u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
    u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xee);
    u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xee);
  }
  // u[j] (j < 4) holds column j of rows 0..3 in its low half and column 4 + j of rows 0..3 in its
  // high half; u[4 + j] the same for rows 4..7.
  for (int j = 0; j < 4; ++j) {
    r[j] = _mm256_permute2f128_ps(u[j], u[4 + j], 0x20);
    r[4 + j] = _mm256_permute2f128_ps(u[j], u[4 + j], 0x31);
  }
}

}  // namespace aclnn_cpu::gemm
