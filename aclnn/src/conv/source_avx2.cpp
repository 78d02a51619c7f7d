// Source::convert's AVX2 form (F16C for the fp16 kinds), like direct_convert_avx512 on AVX-512
// CPUs: element by element through Source::value, an AVX2-only CPU spent more time converting
// an fp16 or bf16 convolution's bands (and rounding USE_FP16 / HF32 operands) than computing.
// Reached only after the runtime CPU check (avx2 and f16c).
#include <immintrin.h>

#include <cstdint>
#include <cstring>

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

// The fp16 value nearest each lane (ties to even; overflow to inf), as fp32: half.h round_to_half.
inline __m256 round_fp16(__m256 v) {
  return _mm256_cvtph_ps(_mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

// Each lane with its low 12 mantissa bits rounded off to nearest even, inf and NaN unchanged:
// half.h round_to_hf32.
inline __m256 round_hf32(__m256 v) {
  const __m256i x = _mm256_castps_si256(v);
  const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(x, 12), _mm256_set1_epi32(1));
  const __m256i r =
      _mm256_and_si256(_mm256_add_epi32(_mm256_add_epi32(x, _mm256_set1_epi32(0x7FF)), odd),
                       _mm256_set1_epi32(~0xFFF));
  const __m256i exp = _mm256_set1_epi32(0x7F800000);
  const __m256i special = _mm256_cmpeq_epi32(_mm256_and_si256(x, exp), exp);
  return _mm256_castsi256_ps(_mm256_blendv_epi8(r, x, special));
}

// 8 elements of `kind` at `src` (element units) as fp32, converted and rounded.
inline __m256 load8(SrcKind kind, const void* src) {
  if (kind == SrcKind::kF32 || kind == SrcKind::kF32Hf32 || kind == SrcKind::kF32Fp16) {
    const __m256 v = _mm256_loadu_ps(static_cast<const float*>(src));
    return kind == SrcKind::kF32Hf32   ? round_hf32(v)
           : kind == SrcKind::kF32Fp16 ? round_fp16(v)
                                       : v;
  }
  const __m128i h = _mm_loadu_si128(static_cast<const __m128i*>(src));
  const __m256 v = widen8(kind != SrcKind::kF16, h);
  return kind == SrcKind::kBF16Fp16 ? round_fp16(v) : v;
}

}  // namespace

void convert_avx2(SrcKind kind, const void* src, int64_t n, float* dst) {
  const int64_t bytes = static_cast<int64_t>(Source{src, kind}.elem_bytes());
  const char* s = static_cast<const char*>(src);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, load8(kind, s + i * bytes));
  if (i == n) return;
  // The tail through an 8-element staging copy: no read past element n - 1.
  alignas(32) char tail[32] = {};
  for (int64_t b = 0; b < (n - i) * bytes; ++b) tail[b] = s[i * bytes + b];
  alignas(32) float out[8];
  _mm256_store_ps(out, load8(kind, tail));
  for (int64_t k = i; k < n; ++k) dst[k] = out[k - i];
}

namespace {

// 8 fp32 lanes rounded to fp16 or bf16 (to nearest even) in the low 128 bits, in order. bf16:
// x + 0x7FFF + (bit 16 of x), upper half; a NaN keeps its upper half with the quiet bit set.
inline __m128i narrow8(bool bf16, __m256 v) {
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

}  // namespace

void narrow_avx2(bool bf16, const float* src, int64_t n, uint16_t* dst) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), narrow8(bf16, _mm256_loadu_ps(src + i)));
  if (i == n) return;
  // The tail through 8-element staging copies: nothing read or written past element n - 1.
  alignas(32) float in[8] = {};
  alignas(16) uint16_t out[8];
  std::memcpy(in, src + i, static_cast<size_t>(n - i) * sizeof(float));
  _mm_store_si128(reinterpret_cast<__m128i*>(out), narrow8(bf16, _mm256_load_ps(in)));
  std::memcpy(dst + i, out, static_cast<size_t>(n - i) * sizeof(uint16_t));
}

}  // namespace aclnn_cpu::conv

#include "gemm/target_end.h"
