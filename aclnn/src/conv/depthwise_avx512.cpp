// AVX-512 per-tap plane loops of the direct depthwise kernels (depthwise.h), unit W stride: along
// each valid output row, 16 lanes at a time with a masked tail, so rows of 56 or 28 (ResNet,
// MNIST) cost 4 or 2 vector steps instead of a scalar remainder. Compiled for AVX-512 by the
// pragma below and only called after gemm::have_avx512(); no library templates inside.
#include <immintrin.h>

#include <cstdint>

#include "conv/depthwise.h"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,fma")
#pragma GCC diagnostic push
// GCC 12 intrinsics start from an undefined vector: known -W(maybe-)uninitialized false positives.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace aclnn_cpu::conv {
namespace {

inline __mmask16 tail_mask(int64_t left) {
  return static_cast<__mmask16>(left >= 16 ? 0xffff : (1u << left) - 1);
}

// Calls row(yr, xr, n) for every valid output row of the tap: yr the output row (from lo[2]),
// xr the input row at the matching column, n the run length.
template <typename Row>
inline void rows(const DepthwiseTap& t, Row&& row) {
  const int64_t n = t.hi[2] - t.lo[2];
  for (int64_t od = t.lo[0]; od < t.hi[0]; ++od)
    for (int64_t oh = t.lo[1]; oh < t.hi[1]; ++oh) {
      const int64_t id = od * t.stride[0] + t.off[0], ih = oh * t.stride[1] + t.off[1];
      row((od * t.out[1] + oh) * t.out[2] + t.lo[2],
          (id * t.in[1] + ih) * t.in[2] + t.lo[2] + t.off[2], n);
    }
}

}  // namespace

void dw_tap_gather_avx512(float* y, const float* x, float a, const DepthwiseTap& t) {
  const __m512 va = _mm512_set1_ps(a);
  rows(t, [&](int64_t yo, int64_t xo, int64_t n) {
    float* yr = y + yo;
    const float* xr = x + xo;
    for (int64_t i = 0; i < n; i += 16) {
      const __mmask16 m = tail_mask(n - i);
      const __m512 v =
          _mm512_fmadd_ps(va, _mm512_maskz_loadu_ps(m, xr + i), _mm512_maskz_loadu_ps(m, yr + i));
      _mm512_mask_storeu_ps(yr + i, m, v);
    }
  });
}

void dw_tap_scatter_avx512(float* x, const float* y, float a, const DepthwiseTap& t) {
  const __m512 va = _mm512_set1_ps(a);
  rows(t, [&](int64_t yo, int64_t xo, int64_t n) {
    const float* yr = y + yo;
    float* xr = x + xo;
    for (int64_t i = 0; i < n; i += 16) {
      const __mmask16 m = tail_mask(n - i);
      const __m512 v =
          _mm512_fmadd_ps(va, _mm512_maskz_loadu_ps(m, yr + i), _mm512_maskz_loadu_ps(m, xr + i));
      _mm512_mask_storeu_ps(xr + i, m, v);
    }
  });
}

float dw_tap_dot_avx512(const float* y, const float* x, const DepthwiseTap& t) {
  // Four independent accumulators (the FMA latency would otherwise bound the loop), summed in a
  // fixed order at the end.
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  rows(t, [&](int64_t yo, int64_t xo, int64_t n) {
    const float* yr = y + yo;
    const float* xr = x + xo;
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) {
      a0 = _mm512_fmadd_ps(_mm512_loadu_ps(yr + i), _mm512_loadu_ps(xr + i), a0);
      a1 = _mm512_fmadd_ps(_mm512_loadu_ps(yr + i + 16), _mm512_loadu_ps(xr + i + 16), a1);
      a2 = _mm512_fmadd_ps(_mm512_loadu_ps(yr + i + 32), _mm512_loadu_ps(xr + i + 32), a2);
      a3 = _mm512_fmadd_ps(_mm512_loadu_ps(yr + i + 48), _mm512_loadu_ps(xr + i + 48), a3);
    }
    __m512* acc[4] = {&a0, &a1, &a2, &a3};
    for (int j = 0; i < n; i += 16, ++j) {
      const __mmask16 m = tail_mask(n - i);
      *acc[j] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, yr + i), _mm512_maskz_loadu_ps(m, xr + i),
                                *acc[j]);
    }
  });
  return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
}

}  // namespace aclnn_cpu::conv

#pragma GCC diagnostic pop
#pragma GCC pop_options
