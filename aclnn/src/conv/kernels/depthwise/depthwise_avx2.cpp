// AVX2 + FMA versions of the register-accumulating depthwise plane kernels of
// depthwise_avx512.cpp (depthwise.h), for CPUs without AVX-512: the same row-by-row sums with
// 8-lane vectors, so rows of up to 64 columns take up to 8 ymm accumulators. Lanes outside the
// input row (padding, the row's tail) are read with maskload, which reads nothing there and gives
// zero; fully valid vectors use plain loads (twice the load throughput on Zen 3). Compiled for
// AVX2 + FMA by the pragma below and only called after gemm::isa() says so; no library
// templates inside.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "conv/kernels/depthwise/depthwise.h"

#include "gemm/target_avx2_begin.h"

#include "gemm/avx2_util.h"

namespace aclnn_cpu::conv {
namespace {

constexpr int kMaxVectors = 8;  // 64 columns

// The lanes of one vector of a shifted row: a maskload mask, and whether all 8 lanes are valid.
struct Lanes {
  __m256i mask;
  bool full;
};

inline __m256 load(const Lanes& l, const float* p) {
  return l.full ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, l.mask);
}

// A unit-stride correlation of planes (see depthwise_avx512.cpp): out[i] = sum_j sum_q w_j[q] *
// in_j[i + off + q * step] per spatial dim, terms outside `in` zero.
struct Correlation {
  int64_t out[3], in[3], k[3], off[3], step[3];
};

// Vector v of NV of a shifted row: the first and last through their mask (all-ones where they are
// full: no branch), the ones between with plain loads where kInnerFull says every tap reads them
// whole (a branch per load on `full` made the loop branch-bound; measured: bench/RESULTS.md, design
// depthwise_avx2.inner-full).
template <int NV, bool kInnerFull>
inline __m256 load_v(const Lanes* lanes, int v, const float* p) {
  if (v == 0 || v == NV - 1) return _mm256_maskload_ps(p, lanes[v].mask);
  return kInnerFull ? _mm256_loadu_ps(p) : load(lanes[v], p);
}

// Whether vectors 1 .. nv - 2 of every tap's shifted row are full.
bool inner_full(const Lanes (*lanes)[kMaxVectors], int64_t taps, int64_t nv) {
  for (int64_t t = 0; t < taps; ++t)
    for (int64_t v = 1; v + 1 < nv; ++v)
      if (!lanes[t][v].full) return false;
  return true;
}

// What a finished output row is stored as: fp32, or rounded to fp16 or bf16 (to nearest even, bit
// for bit narrow16's) for a 16-bit dx written straight into its tensor, which spares the fp32 plane
// in the slot and the separate narrowing pass over it (measured: bench/RESULTS.md, design
// depthwise_avx2.narrow-store).
enum class OutKind { kF32, kF16, kBF16 };

// Output row [at, at + cols) of `out` (an OutKind plane) = the NV vectors of acc, lanes past
// cols not written.
template <OutKind kOut, int NV>
inline void store_row(void* out, int64_t at, int64_t cols, const __m256 (&acc)[NV]) {
  for (int v = 0; v < NV; ++v) {
    const int64_t n = cols - 8 * v;  // lanes of vector v inside the row, >= 1
    if constexpr (kOut == OutKind::kF32) {
      float* dst = static_cast<float*>(out) + at + 8 * v;
      if (n >= 8) {
        _mm256_storeu_ps(dst, acc[v]);
      } else {
        _mm256_maskstore_ps(dst, gemm::first_lanes8(n), acc[v]);
      }
    } else {
      uint16_t* dst = static_cast<uint16_t*>(out) + at + 8 * v;
      const __m128i h = gemm::narrow8(kOut == OutKind::kBF16, acc[v]);
      if (n >= 8) {
        _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), h);
      } else {  // (no 16-bit masked store in AVX2: the tail through a staging copy)
        alignas(16) uint16_t lanes[8];
        _mm_store_si128(reinterpret_cast<__m128i*>(lanes), h);
        std::memcpy(dst, lanes, static_cast<size_t>(n) * sizeof(uint16_t));
      }
    }
  }
}

