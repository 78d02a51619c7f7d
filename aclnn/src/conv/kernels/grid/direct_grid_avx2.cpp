// The fp32 direct grid kernels of direct_grid.h for AVX2 + FMA CPUs (reached only after the
// runtime CPU check; see direct_grid.cpp). The same loops as direct_grid_avx512.cpp with the
// register tiles cut to 16 ymm registers:
//
//   forward  4 output channels (half of a packed block of 8) x 24 columns (3 ymm) = 12
//            accumulators; per (channel, tap) 3 loads of the band and 4 broadcasts for 12 FMAs
//            (the two halves of a block read the same band vectors, from L1 the second time);
//            narrow rows one vector per row (at most 8 columns) or two (9 to 16: mnist2's 14 of
//            an 18-column grid row cost 16 lanes, not 18), as the AVX-512 kernel does for rows
//            of up to 16 with one.
//   weight   32 output channels (4 ymm) x 3 input channels, or 16 x 6 where only 16 remain:
//            12 accumulators, 7 or 8 loads per 12 FMAs.
//
// No standard-library template is instantiated inside the target region.
#include <immintrin.h>

#include <cstdint>

#include "conv/kernels/grid/direct_grid.h"
#include "int_math.h"

#include "gemm/target_avx2_begin.h"

#include "gemm/avx2_util.h"

