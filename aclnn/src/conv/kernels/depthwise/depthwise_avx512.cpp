// AVX-512 per-tap plane loops of the direct depthwise kernels (depthwise.h), unit W stride: along
// each valid output row, 16 lanes at a time with a masked tail, so rows of 56 or 28 (ResNet,
// MNIST) cost 4 or 2 vector steps instead of a scalar remainder. Compiled for AVX-512 by the
// pragma below and only called after gemm::have_avx512(); no library templates inside.
#include <immintrin.h>

#include <cstdint>

#include "conv/kernels/depthwise/depthwise.h"

// The whole file is compiled for AVX-512.
#include "gemm/target_avx512_begin.h"
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

// acc + y[0..16) * x[0..16), lanes past `left` taken as zero.
inline __m512 masked_fma(const float* y, const float* x, int64_t left, __m512 acc) {
  const __mmask16 m = tail_mask(left);
  return _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, y), _mm512_maskz_loadu_ps(m, x), acc);
}

// A unit-stride correlation of planes: out[i] = sum_j sum_q w_j[q] * in_j[i + off + q * step]
// per spatial dim (terms outside `in` are zero). The forward is one (off = -pad, step = dil);
// so is the data gradient (off = pad, step = -dil, out = dx, in = the dy planes).
struct Correlation {
  int64_t out[3], in[3], k[3], off[3], step[3];
};

// Row by row: each output row (NV vectors) is summed in registers over the m input planes and
// every tap, then stored once, so there is no read-modify-write of the output per tap (whose
// shifted stores would also defeat store-to-load forwarding on the next tap's loads).
template <int NV>
void correlate_rows(const Correlation& c, float* out, const float* in, int64_t in_stride,
                    const float* w, int64_t m, const __mmask16 (*masks)[4], const int64_t* offw) {
  const int64_t K = c.k[0] * c.k[1] * c.k[2];
  for (int64_t od = 0; od < c.out[0]; ++od)
    for (int64_t oh = 0; oh < c.out[1]; ++oh) {
      __m512 acc[NV];
      for (int v = 0; v < NV; ++v) acc[v] = _mm512_setzero_ps();
      for (int64_t j = 0; j < m; ++j) {
        const float* inj = in + j * in_stride;
        const float* wj = w + j * K;
        for (int64_t kd = 0; kd < c.k[0]; ++kd) {
          const int64_t id = od + c.off[0] + kd * c.step[0];
          if (id < 0 || id >= c.in[0]) continue;
          for (int64_t kh = 0; kh < c.k[1]; ++kh) {
            const int64_t ih = oh + c.off[1] + kh * c.step[1];
            if (ih < 0 || ih >= c.in[1]) continue;
            const float* row = inj + (id * c.in[1] + ih) * c.in[2];
            const float* wq = wj + (kd * c.k[1] + kh) * c.k[2];
            for (int64_t kw = 0; kw < c.k[2]; ++kw) {
              const __m512 a = _mm512_set1_ps(wq[kw]);
              const float* src = row + offw[kw];
              for (int v = 0; v < NV; ++v)
                acc[v] =
                    _mm512_fmadd_ps(a, _mm512_maskz_loadu_ps(masks[kw][v], src + 16 * v), acc[v]);
            }
          }
        }
      }
      float* dst = out + (od * c.out[1] + oh) * c.out[2];
      for (int v = 0; v < NV; ++v)
        _mm512_mask_storeu_ps(dst + 16 * v, tail_mask(c.out[2] - 16 * v), acc[v]);
    }
}

// The lanes of a shifted row read for each of `taps` kernel columns: output column 16v + l
// (< cols) reads input column 16v + l + offs[t], offs[t] = off0 + t * step, which must lie in
// [0, in_cols); masks[t][v] holds the lanes where both hold.
void shifted_row_masks(int64_t cols, int64_t in_cols, int64_t off0, int64_t step, int64_t taps,
                       __mmask16 (*masks)[4], int64_t* offs) {
  for (int64_t t = 0; t < taps; ++t) {
    offs[t] = off0 + t * step;
    for (int64_t v = 0; v < 4; ++v) {
      unsigned bits = 0;
      for (int64_t l = 0; l < 16; ++l) {
        const int64_t col = 16 * v + l, src = col + offs[t];
        if (col < cols && src >= 0 && src < in_cols) bits |= 1u << l;
      }
      masks[t][v] = static_cast<__mmask16>(bits);
    }
  }
}

// Runs correlate_rows for output rows of up to 64 and kernels up to 32 wide; false otherwise.
bool correlate_plane(const Correlation& c, float* out, const float* in, int64_t in_stride,
                     const float* w, int64_t m) {
  constexpr int64_t kMaxKw = 32;
  const int64_t W = c.out[2];
  if (W <= 0 || W > 64 || c.k[2] < 1 || c.k[2] > kMaxKw) return false;
  __mmask16 masks[kMaxKw][4];
  int64_t offw[kMaxKw];
  shifted_row_masks(W, c.in[2], c.off[2], c.step[2], c.k[2], masks, offw);
  switch ((W + 15) / 16) {
    case 1:
      correlate_rows<1>(c, out, in, in_stride, w, m, masks, offw);
      break;
    case 2:
      correlate_rows<2>(c, out, in, in_stride, w, m, masks, offw);
      break;
    case 3:
      correlate_rows<3>(c, out, in, in_stride, w, m, masks, offw);
      break;
    default:
      correlate_rows<4>(c, out, in, in_stride, w, m, masks, offw);
      break;
  }
  return true;
}

