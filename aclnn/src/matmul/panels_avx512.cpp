// panels.h's packers on AVX-512: 16 lanes, masked loads for the tails (the 16-bit kinds through
// AVX512BW's 16-bit masks), gemm::transpose16 for the transposing layouts. Called only where
// gemm::have_avx512().
#include <immintrin.h>

#include <cstdint>

#include "matmul/panels.h"

#include "gemm/target_avx512_begin.h"
// GCC 12's AVX-512 intrinsics start from _mm512_undefined_ps() internally, which
// -Wmaybe-uninitialized reports (a known false positive; see gemm/sgemm_avx512.cpp).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include "gemm/avx512_util.h"
#include "matmul/panels_kernels.h"

namespace aclnn_cpu::matmul {
namespace {

using conv::SrcKind;

// HF32 (half.h round_to_hf32): the low 12 mantissa bits rounded off to nearest even; inf and
// NaN unchanged.
inline __m512 round_hf32(__m512 v) {
  const __m512i x = _mm512_castps_si512(v);
  const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(x, 12), _mm512_set1_epi32(1));
  const __m512i r =
      _mm512_and_si512(_mm512_add_epi32(_mm512_add_epi32(x, _mm512_set1_epi32(0x7FF)), odd),
                       _mm512_set1_epi32(~0xFFF));
  const __m512i exp = _mm512_set1_epi32(0x7F800000);
  const __mmask16 special = _mm512_cmpeq_epi32_mask(_mm512_and_si512(x, exp), exp);
  return _mm512_castsi512_ps(_mm512_mask_mov_epi32(r, special, x));
}

struct V512 {
  using F = __m512;
  static constexpr int W = 16;

  // The lanes of `m` from p, as stored (16-bit kinds widened exactly), then rounded as K says.
  template <SrcKind K>
  static F masked(const char* p, __mmask16 m) {
    if constexpr (K == SrcKind::kF16) return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
    if constexpr (K == SrcKind::kBF16)
      return _mm512_castsi512_ps(
          _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p)), 16));
    const F v = _mm512_maskz_loadu_ps(m, p);
    if constexpr (K == SrcKind::kF32Hf32) return round_hf32(v);
    if constexpr (K == SrcKind::kF32Fp16)
      return _mm512_cvtph_ps(_mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    return v;
  }
  template <SrcKind K>
  static F load(const char* p) {
    return masked<K>(p, 0xFFFF);
  }
  template <SrcKind K>
  static F load_n(const char* p, int64_t n) {
    return masked<K>(p, gemm::first_lanes(n));
  }
  static F zero() { return _mm512_setzero_ps(); }
  static void store(float* p, F v) { _mm512_storeu_ps(p, v); }
  static void store8(float* p, F v) { _mm256_storeu_ps(p, _mm512_castps512_ps256(v)); }
  static void transpose(F r[W]) { gemm::transpose16(r); }
};

}  // namespace

namespace avx512 {

bool pack_a_block(const SrcMat& A, int64_t m, int64_t k0, int64_t kc, float* Ap) {
  return pack_a_block_as<V512>(A, m, k0, kc, Ap);
}

bool pack_b(const SrcMat& B, int64_t k0, int64_t kc, int64_t j0, int64_t n, float* Bp) {
  return pack_b_as<V512>(B, k0, kc, j0, n, Bp);
}

}  // namespace avx512
}  // namespace aclnn_cpu::matmul

#pragma GCC diagnostic pop
#include "gemm/target_end.h"
