// Im2colPanels::pack, compiled for AVX-512 (only reached through the AVX-512 GEMM, which runs
// after the runtime CPU check). Row r of the block decodes into (channel, kd, kh, kw) once and
// advances incrementally; each 48-column panel row is filled by runs of one output row, copied
// with masked loads (lanes outside the input are masked off, which also zero-fills the padding;
// masked-off lanes never fault) or, for strided convs, element by element.
#include <immintrin.h>

#include <cstdint>

#include "conv/im2col_panels.h"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,fma")
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "gemm/transpose16_avx512.h"

namespace aclnn_cpu::conv {
namespace {

constexpr int64_t kNR = gemm::kPanelCols;
constexpr int64_t kMaxPanels = 16;  // the GEMM's NC block is 10 panels

inline int64_t clamp64(int64_t v, int64_t lo, int64_t hi) {
  return v < lo ? lo : (v > hi ? hi : v);
}

// Lanes [lo, hi) of 16 (both clamped to [0, 16]).
inline __mmask16 lane_range(int64_t lo, int64_t hi) {
  lo = clamp64(lo, 0, 16);
  hi = clamp64(hi, lo, 16);
  const uint32_t upto_hi = hi >= 16 ? 0xffffu : (1u << hi) - 1;
  const uint32_t below_lo = (1u << lo) - 1;
  return static_cast<__mmask16>(upto_hi & ~below_lo);
}

struct Pos {
  int64_t od, oh, ow;
};

Pos position(const ConvGeometry& g, int64_t j) {
  const int64_t oH = g.out[1], oW = g.out[2];
  return Pos{j / (oH * oW), (j / oW) % oH, j % oW};
}

// One row r = c*K + tap of the column matrix, decoded, and able to advance to row r + 1.
struct Row {
  const ConvGeometry& g;
  const float* x;  // channel 0
  int64_t c, kd, kh, kw;

  Row(const ConvGeometry& geo, const float* x0, int64_t r) : g(geo), x(x0) {
    const int64_t K = g.k_size(), tap = r % K;
    c = r / K;
    kd = tap / (g.k[1] * g.k[2]);
    kh = (tap / g.k[2]) % g.k[1];
    kw = tap % g.k[2];
  }
  void next() {
    if (++kw < g.k[2]) return;
    kw = 0;
    if (++kh < g.k[1]) return;
    kh = 0;
    if (++kd < g.k[0]) return;
    kd = 0;
    ++c;
  }

  // dst[0 .. count) = entries of this row for the columns starting at position `at`.
  void gather(Pos at, int64_t count, float* dst) const {
    const int64_t D = g.in[0], H = g.in[1], W = g.in[2], oH = g.out[1], oW = g.out[2];
    const int64_t sd = g.stride[0], sh = g.stride[1], sw = g.stride[2];
    const float* xc = x + c * g.in_size();
    const int64_t offd = kd * g.dil[0] - g.pad_before[0];
    const int64_t offh = kh * g.dil[1] - g.pad_before[1];
    const int64_t offw = kw * g.dil[2] - g.pad_before[2];
    // Output columns ow whose input column ow*sw + offw lies in [0, W).
    const int64_t lo = clamp64(ceil_div(-offw, sw), 0, oW);
    const int64_t hi = clamp64(ceil_div(W - offw, sw), lo, oW);
    int64_t od = at.od, oh = at.oh, ow = at.ow;
    for (int64_t o = 0; o < count;) {
      const int64_t seg = oW - ow < count - o ? oW - ow : count - o;  // run within one output row
      const int64_t id = od * sd + offd, ih = oh * sh + offh;
      const bool row_inside = id >= 0 && id < D && ih >= 0 && ih < H;
      if (row_inside && sw == 1) {
        // dst[o + i] = xrow[ow + i + offw] for ow + i in [lo, hi), else 0.
        const float* src = xc + (id * H + ih) * W + offw + ow;
        for (int64_t i = 0; i < seg; i += 16) {
          const __mmask16 store = lane_range(0, seg - i);
          const __mmask16 load = store & lane_range(lo - ow - i, hi - ow - i);
          _mm512_mask_storeu_ps(dst + o + i, store, _mm512_maskz_loadu_ps(load, src + i));
        }
      } else if (row_inside) {
        const float* xrow = xc + (id * H + ih) * W;
        for (int64_t i = 0; i < seg; ++i) {
          const int64_t q = ow + i;
          dst[o + i] = q >= lo && q < hi ? xrow[q * sw + offw] : 0.0f;
        }
      } else {
        for (int64_t i = 0; i < seg; i += 16)
          _mm512_mask_storeu_ps(dst + o + i, lane_range(0, seg - i), _mm512_setzero_ps());
      }
      o += seg;
      ow += seg;
      if (ow == oW) {
        ow = 0;
        if (++oh == oH) {
          oh = 0;
          ++od;
        }
      }
    }
  }
};

constexpr int64_t kTileK = 256;  // the GEMM's K block (kc <= 256)

}  // namespace

void Im2colPanels::pack(int64_t k0, int64_t kc, int64_t j0, int64_t n, float* Bp) const {
  const int64_t panels = (n + kNR - 1) / kNR;
  Pos start[kMaxPanels];
  for (int64_t p = 0; p < panels; ++p) start[p] = position(g_, col0_ + j0 + p * kNR);
  Row row(g_, x_, k0);
  for (int64_t r = 0; r < kc; ++r, row.next()) {
    for (int64_t p = 0; p < panels; ++p) {
      float* dst = Bp + p * kc * kNR + r * kNR;
      const int64_t cols = n - p * kNR < kNR ? n - p * kNR : kNR;
      row.gather(start[p], cols, dst);
      for (int64_t i = cols; i < kNR; ++i) dst[i] = 0.0f;
    }
  }
}

int64_t Im2colPanelsT::tile_elems() {
  return 16 * kTileK;
}

void Im2colPanelsT::pack(int64_t k0, int64_t kc, int64_t j0, int64_t n, float* Bp) const {
  const Pos at = position(g_, col0_ + k0);
  const int64_t kc16 = kc / 16 * 16;
  Row row(g_, x_, j0);
  for (int64_t p = 0; p * kNR < n; ++p) {
    float* panel = Bp + p * kc * kNR;
    for (int64_t c16 = 0; c16 < kNR; c16 += 16) {
      // tile[i][0 .. kc) = row j0 + p*48 + c16 + i of the column matrix (zero past n).
      for (int64_t i = 0; i < 16; ++i) {
        float* t = tile_ + i * kTileK;
        if (p * kNR + c16 + i < n) {
          row.gather(at, kc, t);
          row.next();
        } else {
          for (int64_t k = 0; k < kc; ++k) t[k] = 0.0f;
        }
      }
      int64_t k = 0;
      for (; k < kc16; k += 16) {
        __m512 r[16];
        for (int i = 0; i < 16; ++i) r[i] = _mm512_load_ps(tile_ + i * kTileK + k);
        gemm::transpose16(r);
        for (int i = 0; i < 16; ++i) _mm512_store_ps(panel + (k + i) * kNR + c16, r[i]);
      }
      for (; k < kc; ++k)
        for (int64_t i = 0; i < 16; ++i) panel[k * kNR + c16 + i] = tile_[i * kTileK + k];
    }
  }
}

}  // namespace aclnn_cpu::conv

#pragma GCC diagnostic pop
#pragma GCC pop_options