namespace aclnn_cpu::conv {
namespace {

constexpr int kOB = static_cast<int>(kDirectOcBlock);  // packed weight block (8 channels)
constexpr int kHalf = 4;                               // output channels per tile
constexpr int kPV = 3;                                 // 8-column vectors per tile
constexpr int64_t kTileCols = 8 * kPV;
constexpr int64_t kReuseBytes = int64_t{128} << 10;  // a quarter of Zen 3's L2

// acc[o][v] = sum_{c, t} w[c][t][o] * x[c * plane + off[t] + at[v] + lane] for OB (<= 4) output
// channels of a packed block (w points at the block's first channel of this half) and PV vectors
// of columns starting at columns at[v]; with kTail, mask[v] selects the valid lanes. `add`: start
// from `out`.
template <int OB, int PV, bool kTail>
void forward_tile(int64_t C, int64_t T, const int64_t* off, const float* x, int64_t plane,
                  const float* w, float* out, int64_t ldo, const __m256i* mask, bool add,
                  const int64_t* at) {
  int64_t vo[PV];
#pragma GCC unroll 16
  for (int v = 0; v < PV; ++v) vo[v] = at[v];
  __m256 acc[OB][PV];
#pragma GCC unroll 16
  for (int o = 0; o < OB; ++o)
#pragma GCC unroll 16
    for (int v = 0; v < PV; ++v)
      acc[o][v] = !add    ? _mm256_setzero_ps()
                  : kTail ? _mm256_maskload_ps(out + o * ldo + vo[v], mask[v])
                          : _mm256_loadu_ps(out + o * ldo + vo[v]);
  for (int64_t c = 0; c < C; ++c, x += plane, w += T * kOB) {
    for (int64_t t = 0; t < T; ++t) {
      const float* xp = x + off[t];
      __m256 xv[PV];
#pragma GCC unroll 16
      for (int v = 0; v < PV; ++v)
        xv[v] = kTail ? _mm256_maskload_ps(xp + vo[v], mask[v]) : _mm256_loadu_ps(xp + vo[v]);
      const float* wt = w + t * kOB;
#pragma GCC unroll 16
      for (int o = 0; o < OB; ++o) {
        const __m256 wv = _mm256_broadcast_ss(wt + o);
#pragma GCC unroll 16
        for (int v = 0; v < PV; ++v) acc[o][v] = _mm256_fmadd_ps(wv, xv[v], acc[o][v]);
      }
    }
  }
#pragma GCC unroll 16
  for (int o = 0; o < OB; ++o)
#pragma GCC unroll 16
    for (int v = 0; v < PV; ++v) {
      float* dst = out + o * ldo + vo[v];
      if (kTail) {
        _mm256_maskstore_ps(dst, mask[v], acc[o][v]);
      } else {
        _mm256_storeu_ps(dst, acc[o][v]);
      }
    }
}

using ForwardTile = void (*)(int64_t, int64_t, const int64_t*, const float*, int64_t, const float*,
                             float*, int64_t, const __m256i*, bool, const int64_t*);

template <int PV, bool kTail>
constexpr ForwardTile kTiles[kHalf + 1] = {nullptr, forward_tile<1, PV, kTail>,
                                           forward_tile<2, PV, kTail>, forward_tile<3, PV, kTail>,
                                           forward_tile<4, PV, kTail>};

// The tiles (by output-channel count 1..4) for `vectors` column vectors, masked with `tail`.
const ForwardTile* forward_tiles_for(int64_t vectors, bool tail) {
  if (!tail && vectors == kPV) return kTiles<kPV, false>;
  if (vectors >= 3) return kTiles<3, true>;
  if (vectors == 2) return kTiles<2, true>;
  return kTiles<1, true>;
}

// acc[v][i] = dwt[t][c0 + i][o0 + 8 v ..] += sum_j xt[(j + off) * ldx + c0 + i] * dyt[j][o0 + 8 v]
// (see direct_grid_avx512.cpp's weight_tile): OV vectors of output channels x RC input channels.
template <int OV, int RC>
void weight_tile(const float* xt, int64_t ldx, const float* dyt, int64_t ldy, int64_t rows,
                 int64_t L, int64_t pitch, float* dwt, int64_t ldw) {
  __m256 acc[OV][RC];
#pragma GCC unroll 16
  for (int v = 0; v < OV; ++v)
#pragma GCC unroll 16
    for (int i = 0; i < RC; ++i) acc[v][i] = _mm256_load_ps(dwt + i * ldw + 8 * v);
  for (int64_t r = 0; r < rows; ++r) {
    const float* x = xt + r * pitch * ldx;
    const float* d = dyt + r * pitch * ldy;
    for (int64_t j = 0; j < L; ++j, x += ldx, d += ldy) {
      __m256 dv[OV];
#pragma GCC unroll 16
      for (int v = 0; v < OV; ++v) dv[v] = _mm256_load_ps(d + 8 * v);
#pragma GCC unroll 16
      for (int i = 0; i < RC; ++i) {
        const __m256 b = _mm256_broadcast_ss(x + i);
#pragma GCC unroll 16
        for (int v = 0; v < OV; ++v) acc[v][i] = _mm256_fmadd_ps(dv[v], b, acc[v][i]);
      }
    }
  }
#pragma GCC unroll 16
  for (int v = 0; v < OV; ++v)
#pragma GCC unroll 16
    for (int i = 0; i < RC; ++i) _mm256_store_ps(dwt + i * ldw + 8 * v, acc[v][i]);
}

using WeightTile = void (*)(const float*, int64_t, const float*, int64_t, int64_t, int64_t, int64_t,
                            float*, int64_t);

// Tiles of 32 output channels take up to 3 input channels, tiles of 16 up to 6.
constexpr WeightTile kWeight32[4] = {nullptr, weight_tile<4, 1>, weight_tile<4, 2>,
                                     weight_tile<4, 3>};
constexpr WeightTile kWeight16[7] = {nullptr,           weight_tile<2, 1>, weight_tile<2, 2>,
                                     weight_tile<2, 3>, weight_tile<2, 4>, weight_tile<2, 5>,
                                     weight_tile<2, 6>};

// One group of up to PV vectors of output columns: its first column j0, the vectors' starts
// at[v] (from j0) and masks, how many there are, and whether they are masked.
struct ColumnGroup {
  int64_t j0 = 0;
  int64_t at[kPV] = {};
  __m256i mask[kPV];
  int64_t vectors = 0;
  bool tail = false;
};

// Runs the forward tiles of channels [c0, c0 + cc) of `a` over one column group, every 4-channel
// half of the packed blocks.
void forward_vectors(const GridForwardF32& a, int64_t c0, int64_t cc, const ColumnGroup& grp) {
  const ForwardTile* tiles = forward_tiles_for(grp.vectors, grp.tail);
  const float* x = a.x + grp.j0 + c0 * a.plane;
  for (int64_t o0 = 0; o0 < a.m; o0 += kHalf) {
    const int rows = static_cast<int>(min64(kHalf, a.m - o0));
    const int64_t block = o0 / kOB * kOB, half = o0 - block;
    tiles[rows](cc, a.T, a.off, x, a.plane, a.packed + (block * a.C + c0 * kOB) * a.T + half,
                a.out + grp.j0 + o0 * a.ldo, a.ldo, grp.mask, c0 > 0, grp.at);
  }
}

// The forward's column groups: up to PV vectors of output columns at once (at[v] from column j0,
// masked past the row or the end).
struct ColumnGroups {
  int64_t n, row_len, pitch;
  int mode;  // 0: flat over n columns; 1: rows of <= 8, one vector each; 2: rows of 9-16, two

