// The panel sources of im2col_panels.h, compiled for AVX2 (only reached through the AVX2 GEMM,
// which runs after the runtime CPU check): the same walks as im2col_panels_avx512.cpp with
// 8-lane vectors, AVX's maskload for the partial runs (masked-off lanes never fault and read as
// zero) and 8 x 8 transposes for the transposed panels.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>

#include "conv/kernels/im2col/im2col_panels.h"

#include "gemm/target_avx2_begin.h"

// Inside the target region so for_each_row_run, instantiated here with our AVX2 lambdas, inlines
// them (its instantiations are unique to this file).
#include "conv/kernels/im2col/im2col.h"
#include "conv/kernels/im2col/im2col_row.h"
#include "gemm/avx2_util.h"

namespace aclnn_cpu::conv {
namespace {

constexpr int64_t kNR = gemm::kPanelCols;

// A row cursor that gathers its row's entries.
struct Row : RowCursor {
  using RowCursor::RowCursor;

  // dst[0 .. count) = entries of this row for the columns starting at position `at` (as in
  // im2col_panels_avx512.cpp): whole-vector stores, so dst needs kGatherSlack floats of room past
  // `count`; a vector wholly inside the input row is a plain load, one at a run's edge a
  // maskload (zero outside the input).
  void gather(Pos at, int64_t count, float* dst) const {
    const int64_t offd = kd * g.dil[0] - g.pad_before[0];
    const int64_t offh = kh * g.dil[1] - g.pad_before[1];
    const int64_t offw = kw * g.dil[2] - g.pad_before[2];
    const int64_t sw = g.stride[2];
    auto run = [&](int64_t o, int64_t ow, int64_t seg, const float* xrow, int64_t a, int64_t b) {
      float* d = dst + o;
      if (xrow && sw == 1) {
        const float* src = xrow + offw + ow;  // the entry of output column ow + i is src[i]
        for (int64_t i = 0; i < seg; i += 8) {
          const int64_t lo = a - ow - i, hi = std::min(b - ow - i, seg - i);
          if (lo <= 0 && hi >= 8) {
            _mm256_storeu_ps(d + i, _mm256_loadu_ps(src + i));
          } else {
            _mm256_storeu_ps(d + i, _mm256_maskload_ps(src + i, gemm::lane_range8(lo, hi)));
          }
        }
      } else if (xrow) {
        for (int64_t i = 0; i < seg; ++i) {
          const int64_t q = ow + i;
          d[i] = q >= a && q < b ? xrow[q * sw + offw] : 0.0f;
        }
      } else {
        for (int64_t i = 0; i < seg; i += 8) _mm256_storeu_ps(d + i, _mm256_setzero_ps());
      }
    };
    for_each_row_run(g, x + c * g.in_size(), offd, offh, offw, at.od, at.oh, at.ow, count, run);
  }
};

// Six vectors (one 48-column panel row) from src to the aligned dst.
inline void copy_panel_row(const float* src, float* dst) {
  for (int q = 0; q < 6; ++q) _mm256_store_ps(dst + 8 * q, _mm256_loadu_ps(src + 8 * q));
}

}  // namespace

void Im2colPanels::pack_avx2(int64_t k0, int64_t kc, int64_t j0, int64_t n, float* Bp) const {
  // One gather per row over all n columns into a line buffer, then dealt out to the panels (see
  // the AVX-512 version).
  if (n > kMaxPanels * kNR) throw std::logic_error("Im2colPanels: block wider than the line");
  alignas(64) float line[kMaxPanels * kNR + kGatherSlack];
  const int64_t panels = (n + kNR - 1) / kNR;
  const Pos start = position(g_, col0_ + j0);
  for (int64_t i = n; i < panels * kNR; ++i) line[i] = 0.0f;
  Row row(g_, x_, k0);
  for (int64_t r = 0; r < kc; ++r, row.next()) {
    row.gather(start, n, line);
    for (int64_t p = 0; p < panels; ++p)
      copy_panel_row(line + p * kNR, Bp + p * kc * kNR + r * kNR);
  }
}

void GridPanels::pack_avx2(int64_t k0, int64_t kc, int64_t j0, int64_t n, float* Bp) const {
  const int64_t panels = (n + kNR - 1) / kNR;
  const int64_t last = n - (panels - 1) * kNR;  // columns of the last panel (1 .. 48)
  const float* base = src_.xp + src_.col0 + j0;
  RowCursor row(src_.g, nullptr, k0);
  for (int64_t r = 0; r < kc; ++r, row.next()) {
    const float* src = base + grid_row_offset(src_.g, src_.pg, row);
    float* dst = Bp + r * kNR;
    for (int64_t p = 0; p + 1 < panels; ++p, src += kNR, dst += kc * kNR) copy_panel_row(src, dst);
    for (int64_t q = 0; q < 6; ++q)
      _mm256_store_ps(dst + 8 * q,
                      _mm256_maskload_ps(src + 8 * q, gemm::first_lanes8(last - 8 * q)));
  }
}

void GridPanelsT::pack_avx2(int64_t k0, int64_t kc, int64_t j0, int64_t n, float* Bp) const {
  const float* base = src_.xp + src_.col0 + k0;
  for (int64_t p = 0; p * kNR < n; ++p) {
    float* panel = Bp + p * kc * kNR;
    for (int64_t c8 = 0; c8 < kNR; c8 += 8) {
      const float* src[8];  // the 8 rows' runs (null past n: zero columns)
      for (int64_t i = 0; i < 8; ++i) {
        const int64_t r = j0 + p * kNR + c8 + i;
        src[i] = r >= j0 + n
                     ? nullptr
                     : base + grid_row_offset(src_.g, src_.pg, RowCursor(src_.g, nullptr, r));
      }
      for (int64_t k = 0; k < kc; k += 8) {
        const int64_t kk = kc - k < 8 ? kc - k : 8;
        const __m256i m = gemm::first_lanes8(kk);
        __m256 v[8];
        for (int i = 0; i < 8; ++i)
          v[i] = src[i]
                     ? (kk == 8 ? _mm256_loadu_ps(src[i] + k) : _mm256_maskload_ps(src[i] + k, m))
                     : _mm256_setzero_ps();
        gemm::transpose8(v);
        for (int64_t i = 0; i < kk; ++i) _mm256_store_ps(panel + (k + i) * kNR + c8, v[i]);
      }
    }
  }
}

void Im2colPanelsT::pack_avx2(int64_t k0, int64_t kc, int64_t j0, int64_t n, float* Bp) const {
  const Pos at = position(g_, col0_ + k0);
  const int64_t kc8 = kc / 8 * 8;
  Row row(g_, x_, j0);
  for (int64_t p = 0; p * kNR < n; ++p) {
    float* panel = Bp + p * kc * kNR;
    for (int64_t c8 = 0; c8 < kNR; c8 += 8) {
      // tile[i][0 .. kc) = row j0 + p*48 + c8 + i of the column matrix (zero past n).
      for (int64_t i = 0; i < 8; ++i) {
        float* t = tile_ + i * kTileK;
        if (p * kNR + c8 + i < n) {
          row.gather(at, kc, t);
          row.next();
        } else {
          for (int64_t k = 0; k < kc; ++k) t[k] = 0.0f;
        }
      }
      int64_t k = 0;
      for (; k < kc8; k += 8) {
        __m256 r[8];
        for (int i = 0; i < 8; ++i) r[i] = _mm256_load_ps(tile_ + i * kTileK + k);
        gemm::transpose8(r);
        for (int i = 0; i < 8; ++i) _mm256_store_ps(panel + (k + i) * kNR + c8, r[i]);
      }
      for (; k < kc; ++k)
        for (int64_t i = 0; i < 8; ++i) panel[k * kNR + c8 + i] = tile_[i * kTileK + k];
    }
  }
}

}  // namespace aclnn_cpu::conv

#include "gemm/target_end.h"
