// The direct grid kernels of direct_grid.h, compiled for AVX-512 (reached only after the runtime
// CPU check). No standard-library template is instantiated inside the target region.
#include <immintrin.h>

#include <cstdint>

#include "conv/kernels/grid/direct_grid.h"
#include "int_math.h"

// The whole file is compiled for AVX-512 (clang spells GCC's target pragma differently).
#if defined(__clang__)
#pragma clang attribute push( \
    __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,fma,f16c")
#endif
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "gemm/bf16_narrow_avx512.h"
#include "conv/kernels/bias_sums_avx512.h"
#include "conv/kernels/grid/direct_grid_forward_avx512.h"
#include "gemm/avx512_util.h"

namespace aclnn_cpu::conv {

using gemm::bf16_bits_rne;

namespace {

constexpr int kOB = static_cast<int>(kDirectOcBlock);  // forward: output channels per tile
constexpr int kPV = 3;                                 // forward: 16-column vectors per tile
constexpr int64_t kWC = 12;  // weight gradient: input channels per tile (x 32 output channels)
constexpr int64_t kWC4 = 6;  // ... per tile of 64 output channels

// The fp32 unit of direct_grid_forward_avx512.h's tile: one float per lane, one FMA.
struct F32Unit {
  using E = float;
  using V = __m512;
  static V load(const E* p) { return _mm512_loadu_ps(p); }
  static V load_masked(__mmask16 m, const E* p) { return _mm512_maskz_loadu_ps(m, p); }
  static V broadcast(E w) { return _mm512_set1_ps(w); }
  static __m512 madd(__m512 acc, V x, V w) { return _mm512_fmadd_ps(w, x, acc); }
};

// acc[v][i] = dwt[t][c0 + i][o0 + 16 v ..] += sum_j x[channel i at position j] * dyt[j][o0 + 16
// v]: OV vectors of output channels x RC input channels, one tap. Per position: OV vector loads of
// dy and RC broadcasts of x for OV * RC FMAs; the accumulators stay in registers over the
// positions (no reduction across lanes: the lanes are output channels). The positions are `rows`
// runs of L, a run's positions xstep apart in x (ldy in dy), runs xpitch apart in x (dpitch
// positions in dy). Channel i of x is at x + i * ldc: kUnitC, a channels-last band (ldc = 1);
// otherwise x where it lies, the RC channel rows read as RC streams.
template <int OV, int RC, bool kUnitC>
void weight_tile(const float* x, int64_t ldc, int64_t xstep, int64_t xpitch, const float* dyt,
                 int64_t ldy, int64_t dpitch, int64_t rows, int64_t L, float* dwt, int64_t ldw) {
  if (kUnitC) ldc = 1;
  __m512 acc[OV][RC];
#pragma GCC unroll 16
  for (int v = 0; v < OV; ++v)
#pragma GCC unroll 16
    for (int i = 0; i < RC; ++i) acc[v][i] = _mm512_load_ps(dwt + i * ldw + 16 * v);
  for (int64_t r = 0; r < rows; ++r) {
    const float* xj = x + r * xpitch;
    const float* d = dyt + r * dpitch * ldy;
    for (int64_t j = 0; j < L; ++j, xj += xstep, d += ldy) {
      __m512 dv[OV];
#pragma GCC unroll 16
      for (int v = 0; v < OV; ++v) dv[v] = _mm512_load_ps(d + 16 * v);
#pragma GCC unroll 16
      for (int i = 0; i < RC; ++i) {
        const __m512 b = _mm512_set1_ps(xj[i * ldc]);
#pragma GCC unroll 16
        for (int v = 0; v < OV; ++v) acc[v][i] = _mm512_fmadd_ps(dv[v], b, acc[v][i]);
      }
    }
  }
#pragma GCC unroll 16
  for (int v = 0; v < OV; ++v)
#pragma GCC unroll 16
    for (int i = 0; i < RC; ++i) _mm512_store_ps(dwt + i * ldw + 16 * v, acc[v][i]);
}

using WeightTile = void (*)(const float*, int64_t, int64_t, int64_t, const float*, int64_t, int64_t,
                            int64_t, int64_t, float*, int64_t);

template <int OV, bool kUnitC>
constexpr WeightTile kWeightTiles[kWC + 1] = {nullptr,
                                              weight_tile<OV, 1, kUnitC>,
                                              weight_tile<OV, 2, kUnitC>,
                                              weight_tile<OV, 3, kUnitC>,
                                              weight_tile<OV, 4, kUnitC>,
                                              weight_tile<OV, 5, kUnitC>,
                                              weight_tile<OV, 6, kUnitC>,
                                              weight_tile<OV, 7, kUnitC>,
                                              weight_tile<OV, 8, kUnitC>,
                                              weight_tile<OV, 9, kUnitC>,
                                              weight_tile<OV, 10, kUnitC>,
                                              weight_tile<OV, 11, kUnitC>,
                                              weight_tile<OV, 12, kUnitC>};

template <bool kUnitC>
constexpr WeightTile kWeightTiles4[kWC4 + 1] = {nullptr,
                                                weight_tile<4, 1, kUnitC>,
                                                weight_tile<4, 2, kUnitC>,
                                                weight_tile<4, 3, kUnitC>,
                                                weight_tile<4, 4, kUnitC>,
                                                weight_tile<4, 5, kUnitC>,
                                                weight_tile<4, 6, kUnitC>};

// The weight kernel's calls: output channel blocks of 32 (or 16) x channel tiles x taps, each tap
// over its window of the runs; ahead (not null): per_tile of its lines asked for before each.
template <bool kUnitC>
void weight_calls(int64_t m16, int64_t C, int64_t T, const int64_t* xoff, const TapBox* box,
                  const float* x, const InPlaceX& xl, const float* dyt, int64_t ldy,
                  const WeightRuns& runs, float* dwt, WeightAhead* ahead = nullptr) {
  // Channel tiles of nearly equal size (32 = 11 + 11 + 10, not 12 + 12 + 8): a narrow tile feeds
  // each dy load to fewer FMAs.
  for (int64_t o0 = 0; o0 < m16;) {
    const int ov = o0 + 64 <= m16 ? 4 : o0 + 32 <= m16 ? 2 : 1;
    const int64_t wc = ov == 4 ? kWC4 : kWC;
    const int64_t tiles = (C + wc - 1) / wc, base = C / tiles, wide = C % tiles;
    for (int64_t i = 0, c0 = 0; i < tiles; ++i) {
      const int rc = static_cast<int>(base + (i < wide));
      const WeightTile tile = ov == 4   ? kWeightTiles4<kUnitC>[rc]
                              : ov == 2 ? kWeightTiles<2, kUnitC>[rc]
                                        : kWeightTiles<1, kUnitC>[rc];
      for (int64_t t = 0; t < T; ++t) {
        if (ahead) ahead->ask();
        const RunWindow w = run_window(runs, box[t]);
        if (w.rows == 0) continue;  // the tap reads only padding here
        const int64_t r = w.start / runs.pitch, j = w.start % runs.pitch;
        tile(x + xoff[t] + r * xl.pitch + j * xl.step + c0 * xl.ldc, xl.ldc, xl.step, xl.pitch,
             dyt + w.start * ldy + o0, ldy, runs.pitch, w.rows, w.L, dwt + (t * C + c0) * m16 + o0,
             m16);
      }
      c0 += rc;
    }
    o0 += 16 * ov;
  }
}

// sum of v[0 .. 16) lane-wise as a tree (4 roundings deep, not 15).
inline __m512 tree_sum16(const __m512 (&v)[16]) {
  __m512 a[8];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) a[i] = _mm512_add_ps(v[2 * i], v[2 * i + 1]);
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) a[i] = _mm512_add_ps(a[2 * i], a[2 * i + 1]);
  a[0] = _mm512_add_ps(a[0], a[1]);
  a[2] = _mm512_add_ps(a[2], a[3]);
  return _mm512_add_ps(a[0], a[2]);
}

}  // namespace