  ColumnGroups(int64_t n_, int64_t row_len_, int64_t pitch_)
      : n(n_), row_len(row_len_), pitch(pitch_) {
    mode = row_len > 0 && row_len <= 8 ? 1 : row_len > 8 && row_len <= 16 && pitch > 16 ? 2 : 0;
  }
  int64_t count() const {
    const int64_t rows = (n + pitch - 1) / pitch;
    return mode == 1   ? (rows + kPV - 1) / kPV
           : mode == 2 ? (2 * rows + kPV - 1) / kPV
                       : (n + kTileCols - 1) / kTileCols;
  }
  // Group i.
  void get(int64_t i, ColumnGroup& grp) const {
    if (mode == 1) {  // rows of at most 8 columns: 3 rows, one masked vector per row
      grp.j0 = i * kPV * pitch;
      for (int v = 0; v < kPV; ++v)
        grp.mask[v] = gemm::first_lanes8(row_len), grp.at[v] = v * pitch;
      grp.vectors = min64(kPV, (n - grp.j0 + pitch - 1) / pitch), grp.tail = true;
    } else if (mode == 2) {
      // Rows of 9 to 16 columns: two whole vectors per row (16 lanes, not the pitch's columns),
      // 3 vectors in row order. Lanes past row_len compute the row's extra columns, which the
      // caller drops; they stay inside the row (pitch > 16), and the band's slack row covers the
      // last row's reads.
      const int64_t vecs = 2 * ((n + pitch - 1) / pitch), k0 = i * kPV;
      grp.j0 = 0;
      for (int v = 0; v < kPV; ++v) {
        const int64_t k = min64(k0 + v, vecs - 1);  // unused vectors repeat the last
        grp.mask[v] = gemm::first_lanes8(8), grp.at[v] = k / 2 * pitch + k % 2 * 8;
      }
      grp.vectors = min64(kPV, vecs - k0), grp.tail = grp.vectors < kPV;
    } else {  // flat over all n columns
      grp.j0 = i * kTileCols;
      const int64_t cols = min64(kTileCols, n - grp.j0);
      for (int v = 0; v < kPV; ++v)
        grp.mask[v] = gemm::first_lanes8(cols - 8 * v), grp.at[v] = 8 * v;
      grp.vectors = (cols + 7) / 8, grp.tail = cols < kTileCols;
    }
  }
};

}  // namespace

// Column groups outermost, each through every channel chunk (the accumulators stay in L1), while
// a band column is re-read soon enough to stay in L2: the taps' reach (their offset range) over
// all channels within kReuseBytes. Beyond it (3d: the kernel's depth reaches a whole grid plane
// back, c3d_video's 64 channels x 6846 columns = 1.75 MB; strided grids, whose offsets span their
// phase planes) chunk by chunk, each swept over all columns, so a chunk's share stays in L2 across
// its tap rows (column-outer, c3d_video's data gradient stalled on band loads from L3).
void direct_grid_forward_avx2(const GridForwardF32& a) {
  const int64_t C = a.C, c_chunk = a.c_chunk;
  const ColumnGroups groups(a.n, a.row_len, a.pitch);
  const int64_t G = groups.count(), chunks = (C + c_chunk - 1) / c_chunk;
  const int64_t cc = (C + chunks - 1) / chunks;  // equal chunks: no thin last one
  int64_t lo = a.off[0], hi = a.off[0];          // the taps' reach
  for (int64_t t = 1; t < a.T; ++t) lo = min64(lo, a.off[t]), hi = a.off[t] > hi ? a.off[t] : hi;
  const bool chunk_outer = (hi - lo) * C * 4 > kReuseBytes;
  ColumnGroup grp;
  for (int64_t outer = 0; outer < (chunk_outer ? chunks : G); ++outer)
    for (int64_t inner = 0; inner < (chunk_outer ? G : chunks); ++inner) {
      const int64_t gi = chunk_outer ? inner : outer, c0 = (chunk_outer ? outer : inner) * cc;
      if (chunk_outer || inner == 0) groups.get(gi, grp);
      if (c0 >= C) continue;
      forward_vectors(a, c0, min64(cc, C - c0), grp);
    }
}

void direct_grid_weight_avx2(const GridWeightF32& a) {
  const int64_t m16 = a.m16, C = a.C, T = a.T, ldx = a.ldx, ldy = a.ldy;
  const int64_t* off = a.off;
  const TapBox* box = a.box;
  const float *xt = a.xt, *dyt = a.dyt;
  const WeightRuns& runs = a.runs;
  float* dwt = a.dwt;
  for (int64_t o0 = 0; o0 < m16;) {
    const bool wide = o0 + 32 <= m16;
    const int64_t width = wide ? 3 : 6;
    // Channel tiles of nearly equal size (a narrow tile feeds each dy load to fewer FMAs).
    const int64_t tiles = (C + width - 1) / width, base = C / tiles, extra = C % tiles;
    for (int64_t i = 0, c0 = 0; i < tiles; ++i) {
      const int rc = static_cast<int>(base + (i < extra));
      const WeightTile tile = wide ? kWeight32[rc] : kWeight16[rc];
      for (int64_t t = 0; t < T; ++t) {
        const RunWindow w = run_window(runs, box[t]);
        if (w.rows == 0) continue;  // the tap reads only padding here
        tile(xt + off[t] + w.start * ldx + c0, ldx, dyt + w.start * ldy + o0, ldy, w.rows, w.L,
             runs.pitch, dwt + (t * C + c0) * m16 + o0, m16);
      }
      c0 += rc;
    }
    o0 += wide ? 32 : 16;
  }
}

}  // namespace aclnn_cpu::conv

#include "gemm/target_end.h"
