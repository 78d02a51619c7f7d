// The gradBias sums of the AVX-512 weight passes (direct_grid_avx512.cpp's fp32 transpose,
// direct_grid_bf16_avx512.cpp's dy pairs): a block's 16-lane fp32 sum widened into two double
// accumulators, and those added into the per-range sums. Include only inside an AVX-512 target
// region.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "gemm/avx512_util.h"

namespace aclnn_cpu::conv {

// (lo, hi) += s lane-wise in double: lanes 0-7 into lo, 8-15 into hi.
static inline void widen_add(__m512 s, __m512d& lo, __m512d& hi) {
  lo = _mm512_add_pd(lo, _mm512_cvtps_pd(_mm512_castps512_ps256(s)));
  hi = _mm512_add_pd(hi, _mm512_cvtps_pd(_mm512_extractf32x8_ps(s, 1)));
}

// sums[i] += (lo, hi)[i] for the lanes i < n.
static inline void add_sums(double* sums, __m512d lo, __m512d hi, int64_t n) {
  const __mmask8 ml = static_cast<__mmask8>(gemm::first_lanes(n)),
                 mh = static_cast<__mmask8>(gemm::first_lanes(n - 8));
  _mm512_mask_storeu_pd(sums, ml, _mm512_add_pd(_mm512_maskz_loadu_pd(ml, sums), lo));
  _mm512_mask_storeu_pd(sums + 8, mh, _mm512_add_pd(_mm512_maskz_loadu_pd(mh, sums + 8), hi));
}

}  // namespace aclnn_cpu::conv