// Each output row (NV vectors) summed in registers over the m input planes and every tap, then
// stored once. A function of its own for each instantiation: inlined into correlate_plane's
// dispatch, the bf16 rows kept an accumulator on the stack and each of its FMAs waited on a store
// to it (perf annotate). Apart, the 16-bit kinds run faster and fp32 about level; applying it to
// the 16-bit kinds alone or to correlate_nv moved the other instantiations' code and cost every
// kind (measured: bench/RESULTS.md, design depthwise_avx2.noinline-rows).
template <OutKind kOut, int NV, bool kInnerFull>
[[gnu::noinline]] void correlate_rows(const Correlation& c, void* out, const float* in,
                                      int64_t in_stride, const float* w, int64_t m,
                                      const Lanes (*lanes)[kMaxVectors], const int64_t* offw) {
  const int64_t K = c.k[0] * c.k[1] * c.k[2];
  for (int64_t od = 0; od < c.out[0]; ++od)
    for (int64_t oh = 0; oh < c.out[1]; ++oh) {
      __m256 acc[NV];
      for (int v = 0; v < NV; ++v) acc[v] = _mm256_setzero_ps();
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
              const __m256 a = _mm256_broadcast_ss(wq + kw);
              const float* src = row + offw[kw];
#pragma GCC unroll 8
              for (int v = 0; v < NV; ++v)
                acc[v] =
                    _mm256_fmadd_ps(a, load_v<NV, kInnerFull>(lanes[kw], v, src + 8 * v), acc[v]);
            }
          }
        }
      }
      store_row<kOut, NV>(out, (od * c.out[1] + oh) * c.out[2], c.out[2], acc);
    }
}

// The lanes of a shifted row read for each of `taps` kernel columns: output column 8v + l
// (< cols) reads input column 8v + l + offs[t], offs[t] = off0 + t * step, which must lie in
// [0, in_cols).
void shifted_row_lanes(int64_t cols, int64_t in_cols, int64_t off0, int64_t step, int64_t taps,
                       Lanes (*lanes)[kMaxVectors], int64_t* offs) {
  for (int64_t t = 0; t < taps; ++t) {
    offs[t] = off0 + t * step;
    for (int64_t v = 0; v < kMaxVectors; ++v) {
      // Valid lanes l: l < cols - 8v and 0 <= 8v + l + offs[t] < in_cols (a contiguous range).
      const int64_t lo = -(8 * v + offs[t]);
      int64_t hi = in_cols - (8 * v + offs[t]);
      if (cols - 8 * v < hi) hi = cols - 8 * v;
      lanes[t][v].mask = gemm::lane_range8(lo, hi);
      lanes[t][v].full = lo <= 0 && hi >= 8;
    }
  }
}

template <OutKind kOut, int NV>
void correlate_nv(const Correlation& c, void* out, const float* in, int64_t in_stride,
                  const float* w, int64_t m, const Lanes (*lanes)[kMaxVectors], const int64_t* offw,
                  int64_t nv) {
  if constexpr (NV > 1) {
    if (nv < NV) return correlate_nv<kOut, NV - 1>(c, out, in, in_stride, w, m, lanes, offw, nv);
  }
  if (inner_full(lanes, c.k[2], NV)) {
    correlate_rows<kOut, NV, true>(c, out, in, in_stride, w, m, lanes, offw);
  } else {
    correlate_rows<kOut, NV, false>(c, out, in, in_stride, w, m, lanes, offw);
  }
}

// Runs correlate_rows for output rows of up to 64 and kernels up to 32 wide; false otherwise.
bool correlate_plane(const Correlation& c, OutKind kind, void* out, const float* in,
                     int64_t in_stride, const float* w, int64_t m) {
  constexpr int64_t kMaxKw = 32;
  const int64_t W = c.out[2];
  if (W <= 0 || W > 8 * kMaxVectors || c.k[2] < 1 || c.k[2] > kMaxKw) return false;
  Lanes lanes[kMaxKw][kMaxVectors];
  int64_t offw[kMaxKw];
  shifted_row_lanes(W, c.in[2], c.off[2], c.step[2], c.k[2], lanes, offw);
  const int64_t nv = (W + 7) / 8;
  switch (kind) {
    case OutKind::kF32:
      correlate_nv<OutKind::kF32, kMaxVectors>(c, out, in, in_stride, w, m, lanes, offw, nv);
      break;
    case OutKind::kF16:
      correlate_nv<OutKind::kF16, kMaxVectors>(c, out, in, in_stride, w, m, lanes, offw, nv);
      break;
    case OutKind::kBF16:
      correlate_nv<OutKind::kBF16, kMaxVectors>(c, out, in, in_stride, w, m, lanes, offw, nv);
      break;
  }
  return true;
}

