// panels.h's packers on AVX2 + F16C: 8 lanes, gemm::transpose8 for the transposing layouts.
// Called only where gemm::have_packed_gemm() and not gemm::have_avx512().
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "matmul/panels.h"

#include "gemm/target_avx2_begin.h"

#include "gemm/avx2_util.h"
#include "matmul/panels_kernels.h"

namespace aclnn_cpu::matmul {
namespace {

using conv::SrcKind;

// HF32 (half.h round_to_hf32): the low 12 mantissa bits rounded off to nearest even; inf and
// NaN unchanged.
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

struct V256 {
  using F = __m256;
  static constexpr int W = 8;

  // 8 16-bit values widened exactly (bf16: its bits are the fp32's top half).
  template <SrcKind K>
  static F widen(__m128i h) {
    if constexpr (K == SrcKind::kF16) return _mm256_cvtph_ps(h);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
  // An fp32 operand rounded as K says.
  template <SrcKind K>
  static F rounded(F v) {
    if constexpr (K == SrcKind::kF32Hf32) return round_hf32(v);
    if constexpr (K == SrcKind::kF32Fp16) return gemm::round_to_fp16(v);
    return v;
  }
  template <SrcKind K>
  static F load(const char* p) {
    if constexpr (K == SrcKind::kF16 || K == SrcKind::kBF16)
      return widen<K>(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return rounded<K>(_mm256_loadu_ps(reinterpret_cast<const float*>(p)));
  }
  // The first n (< 8) elements: fp32 by a masked load, 16-bit ones staged in a zeroed register
  // image (tails only: at most one per row or column of a block).
  template <SrcKind K>
  static F load_n(const char* p, int64_t n) {
    if constexpr (K == SrcKind::kF16 || K == SrcKind::kBF16) {
      alignas(16) uint16_t h[8] = {};
      std::memcpy(h, p, static_cast<size_t>(n) * 2);
      return widen<K>(_mm_load_si128(reinterpret_cast<const __m128i*>(h)));
    }
    return rounded<K>(_mm256_maskload_ps(reinterpret_cast<const float*>(p), gemm::first_lanes8(n)));
  }
  static F zero() { return _mm256_setzero_ps(); }
  static void store(float* p, F v) { _mm256_storeu_ps(p, v); }
  static void store8(float* p, F v) { _mm256_storeu_ps(p, v); }
  static void transpose(F r[W]) { gemm::transpose8(r); }
};

}  // namespace

namespace avx2 {

bool pack_a_block(const SrcMat& A, int64_t m, int64_t k0, int64_t kc, float* Ap) {
  return pack_a_block_as<V256>(A, m, k0, kc, Ap);
}

bool pack_b(const SrcMat& B, int64_t k0, int64_t kc, int64_t j0, int64_t n, float* Bp) {
  return pack_b_as<V256>(B, k0, kc, j0, n, Bp);
}

}  // namespace avx2
}  // namespace aclnn_cpu::matmul

#include "gemm/target_end.h"
