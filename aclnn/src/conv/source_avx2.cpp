// Source::convert's AVX2 form for the 16-bit kinds converted exactly (fp16 with F16C, bf16 by a
// shift), like direct_convert_avx512 on AVX-512 CPUs: element by element through Source::value,
// an AVX2-only CPU spent more time converting an fp16 or bf16 convolution's bands than computing.
// Reached only after the runtime CPU check (avx2 and f16c).
#include <immintrin.h>

#include <cstdint>

#include "conv/source.h"

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#endif

namespace aclnn_cpu::conv {

void convert_16bit_avx2(bool bf16, const uint16_t* src, int64_t n, float* dst) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    const __m256 v = bf16 ? _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16))
                          : _mm256_cvtph_ps(h);
    _mm256_storeu_ps(dst + i, v);
  }
  if (i == n) return;
  alignas(16) uint16_t tail[8] = {};
  for (int64_t k = i; k < n; ++k) tail[k - i] = src[k];
  const __m128i h = _mm_load_si128(reinterpret_cast<const __m128i*>(tail));
  alignas(32) float out[8];
  _mm256_store_ps(out, bf16 ? _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16))
                            : _mm256_cvtph_ps(h));
  for (int64_t k = i; k < n; ++k) dst[k] = out[k - i];
}

}  // namespace aclnn_cpu::conv

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