void direct_grid_forward_avx512(const GridForwardF32& a) {
  grid_forward<kOB, kPV>(kForwardTileSets<F32Unit>, a);
}

void direct_grid_weight_avx512(const GridWeightF32& a) {
  weight_calls<true>(a.m16, a.C, a.T, a.off, a.box, a.xt, InPlaceX{1, a.ldx, a.runs.pitch * a.ldx},
                     a.dyt, a.ldy, a.runs, a.dwt);
}

void direct_weight_in_place_avx512(const GridWeightF32& a, const float* x, const InPlaceX& xl) {
  weight_calls<false>(a.m16, a.C, a.T, a.off, a.box, x, xl, a.dyt, a.ldy, a.runs, a.dwt, a.ahead);
}

// HF32: keep the fp32 exponent, drop the low 12 mantissa bits with round-to-nearest-even; inf and
// NaN unchanged (half.h round_to_hf32).
static inline __m512 round_hf32(__m512 v) {
  const __m512i x = _mm512_castps_si512(v);
  const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(x, 12), _mm512_set1_epi32(1));
  const __m512i r =
      _mm512_and_si512(_mm512_add_epi32(_mm512_add_epi32(x, _mm512_set1_epi32(0x7FF)), odd),
                       _mm512_set1_epi32(~0xFFF));
  const __mmask16 special = _mm512_cmpeq_epi32_mask(
      _mm512_and_si512(x, _mm512_set1_epi32(0x7F800000)), _mm512_set1_epi32(0x7F800000));
  return _mm512_castsi512_ps(_mm512_mask_mov_epi32(r, special, x));
}