// acc[q] += dy row vector v * x row vector v shifted by offx[q], both read through their masks.
template <int KW>
inline void masked_step(__m256 (&acc)[KW], const float* dyr, const float* xr, int64_t v,
                        const Lanes (*lanes)[kMaxVectors], const Lanes* dy_lanes,
                        const int64_t* offx) {
  const __m256 d = _mm256_maskload_ps(dyr + 8 * v, dy_lanes[v].mask);
#pragma GCC unroll 8
  for (int q = 0; q < KW; ++q)
    acc[q] = _mm256_fmadd_ps(d, _mm256_maskload_ps(xr + 8 * v + offx[q], lanes[q][v].mask), acc[q]);
}

// The weight-gradient sums of one (dy plane, x plane) pair for the KW taps of one (kd, kh) kernel
// row at once: each dy vector is loaded once and multiplied with KW shifted x loads.
template <int KW>
void plane_tap_row_sums(const ConvGeometry& g, const float* dy, const float* x, int64_t kd,
                        int64_t kh, const Lanes (*lanes)[kMaxVectors], const Lanes* dy_lanes,
                        const int64_t* offx, double* total) {
  const int64_t H = g.in[1], W = g.in[2], oH = g.out[1], oW = g.out[2];
  const int64_t nv = (oW + 7) / 8;
  // The run of vectors every tap and dy read whole (empty: v0 == v1): one run, as a vector is
  // whole from some v on (left edge) and up to some v (right edge and row tail) for each of them.
  int64_t v0 = 0, v1 = nv;
  auto whole = [&](int64_t v) {
    bool all = dy_lanes[v].full;
    for (int q = 0; q < KW; ++q) all = all && lanes[q][v].full;
    return all;
  };
  while (v0 < nv && !whole(v0)) ++v0;
  while (v1 > v0 && !whole(v1 - 1)) --v1;
  __m256 acc[KW], acc2[KW];
  for (int q = 0; q < KW; ++q) acc[q] = acc2[q] = _mm256_setzero_ps();
  for (int64_t od = 0; od < g.out[0]; ++od) {
    const int64_t id = od * g.stride[0] - g.pad_before[0] + kd * g.dil[0];
    if (id < 0 || id >= g.in[0]) continue;
    for (int64_t oh = 0; oh < oH; ++oh) {
      const int64_t ih = oh * g.stride[1] - g.pad_before[1] + kh * g.dil[1];
      if (ih < 0 || ih >= H) continue;
      const float* dyr = dy + (od * oH + oh) * oW;
      const float* xr = x + (id * H + ih) * W;
      // Vectors [v0, v1) read whole rows for every tap: plain loads, no branch on `full`.
      for (int64_t v = 0; v < v0; ++v) masked_step<KW>(acc, dyr, xr, v, lanes, dy_lanes, offx);
      // Two vectors a step into two sets of sums: 2 KW FMA chains in flight, not KW (3 chains of
      // 4-cycle FMAs fed 0.75 FMAs a cycle).
      int64_t v = v0;
      for (; v + 1 < v1; v += 2) {
        const __m256 d0 = _mm256_loadu_ps(dyr + 8 * v), d1 = _mm256_loadu_ps(dyr + 8 * v + 8);
#pragma GCC unroll 8
        for (int q = 0; q < KW; ++q) {
          acc[q] = _mm256_fmadd_ps(d0, _mm256_loadu_ps(xr + 8 * v + offx[q]), acc[q]);
          acc2[q] = _mm256_fmadd_ps(d1, _mm256_loadu_ps(xr + 8 * v + 8 + offx[q]), acc2[q]);
        }
      }
      if (v < v1) {
        const __m256 d = _mm256_loadu_ps(dyr + 8 * v);
#pragma GCC unroll 8
        for (int q = 0; q < KW; ++q)
          acc2[q] = _mm256_fmadd_ps(d, _mm256_loadu_ps(xr + 8 * v + offx[q]), acc2[q]);
      }
      for (int64_t v = v1; v < nv; ++v) masked_step<KW>(acc, dyr, xr, v, lanes, dy_lanes, offx);
    }
  }
  for (int q = 0; q < KW; ++q) {  // lanes summed in a fixed order
    alignas(32) float l[8];
    _mm256_store_ps(l, _mm256_add_ps(acc[q], acc2[q]));
    total[q] += ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
  }
}

