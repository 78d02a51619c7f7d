// The panel sources of im2col_panels.h, compiled for AVX-512 (only reached through the AVX-512
// GEMM, which runs after the runtime CPU check). Row r of the block decodes into (channel, kd,
// kh, kw) once and advances incrementally (im2col_row.h); rows are gathered by im2col.h's run
// walker.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>

#include "conv/kernels/im2col/im2col_panels.h"

// The whole file is compiled for AVX-512.
#include "gemm/target_avx512_begin.h"
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// Inside the target region so for_each_row_run, instantiated here with our AVX-512 lambdas,
// inlines them (its instantiations are unique to this file; geometry.h and <algorithm> are
// already included above, outside the region).
#include "conv/kernels/im2col/im2col.h"
#include "conv/kernels/im2col/im2col_row.h"
#include "gemm/avx512_util.h"

namespace aclnn_cpu::conv {
namespace {

constexpr int64_t kNR = gemm::kPanelCols;

// Lanes [lo, hi) of 16.
inline __mmask16 lane_range(int64_t lo, int64_t hi) {
  return static_cast<__mmask16>(gemm::first_lanes(hi) & ~gemm::first_lanes(lo));
}

// A row cursor that gathers its row's entries.
struct Row : RowCursor {
  using RowCursor::RowCursor;

  // dst[0 .. count) = entries of this row for the columns starting at position `at`: runs
  // copied with masked loads (lanes outside the input masked off, which zero-fills the padding;
  // masked-off lanes never fault) or, for strided convs, element by element. Stores are whole
  // vectors, so dst needs kGatherSlack floats of room past `count` (they receive zeros): runs go
  // left to right, so a store spilling past its run is overwritten by the next one. Masked stores
  // measured slower here (the line is read back right away, and a masked store does not forward to
  // that load; measured: bench/RESULTS.md, design im2col_panels_avx512.whole-stores).
  void gather(Pos at, int64_t count, float* dst) const {
    const int64_t offd = kd * g.dil[0] - g.pad_before[0];
    const int64_t offh = kh * g.dil[1] - g.pad_before[1];
    const int64_t offw = kw * g.dil[2] - g.pad_before[2];
    const int64_t sw = g.stride[2];
    auto run = [&](int64_t o, int64_t ow, int64_t seg, const float* xrow, int64_t a, int64_t b) {
      float* d = dst + o;
      if (xrow && sw == 1) {
        const float* src = xrow + offw + ow;  // the entry of output column ow + i is src[i]
        for (int64_t i = 0; i < seg; i += 16) {
          const __mmask16 load =
              lane_range(std::max(a - ow - i, int64_t{0}), std::min(b - ow - i, seg - i));
          _mm512_storeu_ps(d + i, _mm512_maskz_loadu_ps(load, src + i));
        }
      } else if (xrow) {
        for (int64_t i = 0; i < seg; ++i) {
          const int64_t q = ow + i;
          d[i] = q >= a && q < b ? xrow[q * sw + offw] : 0.0f;
        }
      } else {
        for (int64_t i = 0; i < seg; i += 16) _mm512_storeu_ps(d + i, _mm512_setzero_ps());
      }
    };
    for_each_row_run(g, x + c * g.in_size(), offd, offh, offw, at.od, at.oh, at.ow, count, run);
  }
};

}  // namespace

void Im2colPanels::pack_avx512(int64_t k0, int64_t kc, int64_t j0, int64_t n, float* Bp) const {
  // Each row is gathered once over all n columns into a line buffer, then dealt out to the panels
  // 48 columns at a time: one walk per row instead of one per (row, panel), so the walk's per-call
  // and per-run overhead is paid once per output row segment (measured: bench/RESULTS.md, design
  // im2col_panels_avx512.line-buffer).
  if (n > kMaxPanels * kNR) throw std::logic_error("Im2colPanels: block wider than the line");
  alignas(64) float line[kMaxPanels * kNR + kGatherSlack];
  const int64_t panels = (n + kNR - 1) / kNR;
  const Pos start = position(g_, col0_ + j0);
  for (int64_t i = n; i < panels * kNR; ++i) line[i] = 0.0f;
  Row row(g_, x_, k0);
  for (int64_t r = 0; r < kc; ++r, row.next()) {
    row.gather(start, n, line);
    for (int64_t p = 0; p < panels; ++p) {
      float* dst = Bp + p * kc * kNR + r * kNR;
      const float* src = line + p * kNR;
      _mm512_store_ps(dst, _mm512_load_ps(src));
      _mm512_store_ps(dst + 16, _mm512_load_ps(src + 16));
      _mm512_store_ps(dst + 32, _mm512_load_ps(src + 32));
    }
  }
}

void GridPanels::pack_avx512(int64_t k0, int64_t kc, int64_t j0, int64_t n, float* Bp) const {
  const int64_t panels = (n + kNR - 1) / kNR;
  const int64_t last = n - (panels - 1) * kNR;  // columns of the last panel (1 .. 48)
  const float* base = src_.xp + src_.col0 + j0;
  Row row(src_.g, nullptr, k0);
  for (int64_t r = 0; r < kc; ++r, row.next()) {
    const float* src = base + grid_row_offset(src_.g, src_.pg, row);
    float* dst = Bp + r * kNR;
    for (int64_t p = 0; p + 1 < panels; ++p, src += kNR, dst += kc * kNR) {
      _mm512_store_ps(dst, _mm512_loadu_ps(src));
      _mm512_store_ps(dst + 16, _mm512_loadu_ps(src + 16));
      _mm512_store_ps(dst + 32, _mm512_loadu_ps(src + 32));
    }
    for (int64_t q = 0; q < 3; ++q)
      _mm512_store_ps(dst + 16 * q,
                      _mm512_maskz_loadu_ps(gemm::first_lanes(last - 16 * q), src + 16 * q));
  }
}

void GridPanelsT::pack_avx512(int64_t k0, int64_t kc, int64_t j0, int64_t n, float* Bp) const {
  const float* base = src_.xp + src_.col0 + k0;
  for (int64_t p = 0; p * kNR < n; ++p) {
    float* panel = Bp + p * kc * kNR;
    for (int64_t c16 = 0; c16 < kNR; c16 += 16) {
      const float* src[16];  // the 16 rows' runs (null past n: zero columns)
      for (int64_t i = 0; i < 16; ++i) {
        const int64_t r = j0 + p * kNR + c16 + i;
        if (r >= j0 + n) {
          src[i] = nullptr;
          continue;
        }
        src[i] = base + grid_row_offset(src_.g, src_.pg, Row(src_.g, nullptr, r));
      }
      for (int64_t k = 0; k < kc; k += 16) {
        const int64_t kk = kc - k < 16 ? kc - k : 16;
        const __mmask16 m = gemm::first_lanes(kk);
        __m512 v[16];
        for (int i = 0; i < 16; ++i)
          v[i] = src[i] ? _mm512_maskz_loadu_ps(m, src[i] + k) : _mm512_setzero_ps();
        gemm::transpose16(v);
        for (int64_t i = 0; i < kk; ++i) _mm512_store_ps(panel + (k + i) * kNR + c16, v[i]);
      }
    }
  }
}

void Im2colPanelsT::pack_avx512(int64_t k0, int64_t kc, int64_t j0, int64_t n, float* Bp) const {
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
#include "gemm/target_end.h"