// fp16 rounding (round to nearest even, overflow to inf, quiet NaN) and back, as half.h's
// round_to_half: F16C implements exactly that conversion.
static inline __m512 round_fp16(__m512 v) {
  return _mm512_cvtph_ps(_mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

// 16 elements of a `kKind` source from element i (m: the lanes that exist) as stored, in fp32:
// fp16 and bf16 widened (exactly), fp32 as is, before any operand rounding.
template <SrcKind kKind>
inline __m512 load_stored(const void* src, int64_t i, __mmask16 m) {
  if constexpr (kKind == SrcKind::kF16) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, static_cast<const uint16_t*>(src) + i));
  } else if constexpr (kKind == SrcKind::kBF16 || kKind == SrcKind::kBF16Fp16) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(
        _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, static_cast<const uint16_t*>(src) + i)),
        16));
  } else {
    return _mm512_maskz_loadu_ps(m, static_cast<const float*>(src) + i);
  }
}

// A stored value v rounded as a `kKind` source's operand (cubeMathType): HF32 or through fp16.
template <SrcKind kKind>
inline __m512 round_operand(__m512 v) {
  if constexpr (kKind == SrcKind::kF32Hf32) return round_hf32(v);
  if constexpr (kKind == SrcKind::kF32Fp16 || kKind == SrcKind::kBF16Fp16) return round_fp16(v);
  return v;
}

// 16 elements of a `kKind` source from element i (m: the lanes that exist) as fp32 operands.
template <SrcKind kKind>
inline __m512 load_converted(const void* src, int64_t i, __mmask16 m) {
  return round_operand<kKind>(load_stored<kKind>(src, i, m));
}

