// The store of the channel-lane row kernels (cl_direct_avx512.cpp and
// cl_direct_bf16_avx512.cpp): a tile's accumulators hold 16 output channels per output position
// and are written to a channel-major output. Include only inside the includer's target region,
// after gemm/avx512_util.h, so these helpers are compiled for that region's ISA (each file gets
// its own copy: they are static). No standard-library template is instantiated here.
#pragma once

#include <cstdint>

#include "gemm/avx512_util.h"

namespace aclnn_cpu::conv {

// out[o * ld_out + u * os] = v[o][u] for o < nch, u < ur: contiguous, every other element (a
// stride-2 data gradient's phase, like direct_scatter2_avx512), or one by one.
static inline void cl_store_rows(const __m512* v, int64_t ur, float* out, int64_t ld_out,
                                 int64_t nch, int64_t os) {
  if (os == 1) {
    const __mmask16 m = gemm::first_lanes(ur);
    for (int64_t o = 0; o < nch; ++o) _mm512_mask_storeu_ps(out + o * ld_out, m, v[o]);
  } else if (os == 2) {  // lane 2k of the low (high) half is v[k] (v[8 + k])
    const __m512i lo_idx = _mm512_set_epi32(7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1, 1, 0, 0);
    const __m512i hi_idx = _mm512_add_epi32(lo_idx, _mm512_set1_epi32(8));
    const __mmask16 lo = gemm::first_lanes(2 * ur - 1) & 0x5555;
    const __mmask16 hi = gemm::first_lanes(2 * ur - 17) & 0x5555;
    for (int64_t o = 0; o < nch; ++o) {
      _mm512_mask_storeu_ps(out + o * ld_out, lo, _mm512_permutexvar_ps(lo_idx, v[o]));
      _mm512_mask_storeu_ps(out + o * ld_out + 16, hi, _mm512_permutexvar_ps(hi_idx, v[o]));
    }
  } else {
    alignas(64) float lanes[16];
    for (int64_t o = 0; o < nch; ++o) {
      _mm512_store_ps(lanes, v[o]);
      for (int64_t u = 0; u < ur; ++u) out[o * ld_out + u * os] = lanes[u];
    }
  }
}

// cl_store_rows for all 16 channels and os 1 or 2, unrolled so v stays in registers (the runtime
// channel loop above spills v to the stack and reloads it, which showed in bf16 stride2's profile;
// measured: bench/RESULTS.md, design cl_store_avx512.unrolled).
template <int UR>
ACLNN_AVX512_INLINE void cl_store_rows16(const __m512* v, float* out, int64_t ld_out, int64_t os) {
  if (os == 1) {
    const __mmask16 m = gemm::first_lanes(UR);
#pragma GCC unroll 16
    for (int o = 0; o < 16; ++o) _mm512_mask_storeu_ps(out + o * ld_out, m, v[o]);
  } else {
    const __m512i lo_idx = _mm512_set_epi32(7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1, 1, 0, 0);
    const __m512i hi_idx = _mm512_add_epi32(lo_idx, _mm512_set1_epi32(8));
    const __mmask16 lo = gemm::first_lanes(2 * UR - 1) & 0x5555;
    const __mmask16 hi = gemm::first_lanes(2 * UR - 17) & 0x5555;
#pragma GCC unroll 16
    for (int o = 0; o < 16; ++o) {
      _mm512_mask_storeu_ps(out + o * ld_out, lo, _mm512_permutexvar_ps(lo_idx, v[o]));
      if (UR > 8)
        _mm512_mask_storeu_ps(out + o * ld_out + 16, hi, _mm512_permutexvar_ps(hi_idx, v[o]));
    }
  }
}

// v[o] = channel o's positions of a tile whose acc[u] holds the 16 channels at position u < UR:
// a 16 x 16 transpose, positions past UR zero.
template <int UR>
ACLNN_AVX512_INLINE void cl_tile_by_channel(const __m512 (&acc)[UR], __m512 (&v)[16]) {
#pragma GCC unroll 16
  for (int u = 0; u < 16; ++u) v[u] = u < UR ? acc[u < UR ? u : 0] : _mm512_setzero_ps();
  gemm::transpose16(v);
}

// acc[u] = the 16 output channels at position u < UR of a tile -> out[o * ld_out + u * os] for
// o < nch: cl_tile_by_channel, then cl_store_rows.
template <int UR>
ACLNN_AVX512_INLINE void cl_store_tile(const __m512 (&acc)[UR], float* out, int64_t ld_out,
                                       int64_t nch, int64_t os) {
  __m512 v[16];
  cl_tile_by_channel<UR>(acc, v);
  if (nch == 16 && (os == 1 || os == 2)) {
    cl_store_rows16<UR>(v, out, ld_out, os);
  } else {
    cl_store_rows(v, UR, out, ld_out, nch, os);
  }
}

}  // namespace aclnn_cpu::conv
