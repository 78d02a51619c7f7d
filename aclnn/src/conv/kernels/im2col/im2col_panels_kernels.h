// The panel sources of im2col_panels.h as one template over a vector trait V, included by
// im2col_panels_avx512.cpp and im2col_panels_avx2.cpp inside their target regions, after
// im2col.h, im2col_row.h and their V:
//
//   using F = <vector of W floats>;  static constexpr int W;      (W divides 48)
//   static F zero();  static F load(const float* p);  static F loadu(const float* p);
//   static void store(float* p, F v);  static void storeu(float* p, F v)   (load/store: aligned)
//   static F load_range(const float* p, int64_t lo, int64_t hi)  lanes [lo, hi) of p (lo may be
//                                  negative, hi past W), zero elsewhere, reading nothing else
//   static F load_first(const float* p, int64_t n)              lanes [0, n) likewise (n any)
//   using Mask;  static Mask first_mask(int64_t n);  static F load_first(const float* p, Mask m,
//                                  int64_t n)   the same with the mask made once (n in 1 .. W)
//   static void transpose(F r[W]);                               r[i] row i in, column i out
//
// The walks are the same on every ISA; the trait says how a vector is moved (AVX-512: masked
// loads everywhere, masked-off lanes never fault; AVX2: plain loads where a vector is whole and
// maskload at the edges, which is twice the load throughput on Zen 3). Row r of the block
// decodes into (channel, kd, kh, kw) once and advances incrementally (im2col_row.h); rows are
// gathered by im2col.h's run walker. Internal linkage: the instances for one target never meet
// the other's at link time.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <utility>

#include "conv/kernels/im2col/im2col_panels.h"

namespace aclnn_cpu::conv {
namespace {  // NOLINT(google-build-namespaces): see above

constexpr int64_t kNR = gemm::kPanelCols;

// A row cursor that gathers its row's entries.
template <class V>
struct GatherRow : RowCursor {
  using RowCursor::RowCursor;

