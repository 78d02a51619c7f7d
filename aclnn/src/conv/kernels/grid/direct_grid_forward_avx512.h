// The forward of the AVX-512 direct grid kernels (direct_grid.h), written once for the fp32 form
// (direct_grid_avx512.cpp) and the bf16 channel-pair form (direct_grid_bf16_avx512.cpp): the
// register tile (forward_tile, a template over the unit trait U below), which tiles and lane masks
// cover a span of grid columns, and the loops over column spans, channel chunks and output-channel
// blocks around them. The forms differ only in their unit: what one lane of x and of the packed
// weights holds, and the multiply-add that folds a lane pair into the fp32 accumulator.
// Include only inside the includer's target region, after gemm/avx512_util.h, so these helpers
// are compiled for that region's ISA (each file gets its own copy: they are static). No
// standard-library template is instantiated here.
#pragma once

#include "conv/kernels/grid/direct_grid.h"
#include "gemm/avx512_util.h"

namespace aclnn_cpu::conv {

// The unit trait U of forward_tile:
//   using E = <the unit: float, or uint32_t holding a bf16 pair>;  using V = <16 units>;
//   static V load(const E* p);  static V load_masked(__mmask16 m, const E* p)  (zero off m)
//   static V broadcast(E w);
//   static __m512 madd(__m512 acc, V x, V w)   acc + x * w lane by lane (a pair: both products)
//
// acc[o][v] = sum_{c, t} w[o][c][t] * x[c * plane + off[t] + vs v + lane] for OB output channels
// (the first OB of a packed block of kDirectOcBlock) and PV vectors of columns: vector v covers
// columns [vs v, vs v + 16) (vs = 16: flat; vs = the grid's row pitch: one vector per row). With
// kTail, `mask[v]` selects the valid lanes. `add`: start from `out` (a later channel chunk)
// instead of zero. C counts units (channels, or channel pairs).
template <class U, int OB, int PV, bool kTail>
static void forward_tile(int64_t C, int64_t T, const int64_t* off, const typename U::E* x,
                         int64_t plane, const typename U::E* w, float* out, int64_t ldo,
                         const __mmask16* mask, bool add, int64_t vs) {
  constexpr int64_t kOB = kDirectOcBlock;
  __m512 acc[OB][PV];
#pragma GCC unroll 8
  for (int o = 0; o < OB; ++o)
#pragma GCC unroll 8
    for (int v = 0; v < PV; ++v)
      acc[o][v] = !add    ? _mm512_setzero_ps()
                  : kTail ? _mm512_maskz_loadu_ps(mask[v], out + o * ldo + vs * v)
                          : _mm512_loadu_ps(out + o * ldo + vs * v);
  for (int64_t c = 0; c < C; ++c, x += plane, w += T * kOB) {
    for (int64_t t = 0; t < T; ++t) {
      const typename U::E* xp = x + off[t];
      typename U::V xv[PV];
#pragma GCC unroll 8
      for (int v = 0; v < PV; ++v)
        xv[v] = kTail ? U::load_masked(mask[v], xp + vs * v) : U::load(xp + vs * v);
      const typename U::E* wt = w + t * kOB;
#pragma GCC unroll 8
      for (int o = 0; o < OB; ++o) {
        const typename U::V wv = U::broadcast(wt[o]);
#pragma GCC unroll 8
        for (int v = 0; v < PV; ++v) acc[o][v] = U::madd(acc[o][v], xv[v], wv);
      }
    }
  }
#pragma GCC unroll 8
  for (int o = 0; o < OB; ++o)
#pragma GCC unroll 8
    for (int v = 0; v < PV; ++v) {
      float* dst = out + o * ldo + vs * v;
      if (kTail) {
        _mm512_mask_storeu_ps(dst, mask[v], acc[o][v]);
      } else {
        _mm512_storeu_ps(dst, acc[o][v]);
      }
    }
}

template <class U>
using ForwardTileOf = void (*)(int64_t, int64_t, const int64_t*, const typename U::E*, int64_t,
                               const typename U::E*, float*, int64_t, const __mmask16*, bool,
                               int64_t);

// The tile for `rows` (1..8) output channels: full tiles of PV vectors, and tails of 1 .. PV
// masked vectors (a 14-wide output row does not pay for 48 columns).
template <class U, int PV, bool kTail>
static constexpr ForwardTileOf<U> kForwardTiles[kDirectOcBlock + 1] = {
    nullptr,
    forward_tile<U, 1, PV, kTail>,
    forward_tile<U, 2, PV, kTail>,
    forward_tile<U, 3, PV, kTail>,
    forward_tile<U, 4, PV, kTail>,
    forward_tile<U, 5, PV, kTail>,
    forward_tile<U, 6, PV, kTail>,
    forward_tile<U, 7, PV, kTail>,
    forward_tile<U, 8, PV, kTail>};

// The tile sets of grid_forward for 3 vectors of 16 columns: [0] the full tiles, [v] those of v
// masked vectors.
template <class U>
static constexpr const ForwardTileOf<U>* kForwardTileSets[4] = {
    kForwardTiles<U, 3, false>, kForwardTiles<U, 1, true>, kForwardTiles<U, 2, true>,
    kForwardTiles<U, 3, true>};

// A form's tiles for kOB output-channel rows and kPV vectors of 16 columns:
// sets[0][r]: the full 16 kPV-column tile of r rows (r = 1 .. kOB); sets[v][r]: the tile of v
// masked vectors (v = 1 .. kPV). Tile: (C, T, off, x, plane, w, out, ldo, mask, add, vs).
//
// tiles[r] and mask[] for the span of columns at j0 of n (left = n - j0 > 0). Rows mode
// (row_len > 0): up to kPV grid rows of `pitch` columns, one vector of row_len lanes per row, so
// a row's columns past row_len cost nothing. Flat: up to 16 kPV consecutive columns, the last
// vectors masked (a 14-wide output row does not pay for 48 columns).
template <int kOB, int kPV, typename Tile>
static inline void select_forward_tiles(const Tile* const* sets, int64_t left, int64_t row_len,
                                        int64_t pitch, __mmask16* mask, Tile* tiles) {
  int set;
  if (row_len > 0) {
    const int64_t rows = (left + pitch - 1) / pitch;
    set = rows < kPV ? static_cast<int>(rows) : kPV;
    for (int v = 0; v < kPV; ++v) mask[v] = gemm::first_lanes(row_len);
  } else {
    const int64_t cols = left < 16 * kPV ? left : 16 * kPV;
    for (int v = 0; v < kPV; ++v) mask[v] = gemm::first_lanes(cols - 16 * v);
    set = cols == 16 * kPV ? 0 : static_cast<int>((cols + 15) / 16);
  }
  for (int r = 1; r <= kOB; ++r) tiles[r] = sets[set][r];
}

// direct_grid.h's GridForward through the tiles of `sets` over spans of columns
// (select_forward_tiles), channels in chunks of c_chunk (whose band window stays in L1 while every
// output block reads it; a later chunk adds to `out`), output channels in blocks of kOB.
template <int kOB, int kPV, typename Tile, typename E>
static inline void grid_forward(const Tile* const* sets, const GridForward<E>& a) {
  const bool by_rows = a.row_len > 0;
  const int64_t step = by_rows ? kPV * a.pitch : 16 * kPV;
  for (int64_t j0 = 0; j0 < a.n; j0 += step) {
    __mmask16 mask[kPV];
    Tile tiles[kOB + 1];
    select_forward_tiles<kOB, kPV>(sets, a.n - j0, a.row_len, a.pitch, mask, tiles);
    for (int64_t c0 = 0; c0 < a.C; c0 += a.c_chunk) {
      const int64_t cc = a.c_chunk < a.C - c0 ? a.c_chunk : a.C - c0;
      for (int64_t o0 = 0; o0 < a.m; o0 += kOB) {
        const int rows = static_cast<int>(kOB < a.m - o0 ? kOB : a.m - o0);
        tiles[rows](cc, a.T, a.off, a.x + c0 * a.plane + j0, a.plane,
                    a.packed + (o0 * a.C + c0 * kOB) * a.T, a.out + o0 * a.ldo + j0, a.ldo, mask,
                    c0 > 0, by_rows ? a.pitch : 16);
      }
    }
  }
}

}  // namespace aclnn_cpu::conv