using TapRowSums = void (*)(const ConvGeometry&, const float*, const float*, int64_t, int64_t,
                            const Lanes (*)[kMaxVectors], const Lanes*, const int64_t*, double*);

}  // namespace

bool dw_plane_tap_sums_avx2(const ConvGeometry& g, const float* dy, const float* x, double* total) {
  constexpr int64_t kMaxKw = 7;
  const int64_t W = g.in[2], oW = g.out[2], kW = g.k[2];
  if (g.stride[2] != 1 || oW > 8 * kMaxVectors || kW < 1 || kW > kMaxKw) return false;
  Lanes lanes[kMaxKw][kMaxVectors], dy_lanes[kMaxVectors];
  int64_t offx[kMaxKw];
  for (int64_t v = 0; v < kMaxVectors; ++v) {
    dy_lanes[v].mask = gemm::first_lanes8(oW - 8 * v);
    dy_lanes[v].full = oW - 8 * v >= 8;
  }
  shifted_row_lanes(oW, W, -g.pad_before[2], g.dil[2], kW, lanes, offx);
  static constexpr TapRowSums kSums[kMaxKw + 1] = {nullptr,
                                                   plane_tap_row_sums<1>,
                                                   plane_tap_row_sums<2>,
                                                   plane_tap_row_sums<3>,
                                                   plane_tap_row_sums<4>,
                                                   plane_tap_row_sums<5>,
                                                   plane_tap_row_sums<6>,
                                                   plane_tap_row_sums<7>};
  for (int64_t kd = 0; kd < g.k[0]; ++kd)
    for (int64_t kh = 0; kh < g.k[1]; ++kh)
      kSums[kW](g, dy, x, kd, kh, lanes, dy_lanes, offx, total + (kd * g.k[1] + kh) * kW);
  return true;
}

namespace {

// The data gradient as the correlation of dy with the flipped kernel (see depthwise_avx512.cpp).
bool backward_data(const ConvGeometry& g, OutKind kind, void* dx, const float* dy,
                   int64_t dy_stride, const float* w, int64_t m) {
  if (!g.unit_stride()) return false;
  Correlation c;
  for (int d = 0; d < 3; ++d) {
    c.out[d] = g.in[d], c.in[d] = g.out[d], c.k[d] = g.k[d];
    c.off[d] = g.pad_before[d], c.step[d] = -g.dil[d];
  }
  return correlate_plane(c, kind, dx, dy, dy_stride, w, m);
}

}  // namespace

bool dw_plane_backward_data_avx2(const ConvGeometry& g, float* dx, const float* dy,
                                 int64_t dy_stride, const float* w, int64_t m) {
  return backward_data(g, OutKind::kF32, dx, dy, dy_stride, w, m);
}

bool dw_plane_backward_data16_avx2(const ConvGeometry& g, bool bf16, uint16_t* dx, const float* dy,
                                   int64_t dy_stride, const float* w, int64_t m) {
  return backward_data(g, bf16 ? OutKind::kBF16 : OutKind::kF16, dx, dy, dy_stride, w, m);
}

bool dw_plane_forward_avx2(const ConvGeometry& g, float* y, const float* x, const float* w) {
  if (!g.unit_stride()) return false;
  Correlation c;
  for (int d = 0; d < 3; ++d) {
    c.out[d] = g.out[d], c.in[d] = g.in[d], c.k[d] = g.k[d];
    c.off[d] = -g.pad_before[d], c.step[d] = g.dil[d];
  }
  return correlate_plane(c, OutKind::kF32, y, x, 0, w, 1);
}

}  // namespace aclnn_cpu::conv

#include "gemm/target_end.h"