  // dst[0 .. count) = entries of this row for the columns starting at position `at`: runs
  // copied with V's range loads (lanes outside the input zero, which fills the padding) or, for
  // strided convs, element by element. Stores are whole vectors, so dst needs kGatherSlack floats
  // of room past `count` (they receive zeros): runs go left to right, so a store spilling past its
  // run is overwritten by the next one. Masked stores measured slower here (the line is read back
  // right away, and a masked store does not forward to that load; measured: bench/RESULTS.md,
  // design im2col_panels_avx512.whole-stores).
  void gather(Pos at, int64_t count, float* dst) const {
    constexpr int64_t W = V::W;
    const int64_t offd = kd * g.dil[0] - g.pad_before[0];
    const int64_t offh = kh * g.dil[1] - g.pad_before[1];
    const int64_t offw = kw * g.dil[2] - g.pad_before[2];
    const int64_t sw = g.stride[2];
    auto run = [&](int64_t o, int64_t ow, int64_t seg, const float* xrow, int64_t a, int64_t b) {
      float* d = dst + o;
      if (xrow && sw == 1) {
        const float* src = xrow + offw + ow;  // the entry of output column ow + i is src[i]
        for (int64_t i = 0; i < seg; i += W)
          V::storeu(d + i, V::load_range(src + i, a - ow - i, std::min(b - ow - i, seg - i)));
      } else if (xrow) {
        for (int64_t i = 0; i < seg; ++i) {
          const int64_t q = ow + i;
          d[i] = q >= a && q < b ? xrow[q * sw + offw] : 0.0f;
        }
      } else {
        for (int64_t i = 0; i < seg; i += W) V::storeu(d + i, V::zero());
      }
    };
    for_each_row_run(g, x + c * g.in_size(), offd, offh, offw, at.od, at.oh, at.ow, count, run);
  }
};

// One 48-column panel row from src to the aligned dst (kSrcAligned: src aligned too), as
// straight-line code (a loop here, even one unrolled by pragma, kept GCC from peeling the loop
// over the panels around it: objdump shows the straight-line form peeled as the hand-written
// copies were).
template <class V, bool kSrcAligned, size_t... Q>
inline void copy_panel_row(const float* src, float* dst, std::index_sequence<Q...>) {
  ((V::store(dst + V::W * Q, kSrcAligned ? V::load(src + V::W * Q) : V::loadu(src + V::W * Q))),
   ...);
}

// Im2colPanels::pack. Each row is gathered once over all n columns into a line buffer, then dealt
// out to the panels 48 columns at a time: one walk per row instead of one per (row, panel), so the
// walk's per-call and per-run overhead is paid once per output row segment (measured:
// bench/RESULTS.md, design im2col_panels_avx512.line-buffer).
template <class V>
void pack_im2col(const ConvGeometry& g, const float* x, int64_t col0, int64_t k0, int64_t kc,
                 int64_t j0, int64_t n, float* Bp) {
  if (n > kMaxPanels * kNR) throw std::logic_error("Im2colPanels: block wider than the line");
  alignas(64) float line[kMaxPanels * kNR + kGatherSlack];
  const int64_t panels = (n + kNR - 1) / kNR;
  const Pos start = position(g, col0 + j0);
  for (int64_t i = n; i < panels * kNR; ++i) line[i] = 0.0f;
  GatherRow<V> row(g, x, k0);
  for (int64_t r = 0; r < kc; ++r, row.next()) {
    row.gather(start, n, line);
    for (int64_t p = 0; p < panels; ++p) {
      float* dst = Bp + p * kc * kNR + r * kNR;
      const float* src = line + p * kNR;
      copy_panel_row<V, true>(src, dst, std::make_index_sequence<kNR / V::W>{});
    }
  }
}

// GridPanels::pack: every row is a contiguous run of the padded grid.
template <class V>
void pack_grid(const GridSource& s, int64_t k0, int64_t kc, int64_t j0, int64_t n, float* Bp) {
  const int64_t panels = (n + kNR - 1) / kNR;
  const int64_t last = n - (panels - 1) * kNR;  // columns of the last panel (1 .. 48)
  const float* base = s.xp + s.col0 + j0;
  RowCursor row(s.g, nullptr, k0);
  for (int64_t r = 0; r < kc; ++r, row.next()) {
    const float* src = base + grid_row_offset(s.g, s.pg, row);
    float* dst = Bp + r * kNR;
    for (int64_t p = 0; p + 1 < panels; ++p, src += kNR, dst += kc * kNR)
      copy_panel_row<V, false>(src, dst, std::make_index_sequence<kNR / V::W>{});
#pragma GCC unroll 8
    for (int64_t q = 0; q < kNR / V::W; ++q)
      V::store(dst + V::W * q, V::load_first(src + V::W * q, last - V::W * q));
  }
}

// GridPanelsT::pack: each group of W rows loaded straight from the padded grid (W contiguous
// runs) and turned into panel rows with W x W transposes.
template <class V>
void pack_grid_t(const GridSource& s, int64_t k0, int64_t kc, int64_t j0, int64_t n, float* Bp) {
  constexpr int W = V::W;
  const float* base = s.xp + s.col0 + k0;
  for (int64_t p = 0; p * kNR < n; ++p) {
    float* panel = Bp + p * kc * kNR;
    for (int64_t cw = 0; cw < kNR; cw += W) {
      const float* src[W];  // the W rows' runs (null past n: zero columns)
      for (int64_t i = 0; i < W; ++i) {
        const int64_t r = j0 + p * kNR + cw + i;
        src[i] =
            r >= j0 + n ? nullptr : base + grid_row_offset(s.g, s.pg, RowCursor(s.g, nullptr, r));
      }
      for (int64_t k = 0; k < kc; k += W) {
        const int64_t kk = kc - k < W ? kc - k : W;
        const typename V::Mask m = V::first_mask(kk);
        typename V::F v[W];
        for (int i = 0; i < W; ++i) v[i] = src[i] ? V::load_first(src[i] + k, m, kk) : V::zero();
        V::transpose(v);
        for (int64_t i = 0; i < kk; ++i) V::store(panel + (k + i) * kNR + cw, v[i]);
      }
    }
  }
}

// Im2colPanelsT::pack: W rows of the column matrix gathered into `tile` (contiguous along k, as
// in the input), then turned into panel rows with W x W transposes.
template <class V>
void pack_im2col_t(const ConvGeometry& g, const float* x, int64_t col0, float* tile, int64_t k0,
                   int64_t kc, int64_t j0, int64_t n, float* Bp) {
  constexpr int W = V::W;
  const Pos at = position(g, col0 + k0);
  const int64_t kc_whole = kc / W * W;
  GatherRow<V> row(g, x, j0);
  for (int64_t p = 0; p * kNR < n; ++p) {
    float* panel = Bp + p * kc * kNR;
    for (int64_t cw = 0; cw < kNR; cw += W) {
      // tile[i][0 .. kc) = row j0 + p*48 + cw + i of the column matrix (zero past n).
      for (int64_t i = 0; i < W; ++i) {
        float* t = tile + i * kTileK;
        if (p * kNR + cw + i < n) {
          row.gather(at, kc, t);
          row.next();
        } else {
          for (int64_t k = 0; k < kc; ++k) t[k] = 0.0f;
        }
      }
      int64_t k = 0;
      for (; k < kc_whole; k += W) {
        typename V::F r[W];
        for (int i = 0; i < W; ++i) r[i] = V::load(tile + i * kTileK + k);
        V::transpose(r);
        for (int i = 0; i < W; ++i) V::store(panel + (k + i) * kNR + cw, r[i]);
      }
      for (; k < kc; ++k)
        for (int64_t i = 0; i < W; ++i) panel[k * kNR + cw + i] = tile[i * kTileK + k];
    }
  }
}

}  // namespace
}  // namespace aclnn_cpu::conv
