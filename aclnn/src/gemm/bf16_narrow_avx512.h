// fp32 -> bf16 rounding in a register, shared by the narrowing pass (direct_narrow_avx512), the
// GEMM storing a 16-bit product (sgemm_avx512.cpp) and the kernels that store bf16 outputs
// themselves (cl_direct_bf16_avx512.cpp): round to nearest even on the bits, so denormals are kept
// (vcvtneps2bf16 would flush them) and a NaN stays a NaN (its upper half with the quiet bit set).
// Include only inside an AVX-512 target region.
#pragma once

#include <immintrin.h>

namespace aclnn_cpu::gemm {

// The 16 lanes of v as bf16 bits, in the low 16 bits of each 32-bit lane:
// (x + 0x7FFF + bit 16 of x) >> 16.
static inline __m512i bf16_bits_rne(__m512 v) {
  const __m512i x = _mm512_castps_si512(v);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(1));
  const __m512i r =
      _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(x, _mm512_set1_epi32(0x7FFF)), lsb), 16);
  const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
  return _mm512_mask_mov_epi32(r, nan,
                               _mm512_or_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(0x40)));
}

}  // namespace aclnn_cpu::gemm
