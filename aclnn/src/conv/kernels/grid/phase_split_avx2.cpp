// The AVX2 + FMA form of a stride-2 row split into its two phase planes (tap_grid.cpp's bands of
// strided convolutions; the AVX-512 form is direct_split2_avx512). Without it an AVX2-only CPU
// copied each phase element by element, a large share of a stride-2 3d transposed convolution's
// gradients (measured: bench/RESULTS.md, design phase_split_avx2.copy). Reached only after the
// runtime CPU check.
#include <immintrin.h>

#include <cstdint>

#include "conv/kernels/grid/tap_grid.h"

#include "gemm/target_avx2_begin.h"

namespace aclnn_cpu::conv {

void phase_split2_avx2(const float* src, int64_t n, float* even, float* odd) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 a = _mm256_loadu_ps(src + 2 * i);      // x0 .. x7
    const __m256 b = _mm256_loadu_ps(src + 2 * i + 8);  // x8 .. x15
    // Per 128-bit lane: [x0 x2 x8 x10 | x4 x6 x12 x14]; the 64-bit pairs reordered 0, 2, 1, 3.
    const __m256 e = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0));
    const __m256 o = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1));
    _mm256_storeu_ps(even + i, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(e), 0xd8)));
    _mm256_storeu_ps(odd + i, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(o), 0xd8)));
  }
  for (; i < n; ++i) {
    even[i] = src[2 * i];
    odd[i] = src[2 * i + 1];
  }
}

}  // namespace aclnn_cpu::conv

#include "gemm/target_end.h"