namespace {

// dst[c * ld_dst + r] = src[r * ld_src + c] (direct_transpose) for a `kKind` source, the values
// converted to fp32 operands: 16 rows x 16 columns loaded as stored (load_stored), transposed,
// then rounded per element (round_operand commutes with the transpose), so no converted copy of
// src is made. kSums: also sums[r] += the row's stored elements (r < rows), before the operand
// rounding (gradBias is the sum of dy as stored, whatever cubeMathType rounds the kernels'
// operands to): the 16 of a transposed block added in fp32 (tree_sum16: after the transpose its
// vectors are columns, so the lanes are rows), the blocks' sums in double in column order, ~4
// fp32 roundings per 16 positions (PyTorch's fp32 reduction rounds at every add of its cascade).
template <SrcKind kKind, bool kSums>
void transpose_rows(const void* src, int64_t ld_src, int64_t rows, int64_t cols, float* dst,
                    int64_t ld_dst, int64_t width, double* sums) {
  for (int64_t r0 = 0; r0 < width; r0 += 16) {
    __m512d lo = _mm512_setzero_pd(), hi = _mm512_setzero_pd();
    for (int64_t c0 = 0; c0 < cols; c0 += 16) {
      const __mmask16 cm = gemm::first_lanes(cols - c0);
      __m512 v[16];
      for (int i = 0; i < 16; ++i)
        v[i] = r0 + i < rows ? load_stored<kKind>(src, (r0 + i) * ld_src + c0, cm)
                             : _mm512_setzero_ps();
      gemm::transpose16(v);
      const int64_t n = min64(16, cols - c0);
      for (int64_t i = 0; i < n; ++i)
        _mm512_store_ps(dst + (c0 + i) * ld_dst + r0, round_operand<kKind>(v[i]));
      if (kSums) widen_add(tree_sum16(v), lo, hi);  // v[i >= n] are zero (masked loads)
    }
    if (kSums && r0 < rows) add_sums(sums + r0, lo, hi, rows - r0);
  }
}

template <SrcKind kKind>
void transpose_kind(const void* src, int64_t ld_src, int64_t rows, int64_t cols, float* dst,
                    int64_t ld_dst, int64_t width, double* sums) {
  if (sums) return transpose_rows<kKind, true>(src, ld_src, rows, cols, dst, ld_dst, width, sums);
  transpose_rows<kKind, false>(src, ld_src, rows, cols, dst, ld_dst, width, nullptr);
}

}  // namespace

void direct_transpose_avx512(const float* src, int64_t ld_src, int64_t rows, int64_t cols,
                             float* dst, int64_t ld_dst, int64_t width) {
  transpose_rows<SrcKind::kF32, false>(src, ld_src, rows, cols, dst, ld_dst, width, nullptr);
}

void direct_transpose_sums_avx512(const float* src, int64_t ld_src, int64_t rows, int64_t cols,
                                  float* dst, int64_t ld_dst, int64_t width, double* sums) {
  transpose_rows<SrcKind::kF32, true>(src, ld_src, rows, cols, dst, ld_dst, width, sums);
}

void direct_transpose_convert_avx512(SrcKind kind, const void* src, int64_t ld_src, int64_t rows,
                                     int64_t cols, float* dst, int64_t ld_dst, int64_t width,
                                     double* sums) {
  switch (kind) {
    case SrcKind::kF16:
      return transpose_kind<SrcKind::kF16>(src, ld_src, rows, cols, dst, ld_dst, width, sums);
    case SrcKind::kBF16:
      return transpose_kind<SrcKind::kBF16>(src, ld_src, rows, cols, dst, ld_dst, width, sums);
    case SrcKind::kBF16Fp16:
      return transpose_kind<SrcKind::kBF16Fp16>(src, ld_src, rows, cols, dst, ld_dst, width, sums);
    case SrcKind::kF32Hf32:
      return transpose_kind<SrcKind::kF32Hf32>(src, ld_src, rows, cols, dst, ld_dst, width, sums);
    case SrcKind::kF32Fp16:
      return transpose_kind<SrcKind::kF32Fp16>(src, ld_src, rows, cols, dst, ld_dst, width, sums);
    default:
      return transpose_kind<SrcKind::kF32>(src, ld_src, rows, cols, dst, ld_dst, width, sums);
  }
}

