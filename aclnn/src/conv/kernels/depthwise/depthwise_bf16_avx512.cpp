// AVX512_BF16 weight-gradient sums of the direct depthwise kernels (depthwise.h) on bf16 planes as
// stored, unit W stride. A bf16 row read as 32-bit units is already a row of pairs of adjacent
// positions (ow, ow + 1); so is the x row read from column ow + kw. One vdpbf16ps therefore adds
//   dy[ow] * x[ow + kw] + dy[ow + 1] * x[ow + 1 + kw]
// to a lane: 32 positions per instruction (16 for the fp32 FMA form, which also needs both planes
// converted first), the products exact in fp32 (8-bit significands), accumulated in fp32 lanes
// per plane like the fp32 kernel's. Masked 16-bit loads drop the padding columns and the row
// tail, so no element outside a row is read. Compiled for AVX512_BF16 by the pragma below; call
// only where bf16_dot_kernels().
#include <immintrin.h>

#include <cstdint>

#include "conv/kernels/depthwise/depthwise.h"

#include "gemm/target_avx512bf16_begin.h"
#pragma GCC diagnostic push
// GCC 12 intrinsics start from an undefined vector: known -W(maybe-)uninitialized false positives.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include "conv/kernels/bf16_dot_avx512.h"

namespace aclnn_cpu::conv {
namespace {

constexpr int64_t kMaxKw = 7;    // register accumulators: one per tap of a kernel row
constexpr int64_t kMaxVecs = 2;  // output rows of up to 64 positions: two vectors of 32

inline __mmask32 first_halves(int64_t n) {
  return n >= 32 ? ~__mmask32{0} : n <= 0 ? __mmask32{0} : (__mmask32{1} << n) - 1;
}

// The 16-bit lanes of the x loads of each kernel column t: output column 32 v + l (< cols) reads
// x column 32 v + l + offs[t], offs[t] = off0 + t * step, which must lie in [0, in_cols).
void shifted_masks(int64_t cols, int64_t in_cols, int64_t off0, int64_t step, int64_t taps,
                   __mmask32 (*masks)[kMaxVecs], int64_t* offs) {
  for (int64_t t = 0; t < taps; ++t) {
    offs[t] = off0 + t * step;
    for (int64_t v = 0; v < kMaxVecs; ++v) {
      uint32_t bits = 0;
      for (int64_t l = 0; l < 32; ++l) {
        const int64_t col = 32 * v + l, src = col + offs[t];
        if (col < cols && src >= 0 && src < in_cols) bits |= uint32_t{1} << l;
      }
      masks[t][v] = bits;
    }
  }
}

// total[q] += sum over the plane pair of dy[od, oh, ow] * x[id, ih, ow + offs[q]] for the KW taps
// of kernel row (kd, kh): each dy vector loaded once for the row's taps.
template <int KW>
void tap_row_sums(const ConvGeometry& g, const uint16_t* dy, const uint16_t* x, int64_t kd,
                  int64_t kh, const __mmask32 (*masks)[kMaxVecs], const __mmask32* dy_masks,
                  const int64_t* offs, double* total) {
  const int64_t H = g.in[1], W = g.in[2], oH = g.out[1], oW = g.out[2];
  const int64_t nv = (oW + 31) / 32;
  __m512 acc[KW];
  for (int q = 0; q < KW; ++q) acc[q] = _mm512_setzero_ps();
  for (int64_t od = 0; od < g.out[0]; ++od) {
    const int64_t id = od * g.stride[0] - g.pad_before[0] + kd * g.dil[0];
    if (id < 0 || id >= g.in[0]) continue;
    for (int64_t oh = 0; oh < oH; ++oh) {
      const int64_t ih = oh * g.stride[1] - g.pad_before[1] + kh * g.dil[1];
      if (ih < 0 || ih >= H) continue;
      const uint16_t* dyr = dy + (od * oH + oh) * oW;  // [oW] pairs (ow, ow + 1)
      const uint16_t* xr = x + (id * H + ih) * W;      // [W]
      for (int64_t v = 0; v < nv; ++v) {
        const __m512i d = _mm512_maskz_loadu_epi16(dy_masks[v], dyr + 32 * v);
        for (int q = 0; q < KW; ++q)
          acc[q] = dot2(acc[q], d, _mm512_maskz_loadu_epi16(masks[q][v], xr + 32 * v + offs[q]));
      }
    }
  }
  for (int q = 0; q < KW; ++q) total[q] += _mm512_reduce_add_ps(acc[q]);
}

using RowSums = void (*)(const ConvGeometry&, const uint16_t*, const uint16_t*, int64_t, int64_t,
                         const __mmask32 (*)[kMaxVecs], const __mmask32*, const int64_t*, double*);
constexpr RowSums kRowSums[kMaxKw] = {tap_row_sums<1>, tap_row_sums<2>, tap_row_sums<3>,
                                      tap_row_sums<4>, tap_row_sums<5>, tap_row_sums<6>,
                                      tap_row_sums<7>};

}  // namespace

bool dw_plane_tap_sums_bf16_avx512(const ConvGeometry& g, const uint16_t* dy, const uint16_t* x,
                                   double* total) {
  const int64_t W = g.in[2], oW = g.out[2], kW = g.k[2];
  if (g.stride[2] != 1 || oW < 1 || oW > 32 * kMaxVecs || kW < 1 || kW > kMaxKw) return false;
  __mmask32 masks[kMaxKw][kMaxVecs], dy_masks[kMaxVecs];
  int64_t offs[kMaxKw];
  for (int64_t v = 0; v < kMaxVecs; ++v) dy_masks[v] = first_halves(oW - 32 * v);
  shifted_masks(oW, W, -g.pad_before[2], g.dil[2], kW, masks, offs);
  for (int64_t kd = 0; kd < g.k[0]; ++kd)
    for (int64_t kh = 0; kh < g.k[1]; ++kh)
      kRowSums[kW - 1](g, dy, x, kd, kh, masks, dy_masks, offs, total + (kd * g.k[1] + kh) * kW);
  return true;
}

}  // namespace aclnn_cpu::conv

#pragma GCC diagnostic pop
#include "gemm/target_end.h"