// The weight-gradient sums of one (dy plane, x plane) pair for the KW taps of one (kd, kh) row
// of the kernel at once: each dy vector is loaded once and multiplied with KW shifted x loads,
// into KW register accumulators (one pass over the planes per (kd, kh) instead of per tap).
template <int KW>
void plane_tap_row_sums(const ConvGeometry& g, const float* dy, const float* x, int64_t kd,
                        int64_t kh, const __mmask16 (*masks)[4], const __mmask16* dy_masks,
                        const int64_t* offx, double* total) {
  const int64_t H = g.in[1], W = g.in[2], oH = g.out[1], oW = g.out[2];
  const int64_t nv = (oW + 15) / 16;
  __m512 acc[KW];
  for (int q = 0; q < KW; ++q) acc[q] = _mm512_setzero_ps();
  for (int64_t od = 0; od < g.out[0]; ++od) {
    const int64_t id = od * g.stride[0] - g.pad_before[0] + kd * g.dil[0];
    if (id < 0 || id >= g.in[0]) continue;
    for (int64_t oh = 0; oh < oH; ++oh) {
      const int64_t ih = oh * g.stride[1] - g.pad_before[1] + kh * g.dil[1];
      if (ih < 0 || ih >= H) continue;
      const float* dyr = dy + (od * oH + oh) * oW;
      const float* xr = x + (id * H + ih) * W;
      for (int64_t v = 0; v < nv; ++v) {
        const __m512 d = _mm512_maskz_loadu_ps(dy_masks[v], dyr + 16 * v);
        for (int q = 0; q < KW; ++q)
          acc[q] =
              _mm512_fmadd_ps(d, _mm512_maskz_loadu_ps(masks[q][v], xr + 16 * v + offx[q]), acc[q]);
      }
    }
  }
  for (int q = 0; q < KW; ++q) total[q] += _mm512_reduce_add_ps(acc[q]);
}

}  // namespace

bool dw_plane_tap_sums_avx512(const ConvGeometry& g, const float* dy, const float* x,
                              double* total) {
  constexpr int64_t kMaxKw = 7;
  const int64_t W = g.in[2], oW = g.out[2], kW = g.k[2];
  if (g.stride[2] != 1 || oW > 64 || kW < 1 || kW > kMaxKw) return false;
  __mmask16 masks[kMaxKw][4], dy_masks[4];
  int64_t offx[kMaxKw];
  for (int64_t v = 0; v < 4; ++v) dy_masks[v] = tail_mask(oW - 16 * v > 0 ? oW - 16 * v : 0);
  shifted_row_masks(oW, W, -g.pad_before[2], g.dil[2], kW, masks, offx);
  for (int64_t kd = 0; kd < g.k[0]; ++kd)
    for (int64_t kh = 0; kh < g.k[1]; ++kh) {
      double* t = total + (kd * g.k[1] + kh) * kW;
      switch (kW) {
        case 1:
          plane_tap_row_sums<1>(g, dy, x, kd, kh, masks, dy_masks, offx, t);
          break;
        case 2:
          plane_tap_row_sums<2>(g, dy, x, kd, kh, masks, dy_masks, offx, t);
          break;
        case 3:
          plane_tap_row_sums<3>(g, dy, x, kd, kh, masks, dy_masks, offx, t);
          break;
        case 4:
          plane_tap_row_sums<4>(g, dy, x, kd, kh, masks, dy_masks, offx, t);
          break;
        case 5:
          plane_tap_row_sums<5>(g, dy, x, kd, kh, masks, dy_masks, offx, t);
          break;
        case 6:
          plane_tap_row_sums<6>(g, dy, x, kd, kh, masks, dy_masks, offx, t);
          break;
        default:
          plane_tap_row_sums<7>(g, dy, x, kd, kh, masks, dy_masks, offx, t);
          break;
      }
    }
  return true;
}

bool dw_plane_backward_data_avx512(const ConvGeometry& g, float* dx, const float* dy,
                                   int64_t dy_stride, const float* w, int64_t m) {
  if (!g.unit_stride()) return false;
  Correlation c;
  for (int d = 0; d < 3; ++d) {
    c.out[d] = g.in[d], c.in[d] = g.out[d], c.k[d] = g.k[d];
    c.off[d] = g.pad_before[d], c.step[d] = -g.dil[d];
  }
  return correlate_plane(c, dx, dy, dy_stride, w, m);
}

bool dw_plane_forward_avx512(const ConvGeometry& g, float* y, const float* x, const float* w) {
  if (!g.unit_stride()) return false;
  Correlation c;
  for (int d = 0; d < 3; ++d) {
    c.out[d] = g.out[d], c.in[d] = g.in[d], c.k[d] = g.k[d];
    c.off[d] = -g.pad_before[d], c.step[d] = g.dil[d];
  }
  return correlate_plane(c, y, x, 0, w, 1);
}

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
    // The < 64 left: up to four (masked) vectors, each into its own accumulator (named, not
    // through an array of pointers, which would keep them in memory).
    if (i < n) a0 = masked_fma(yr + i, xr + i, n - i, a0), i += 16;
    if (i < n) a1 = masked_fma(yr + i, xr + i, n - i, a1), i += 16;
    if (i < n) a2 = masked_fma(yr + i, xr + i, n - i, a2), i += 16;
    if (i < n) a3 = masked_fma(yr + i, xr + i, n - i, a3);
  });
  return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
}

}  // namespace aclnn_cpu::conv

#pragma GCC diagnostic pop
#include "gemm/target_end.h"
