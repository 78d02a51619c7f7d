// The AVX-512 step of strided_direct's weight gradient (strided_direct.h) that is not the weight
// kernel itself (direct_grid.h's): the accumulators back to dw's layout. Compiled for AVX-512 by
// the region below and called only after the runtime CPU check; no library templates inside.
#include <immintrin.h>

#include <cstdint>

#include "conv/kernels/strided/strided_direct.h"
#include "gemm/target_avx512_begin.h"
#pragma GCC diagnostic push
// GCC 12 intrinsics start from an undefined vector: known -W(maybe-)uninitialized false positives.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include "gemm/avx512_util.h"

namespace aclnn_cpu::conv {

// Per input channel c, dwt's [K][m16] slice (rows q, nc * m16 apart) is a K x Cog matrix whose
// transpose is dw's Cog rows at column c * K: 16 x 16 blocks transposed in registers, loads masked
// past Cog and K, stores masked past K (the scalar scatter it replaces read dwt a column at a time;
// measured: bench/RESULTS.md, design strided_direct_avx512.transpose).
void weight_acc_to_dw_avx512(const float* dwt, int64_t K, int64_t nc, int64_t m16, int64_t Cog,
                             float* dw, int64_t ld) {
  const int64_t rs = nc * m16;  // dwt's row (tap) stride
  for (int64_t c = 0; c < nc; ++c)
    for (int64_t q0 = 0; q0 < K; q0 += 16) {
      const __mmask16 qm = gemm::first_lanes(K - q0);
      for (int64_t o0 = 0; o0 < Cog; o0 += 16) {
        const __mmask16 om = gemm::first_lanes(Cog - o0);
        const float* src = dwt + q0 * rs + c * m16 + o0;
        __m512 v[16];
#pragma GCC unroll 16
        for (int i = 0; i < 16; ++i)
          v[i] = q0 + i < K ? _mm512_maskz_loadu_ps(om, src + i * rs) : _mm512_setzero_ps();
        gemm::transpose16(v);  // v[i] = output channel o0 + i over taps q0 ..
        float* dst = dw + o0 * ld + c * K + q0;
        for (int64_t i = 0; i < 16 && o0 + i < Cog; ++i)
          _mm512_mask_storeu_ps(dst + i * ld, qm, v[i]);
      }
    }
}

}  // namespace aclnn_cpu::conv

#pragma GCC diagnostic pop
#include "gemm/target_end.h"