// The kind chosen once per call, not per vector (the rows converted are often 14-56 elements).
template <SrcKind kKind>
void convert_run(const void* src, int64_t n, float* dst) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(dst + i, load_converted<kKind>(src, i, 0xFFFF));
  if (i < n) {
    const __mmask16 m = gemm::first_lanes(n - i);
    _mm512_mask_storeu_ps(dst + i, m, load_converted<kKind>(src, i, m));
  }
}

void direct_convert_avx512(SrcKind kind, const void* src, int64_t n, float* dst) {
  switch (kind) {
    case SrcKind::kF16:
      return convert_run<SrcKind::kF16>(src, n, dst);
    case SrcKind::kBF16:
      return convert_run<SrcKind::kBF16>(src, n, dst);
    case SrcKind::kBF16Fp16:
      return convert_run<SrcKind::kBF16Fp16>(src, n, dst);
    case SrcKind::kF32Hf32:
      return convert_run<SrcKind::kF32Hf32>(src, n, dst);
    case SrcKind::kF32Fp16:
      return convert_run<SrcKind::kF32Fp16>(src, n, dst);
    default:
      return convert_run<SrcKind::kF32>(src, n, dst);
  }
}

void direct_narrow_avx512(bool bf16, const float* src, int64_t n, uint16_t* dst) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = gemm::first_lanes(n - i);
    const __m512 v = _mm512_maskz_loadu_ps(m, src + i);
    __m256i h;
    if (!bf16) {
      h = _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    } else {
      h = _mm512_cvtepi32_epi16(bf16_bits_rne(v));
    }
    _mm256_mask_storeu_epi16(dst + i, m, h);
  }
}

void direct_split2_avx512(const float* src, int64_t n, float* even, float* odd) {
  const __m512i even_idx =
      _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  const __m512i odd_idx =
      _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
  for (int64_t i = 0; i < n; i += 16) {
    const int64_t k = min64(16, n - i);
    const __mmask16 lo = gemm::first_lanes(2 * k), hi = gemm::first_lanes(2 * k - 16);
    const __m512 a = _mm512_maskz_loadu_ps(lo, src + 2 * i);
    const __m512 b = _mm512_maskz_loadu_ps(hi, src + 2 * i + 16);
    const __mmask16 m = gemm::first_lanes(k);
    _mm512_mask_storeu_ps(even + i, m, _mm512_permutex2var_ps(a, even_idx, b));
    _mm512_mask_storeu_ps(odd + i, m, _mm512_permutex2var_ps(a, odd_idx, b));
  }
}

void direct_scatter2_avx512(const float* src, int64_t n, float* dst) {
  // Lane 2 k of the low (high) half is src[k] (src[8 + k]); the odd lanes are masked off.
  const __m512i lo_idx = _mm512_set_epi32(7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1, 1, 0, 0);
  const __m512i hi_idx = _mm512_add_epi32(lo_idx, _mm512_set1_epi32(8));
  for (int64_t i = 0; i < n; i += 16) {
    const int64_t k = min64(16, n - i);
    const __m512 v = _mm512_maskz_loadu_ps(gemm::first_lanes(k), src + i);
    // Even lanes of the first 2 k (the destination's last element is dst[2 (n - 1)]).
    const __mmask16 lo = gemm::first_lanes(2 * k - 1) & 0x5555;
    const __mmask16 hi = gemm::first_lanes(2 * k - 17) & 0x5555;
    _mm512_mask_storeu_ps(dst + 2 * i, lo, _mm512_permutexvar_ps(lo_idx, v));
    _mm512_mask_storeu_ps(dst + 2 * i + 16, hi, _mm512_permutexvar_ps(hi_idx, v));
  }
}

}  // namespace aclnn_cpu::conv

#pragma GCC diagnostic pop
#include "gemm/target_end.h"
