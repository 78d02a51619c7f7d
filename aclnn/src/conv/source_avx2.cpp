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

namespace {

// 8 fp16 or bf16 values as fp32 (bf16: its bits are the fp32's top half).
inline __m256 widen8(bool bf16, __m128i h) {
  return bf16 ? _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16))
              : _mm256_cvtph_ps(h);
}

}  // namespace

void convert_16bit_avx2(bool bf16, const uint16_t* src, int64_t n, float* dst) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i,
                     widen8(bf16, _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
  if (i == n) return;
  alignas(16) uint16_t tail[8] = {};
  for (int64_t k = i; k < n; ++k) tail[k - i] = src[k];
  alignas(32) float out[8];
  _mm256_store_ps(out, widen8(bf16, _mm_load_si128(reinterpret_cast<const __m128i*>(tail))));
  for (int64_t k = i; k < n; ++k) dst[k] = out[k - i];
}

}  // namespace aclnn_cpu::conv

#include "gemm/target_end.h"
