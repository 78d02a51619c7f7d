// grid_direct on bf16 inputs with the AVX512_BF16 dot kernels (where bf16_dot_kernels()): the
// passes and the weight gradient of algo_grid_direct.cpp with the pair kernels of direct_grid.h,
// fp32 accumulation, no conversion pass. The bands are built straight from the bf16 bits:
//
//   forward / data   band2[c2][phase][plane] = pairs of source channels (2 c2, 2 c2 + 1) at each
//                    grid column (a zero channel pairs an odd last one); weights packed likewise.
//   weight           dy2_t[p][o] = pairs of grid columns (2 p, 2 p + 1) of dy, channels-last;
//                    band2_t[parity][phase][p][c] = pairs (2 p + parity, 2 p + 1 + parity) of each
//                    band channel, so a tap with an odd shift reads parity 1.
//
// Forward and data passes store a dense bf16 output themselves where the engine asks
// (Operands::out16, writes_bf16), rounding each output row as they scatter it.
//
// The products of bf16 values are exact in fp32; vdpbf16ps adds them with round-to-nearest-even
// but treats denormal inputs and results as zero (README).
#include <cstring>
#include <utility>

#include "conv/algorithms/grid_direct_plan.h"

namespace aclnn_cpu::conv::grid_direct {
namespace {

// packed[ob][c2][t][8] = the pair (W(o, 2 c2, q_t), W(o, 2 c2 + 1, q_t)), zero past m or C.
void pack_weight_pairs(int64_t m, int64_t C, int64_t T, const int64_t* q, const uint16_t* w,
                       int64_t so, int64_t si, uint32_t* packed) {
  const int64_t C2 = ceil_div(C, 2);
  for (int64_t o0 = 0; o0 < m; o0 += kDirectOcBlock)
    for (int64_t c2 = 0; c2 < C2; ++c2)
      for (int64_t t = 0; t < T; ++t, packed += kDirectOcBlock)
        for (int64_t i = 0; i < kDirectOcBlock; ++i) {
          const int64_t o = o0 + i, c = 2 * c2;
          const uint32_t lo = o < m ? w[o * so + c * si + q[t]] : 0;
          const uint32_t hi = o < m && c + 1 < C ? w[o * so + (c + 1) * si + q[t]] : 0;
          packed[i] = lo | hi << 16;
        }
}

// Unit-stride source (one phase: every data grid, the forward of a unit-stride conv): band row i
// of pair c2 is grid row r0 + i of the two channels' planes interleaved at the grid columns
// [w0, w1) that hold source columns (source column col + lo2), zero elsewhere.
bool unit_source(const TapGrid& tg) {
  return tg.phases() == 1 && tg.src_stride[0] == 1 && tg.src_stride[1] == 1 &&
         tg.src_stride[2] == 1;
}

void build_band2_unit(const TapGrid& tg, const uint16_t* src, int64_t src_cstride, int64_t C,
                      int64_t r0, int64_t rows, int64_t plane, uint32_t* band2) {
  const int64_t Wp = tg.Wp(), Hp = tg.Hp(), S1 = tg.src_size[1], S2 = tg.src_size[2];
  const int64_t lo2 = tg.lo[2], count = tg.band_rows(rows);
  const int64_t w0 = std::clamp<int64_t>(-lo2, 0, Wp), w1 = std::clamp<int64_t>(S2 - lo2, w0, Wp);
  constexpr int64_t kRows = 64;  // band rows per kernel call
  int64_t at[kRows];             // source offset of each row's column w0 (-1: outside)
  for (int64_t i0 = 0; i0 < count; i0 += kRows) {
    const int64_t n = std::min(kRows, count - i0);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t s0 = (r0 + i0 + i) / Hp + tg.lo[0], s1 = (r0 + i0 + i) % Hp + tg.lo[1];
      const bool inside = s0 >= 0 && s0 < tg.src_size[0] && s1 >= 0 && s1 < S1;
      at[i] = inside ? (s0 * S1 + s1) * S2 + lo2 + w0 : -1;
    }
    for (int64_t c2 = 0; c2 < ceil_div(C, 2); ++c2) {
      const uint16_t* a = src + 2 * c2 * src_cstride;
      const uint16_t* b = 2 * c2 + 1 < C ? a + src_cstride : nullptr;  // null: a zero channel
      direct_pair_rows_bf16(a, b, at, n, Wp, w0, w1, band2 + c2 * plane + i0 * Wp);
    }
  }
}

// band2 rows of the block: channel pairs interleaved, built row by row through `row` (two bf16
// channels x phases x Wp).
void build_band2(const TapGrid& tg, const uint16_t* src, int64_t src_cstride, int64_t C, int64_t r0,
                 int64_t rows, int64_t plane, uint16_t* row, uint32_t* band2) {
  if (unit_source(tg)) return build_band2_unit(tg, src, src_cstride, C, r0, rows, plane, band2);
  const int64_t Wp = tg.Wp(), P = tg.phases(), C2 = ceil_div(C, 2);
  for (int64_t i = 0; i < tg.band_rows(rows); ++i)
    for (int64_t c2 = 0; c2 < C2; ++c2) {
      const int64_t pair = std::min<int64_t>(2, C - 2 * c2);
      build_band_row(tg, src + 2 * c2 * src_cstride, src_cstride, pair, r0 + i, row, P * Wp, Wp);
      if (pair == 1) std::memset(row + P * Wp, 0, static_cast<size_t>(P * Wp) * sizeof(uint16_t));
      for (int64_t ph = 0; ph < P; ++ph)
        direct_interleave_bf16(row + ph * Wp, row + P * Wp + ph * Wp, Wp,
                               band2 + (c2 * P + ph) * plane + i * Wp);
    }
}

// A pass's tap offsets and weight pairs, packed once per call into its shared scratch.
struct PackedPass {
  const int64_t* off = nullptr;
  const uint32_t* w = nullptr;  // group grp at w + grp * per_group
  int64_t per_group = 0;
};

PackedPass pack_pass(const Pass<const uint16_t*>& ps, float* shared) {
  const TapGrid& tg = ps.tg;
  const int64_t T = tg.taps, C2 = ceil_div(ps.C, 2);
  const int64_t* off = nullptr;
  const GridTap* taps = load_taps(ps.g, tg, band_plane(tg, ps.rows), shared, &off);
  uint32_t* packed = reinterpret_cast<uint32_t*>(shared + taps_elems(T));
  const int64_t pk_g = direct_packed_w_elems(ps.m, C2, T);
  int64_t* q = const_cast<int64_t*>(off) + T;
  for (int64_t t = 0; t < T; ++t) q[t] = taps[t].q;
  for_tasks(ps.g.groups, [&](int64_t grp) {
    pack_weight_pairs(ps.m, ps.C, T, q, advance(ps.w, grp * ps.wg), ps.so, ps.si,
                      packed + grp * pk_g);
  });
  return PackedPass{off, packed, pk_g};
}

// scatter_block into a bf16 output: each output row of the block rounded to bf16 (the narrowing
// pass's rounding, direct_narrow_avx512) straight into its place, through a short staging row
// where the output columns are strided (a data gradient's phases).
void scatter_block16(const TapGrid& tg, const float* block, int64_t ld, int64_t channels,
                     int64_t r0, int64_t r1, uint16_t* dst, int64_t dst_cstride) {
  const int64_t Wp = tg.Wp(), n = tg.out[2], s2 = tg.dst_stride[2];
  constexpr int64_t kStage = 256;
  uint16_t stage[kStage];
  for_output_rows(tg, channels, r0, r1, [&](int64_t o, int64_t i, int64_t at) {
    const float* src = block + o * ld + i * Wp;
    uint16_t* row = dst + o * dst_cstride + at;
    if (s2 == 1) return direct_narrow_avx512(true, src, n, row);
    for (int64_t w0 = 0; w0 < n; w0 += kStage) {
      const int64_t len = std::min(kStage, n - w0);
      direct_narrow_avx512(true, src + w0, len, stage);
      for (int64_t w = 0; w < len; ++w) row[(w0 + w) * s2] = stage[w];
    }
  });
}

// Task (sample n, group grp, block blk of grid rows) of a pass in bf16: band of pairs, pair
// kernel, scatter (into out16, the output as bf16, where set). slot: [m, cols], then the band of
// pairs, then one staging row.
void pass_task(const Pass<const uint16_t*>& ps, const PackedPass& pk, int64_t n, int64_t grp,
               int64_t blk, float* slot, uint16_t* out16) {
  const TapGrid& tg = ps.tg;
  const int64_t plane = band_plane(tg, ps.rows), C2 = ceil_div(ps.C, 2), Wp = tg.Wp();
  const int64_t r0 = blk * ps.rows, r1 = std::min(tg.rows(), r0 + ps.rows), cols = (r1 - r0) * Wp;
  uint32_t* band2 = reinterpret_cast<uint32_t*>(slot + round16(ps.m * ps.rows * Wp));
  uint16_t* row = reinterpret_cast<uint16_t*>(band2 + ps.C * tg.phases() * plane);
  build_band2(tg, advance(ps.src, n * ps.src_sample + grp * ps.src_group), ps.src_cstride, ps.C, r0,
              r1 - r0, plane, row, band2);
  // Narrow rows one vector each where that wastes less than the grid's extra columns; runs of
  // rows within one 3d plane (the rows between two planes hold no outputs).
  const int64_t row_len = tg.out[2], Hp = tg.Hp();
  const bool by_rows = row_len <= 16 && Wp > 16;
  for (int64_t a = r0; a < r1;) {
    if (a % Hp >= tg.out[1]) {
      ++a;
      continue;
    }
    const int64_t e = std::min(r1, a - a % Hp + tg.out[1]), j = (a - r0) * Wp;
    direct_grid_forward_bf16({.m = ps.m,
                              .n = (e - a) * Wp,
                              .C = C2,
                              .T = tg.taps,
                              .off = pk.off,
                              .x = band2 + j,
                              .plane = tg.phases() * plane,
                              .packed = pk.w + grp * pk.per_group,
                              .out = slot + j,
                              .ldo = cols,
                              .c_chunk = ceil_div(ps.cchunk, 2),
                              .row_len = by_rows ? row_len : 0,
                              .pitch = Wp});
    a = e;
  }
  const int64_t at = n * ps.dst_sample + grp * ps.dst_group;
  if (out16) {
    scatter_block16(tg, slot, cols, ps.m, r0, r1, out16 + at, ps.dst_cstride);
  } else {
    scatter_block(tg, slot, cols, ps.m, r0, r1, ps.dst + at, ps.dst_cstride);
  }
}

// dy's offset of grid row r (-1: a row between two 3d planes, or r >= r1).
int64_t dy_row(const TapGrid& tg, int64_t r, int64_t r1) {
  const int64_t o0 = r / tg.Hp(), o1 = r % tg.Hp();
  return r < r1 && o1 < tg.out[1] ? (o0 * tg.out[1] + o1) * tg.out[2] : -1;
}

// dy2_t[p][o] for the block's grid rows [r0, r1): dy on the grid (bf16, zero in the extra
// columns and past the block) as pairs of columns, transposed to channels-last row by row. With
// `sums` (the first input-channel block's tasks): gradBias[o] (sums[o], o < Cog) += the block's
// dy, added as it is read.
void dy_pairs(const TapGrid& tg, const uint16_t* dy, int64_t S_out, int64_t Cog, int64_t r0,
              int64_t r1, int64_t m16, uint32_t* dy2_t, double* sums) {
  const int64_t units = tg.Wp() / 2, n = tg.out[2];
  for (int64_t r = r0; r < r1;) {
    const bool two = units == 8 && r + 1 < r1;  // rows of 8 units in pairs: whole transposes
    const int64_t at = dy_row(tg, r, r1), next = dy_row(tg, r + 2, r1);  // asked for meanwhile
    direct_dy_pairs_bf16(dy, S_out, Cog, m16, at, two ? dy_row(tg, r + 1, r1) : -2, n, units,
                         at >= 0 && next >= 0 ? next - at : 0, dy2_t + (r - r0) * units * m16,
                         sums);
    r += two ? 2 : 1;
  }
}

// The direct band of pairs (direct_band_pairs_bf16) where the W stride is at most 2: the phases
// and W ranges of tg, and the (parity, phase) copies its taps read (a dilation of 2 reads parity
// 0 only, stride 2's odd W phase too). Else pb.s2 = 0: the staged band_pairs below.
PairBand pair_band(const TapGrid& tg, const GridTap* taps, int64_t plane, int64_t cb16) {
  PairBand pb{};
  const int64_t s2 = tg.src_stride[2], Wp = tg.Wp();
  if (bf16_band_staged(tg)) return pb;
  pb.s2 = s2, pb.lo2 = tg.lo[2], pb.S2 = tg.src_size[2];
  for (int64_t a2 = 0; a2 < s2; ++a2) {
    if (tg.phase_rank[2][a2] < 0) continue;
    pb.a2[pb.n2] = a2;
    pb.w0[pb.n2] = std::clamp<int64_t>(ceil_div(-a2, s2) - pb.lo2, 0, Wp);
    pb.w1[pb.n2] = std::clamp<int64_t>(ceil_div(pb.S2 - a2, s2) - pb.lo2, pb.w0[pb.n2], Wp);
    ++pb.n2;
  }
  pb.n01 = tg.phase_count[0] * tg.phase_count[1];
  for (int64_t t = 0; t < tg.taps; ++t) pb.use[taps[t].shift & 1][taps[t].phase] = true;
  pb.units = Wp / 2, pb.half_plane = plane / 2, pb.cb16 = cb16;
  return pb;
}

// band2_t of the block's band rows straight from x (pb.s2 > 0): each band row's source rows,
// one per (D, H) phase, then the copies; the units past the band rows zero.
void band_pairs_direct(const TapGrid& tg, const PairBand& pb, const uint16_t* x, int64_t S_in,
                       int64_t nc, int64_t r0, int64_t r1, uint32_t* band2_t) {
  int64_t a0s[64], a1s[64], n0 = 0, n1 = 0, rows[4][64];
  for (int64_t a = 0; a < std::min<int64_t>(tg.src_stride[0], 64); ++a)
    if (tg.phase_rank[0][a] >= 0) a0s[n0++] = a;
  for (int64_t a = 0; a < std::min<int64_t>(tg.src_stride[1], 64); ++a)
    if (tg.phase_rank[1][a] >= 0) a1s[n1++] = a;
  const int64_t count = tg.band_rows(r1 - r0);
  // The source row of band row i in phase (p0, p1), -1 outside (or past the band); row i + 2's
  // is asked for while row i is built.
  const auto source_rows = [&](int64_t i, int64_t* out) {
    for (int64_t p0 = 0; p0 < n0; ++p0)
      for (int64_t p1 = 0; p1 < n1; ++p1)
        out[p0 * n1 + p1] = i < count ? phase_source_row(tg, r0 + i, a0s[p0], a1s[p1]) : -1;
  };
  source_rows(0, rows[0]);
  source_rows(1, rows[1]);
  // Rows of 8 units go in pairs (whole transposes): rows[i % 4] is band row i's.
  for (int64_t i = 0; i < count;) {
    const bool two = pb.units == 8 && i + 1 < count;
    source_rows(i + 2, rows[(i + 2) % 4]);
    if (two) source_rows(i + 3, rows[(i + 3) % 4]);
    direct_band_pairs_bf16(x, S_in, nc, pb, rows[i % 4], two ? rows[(i + 1) % 4] : nullptr,
                           rows[(i + 2) % 4], i, band2_t);
    i += two ? 2 : 1;
  }
  const int64_t P = pb.n01 * pb.n2, tail = pb.half_plane - count * pb.units;
  for (int64_t parity = 0; parity < 2; ++parity)
    for (int64_t ph = 0; ph < P; ++ph)
      if (pb.use[parity][ph] && tail > 0)
        std::memset(band2_t + ((parity * P + ph) * pb.half_plane + count * pb.units) * pb.cb16, 0,
                    static_cast<size_t>(tail * pb.cb16) * sizeof(uint32_t));
}

// band2_t[parity][phase][p][c] of the block's band rows, 16 channels at a time through `band`
// (16 channels x phases x plane bf16).
void band_pairs(const TapGrid& tg, const uint16_t* x, int64_t S_in, int64_t nc, int64_t r0,
                int64_t r1, int64_t plane, int64_t cb16, uint16_t* band, uint32_t* band2_t) {
  const int64_t Wp = tg.Wp(), P = tg.phases(), count = tg.band_rows(r1 - r0);
  for (int64_t c = 0; c < nc; c += 16) {
    const int64_t cnt = std::min<int64_t>(16, nc - c);
    for (int64_t i = 0; i < count; ++i)
      build_band_row(tg, x + c * S_in, S_in, cnt, r0 + i, band + i * Wp, P * plane, plane);
    for (int64_t k = 0; k < cnt; ++k)  // the columns past the band rows (a pair's second half)
      for (int64_t ph = 0; ph < P; ++ph)
        std::memset(band + k * P * plane + ph * plane + count * Wp, 0,
                    static_cast<size_t>(plane - count * Wp) * sizeof(uint16_t));
    for (int64_t parity = 0; parity < 2; ++parity)
      for (int64_t ph = 0; ph < P; ++ph)
        direct_transpose_avx512(
            reinterpret_cast<const float*>(band + ph * plane + parity), P * plane / 2, cnt,
            (plane - parity) / 2,
            reinterpret_cast<float*>(band2_t) + ((parity * P + ph) * (plane / 2)) * cb16 + c, cb16,
            16);
  }
}

// dwt += the weight kernel over the block's grid rows [r0, r1) (pairs p of dy2_t and xt). A grid
// row is whole pairs (weight_grid_bf16: Wp even): only the pairs of its output columns,
// ceil(out / 2) at a pitch of Wp / 2, of the rows that hold outputs (not those between 3d
// planes): mnist2's 14 of 18 columns. Calls take about kWeightColsBf16 columns where the tiles
// are whole (12 channels), else kWeightCols.
struct BandBlock {
  int64_t m16;            // Cog rounded up to 16: dy2_t's and dwt's row length
  int64_t nc;             // input channels of the block
  int64_t T;              // taps
  const int64_t* off;     // [T] each tap's offset into xt (its parity, phase and shift)
  const TapBox* box;      // [T] each tap's positions inside the input
  const uint32_t* xt;     // band2_t: x pairs, channels-last [2][phase][plane / 2][cb16]
  int64_t cb16;           // nc rounded up to 16: xt's row length
  const uint32_t* dy2_t;  // dy pairs, channels-last [pairs][m16]
  float* dwt;             // [T, nc, m16] += the block's products
};
void weight_block(const TapGrid& tg, int64_t r0, int64_t r1, const BandBlock& blk,
                  WeightAhead* ahead) {
  const int64_t m16 = blk.m16, nc = blk.nc, T = blk.T, cb16 = blk.cb16;
  const int64_t* off = blk.off;
  const TapBox* box = blk.box;
  const uint32_t *xt = blk.xt, *dy2_t = blk.dy2_t;
  float* dwt = blk.dwt;
  const int64_t Wp = tg.Wp(), Hp = tg.Hp();
  const int64_t pitch = Wp / 2, L2 = ceil_div(tg.out[2], 2);
  const int64_t cols = nc >= 12 ? kWeightColsBf16 : kWeightCols;
  const int64_t per_call = std::max<int64_t>(1, cols / 2 / L2);
  // run(r, e): a call over grid rows [r, e), within one output plane (its tap windows are per
  // plane), skipping the rows between two 3d planes (dy is zero there).
  const auto calls = [&](auto&& run) {
    for (int64_t r = r0; r < r1;) {
      if (r % Hp >= tg.out[1]) {
        ++r;
        continue;
      }
      const int64_t e = std::min({r1, r + per_call, r - r % Hp + tg.out[1]});
      run(r, e);
      r = e;
    }
  };
  int64_t count = 0, positions = 0;
  calls([&](int64_t r, int64_t e) { ++count, positions += (e - r) * L2; });
  const int64_t bytes = ahead->count[0] * ahead->bytes[0] + ahead->count[1] * ahead->bytes[1];
  const int64_t lines = ahead_lines(*ahead);
  spread_ahead(*ahead, count * weight_tiles_bf16(m16, nc, T));
  // Asked for only where the kernel has the time and L2 the room (direct_grid.h's bounds).
  const int64_t dots = positions * (m16 / 16) * nc * T;
  if (lines == 0 || dots / lines < kAheadMinWorkPerLine || bytes > kAheadMaxBytes)
    ahead->per_tile = 0;
  calls([&](int64_t r, int64_t e) {
    const int64_t p0 = (r - r0) * pitch;
    direct_grid_weight_bf16({.m16 = m16,
                             .C = nc,
                             .T = T,
                             .off = off,
                             .box = box,
                             .xt = xt + p0 * cb16,
                             .ldx = cb16,
                             .dyt = dy2_t + p0 * m16,
                             .ldy = m16,
                             .runs = WeightRuns{e - r, L2, pitch, r / Hp, r % Hp, 0},
                             .dwt = dwt,
                             .ahead = ahead});
  });
}

// The source elements (of a channel) the band of grid rows [r0, r1) reads: [lo, hi).
std::pair<int64_t, int64_t> band_span(const TapGrid& tg, int64_t r0, int64_t r1) {
  int64_t lo = INT64_MAX, hi = 0;
  for (int64_t i = 0; i < tg.band_rows(r1 - r0); ++i)
    for (int64_t a0 = 0; a0 < std::min<int64_t>(tg.src_stride[0], 64); ++a0)
      for (int64_t a1 = 0; a1 < std::min<int64_t>(tg.src_stride[1], 64); ++a1) {
        const int64_t at = phase_source_row(tg, r0 + i, a0, a1);
        if (at < 0) continue;
        lo = std::min(lo, at);
        hi = std::max(hi, at + tg.src_size[2]);
      }
  return {std::min(lo, hi), hi};
}

// The next block's x (nc channels from x) and dy (Cog channels from dy), grid rows [r0, r1), as
// memory for the kernel calls to ask for.
WeightAhead ahead_of(const TapGrid& tg, const uint16_t* x, int64_t S_in, int64_t nc,
                     const uint16_t* dy, int64_t S_out, int64_t Cog, int64_t r0, int64_t r1) {
  WeightAhead a;
  const auto [lo, hi] = band_span(tg, r0, r1);
  a.at[0] = reinterpret_cast<const char*>(x + lo);
  a.stride[0] = S_in * 2, a.count[0] = nc, a.bytes[0] = (hi - lo) * 2;
  int64_t first = -1, last = -1;
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t at = dy_row(tg, r, r1);
    if (at < 0) continue;
    if (first < 0) first = at;
    last = at + tg.out[2];
  }
  if (first < 0) return a;
  a.at[1] = reinterpret_cast<const char*>(dy + first);
  a.stride[1] = S_out * 2, a.count[1] = Cog, a.bytes[1] = (last - first) * 2;
  for (int k = 0; k < 2; ++k)  // whole channels: one run (no line asked for twice)
    if (a.bytes[k] == a.stride[k]) a.bytes[k] *= a.count[k], a.count[k] = 1;
  return a;
}

// Grid rows per block of the weight gradient: b.rows, or up to the band's halo (band_rows(0) rows:
// a 3d kernel's depth reach) where the slot the plan sized holds them. A block's band is its rows
// plus that halo, built again for every block: c3d_video's 35-row blocks (the planner's 512 KB
// budget for dy) built 153 band rows each, 4.4 times over, and band_chunk showed in the weight
// gradient's profile (measured: bench/RESULTS.md, design grid_direct_bf16.block-rows). The slot is
// sized for the fp32 run as well (its x copy of a sample, converts_x_in_place), so the bf16 run
// usually finds the room.
int64_t weight_block_rows(const ConvGeometry& g, const TapGrid& tg, const Blocking& b) {
  const int64_t want = std::min(tg.rows(), std::max(b.rows, tg.band_rows(0)));
  int64_t rows = b.rows;
  for (int64_t r = want; r > b.rows; r = r * 7 / 8)
    if (weight_scratch(g, tg, b.cblock, r, true).total() <= b.slot_elems) {
      rows = r;
      break;
    }
  return rows;
}

}  // namespace

void forward_bf16(const Problem& p, const Blocking& b, const Operands<float>& o) {
  const TapGrid tg = forward_grid(p.g);
  const Pass<const uint16_t*> ps = forward_pass(p, b, tg, o.x16, o.w16, o.out);
  const PackedPass pk = pack_pass(ps, o.shared);
  const int64_t blocks = ceil_div(tg.rows(), b.rows), groups = p.g.groups;
  for_tasks(p.g.N * groups * blocks, [&](int64_t t) {
    const int64_t ng = t / blocks;
    pass_task(ps, pk, ng / groups, ng % groups, t % blocks, slot_scratch(p, b, o), o.out16);
  });
}

// Every phase of dx within one task (sample, group, block of grid rows), one after another: the
// task's dx rows take all their phases while in cache (phase by phase over the whole batch, a
// stride-2 data gradient streamed dx through memory four times, and dy's bands as often).
void backward_data_bf16(const Problem& p, const Blocking& b, const Operands<float>& o) {
  const ConvGeometry& g = p.g;
  TapGrid grids[kMaxPhases];
  PackedPass packs[kMaxPhases];
  int64_t used[kMaxPhases], count = 0, blocks = 0;
  float* shared = o.shared;  // each phase's taps and weights after the previous one's
  for (int64_t i = 0; i < data_phase_count(g); ++i) {
    grids[i] = data_grid(g, data_phase(g, i));
    if (grids[i].empty()) {
      if (o.out16) {
        zero_phase(g, grids[i], o.out16);
      } else {
        zero_phase(g, grids[i], o.out);
      }
      continue;
    }
    packs[i] = pack_pass(data_pass(p, b, grids[i], o.y16, o.w16, o.out), shared);
    shared += pass_shared_elems(grids[i], g.cin_g(), g.cout_g(), g.groups);
    used[count++] = i;
    blocks = std::max(blocks, ceil_div(grids[i].rows(), b.rows));
  }
  for_tasks(g.N * g.groups * blocks, [&](int64_t t) {
    const int64_t blk = t % blocks, ng = t / blocks;
    float* slot = slot_scratch(p, b, o);
    for (int64_t k = 0; k < count; ++k) {
      const TapGrid& tg = grids[used[k]];
      if (blk * b.rows < tg.rows())
        pass_task(data_pass(p, b, tg, o.y16, o.w16, o.out), packs[used[k]], ng / g.groups,
                  ng % g.groups, blk, slot, o.out16);
    }
  });
}

void backward_weight_bf16(const Problem& p, const Blocking& b, const Operands<float>& o) {
  const ConvGeometry& g = p.g;
  const TapGrid tg = weight_grid_bf16(g);
  const int64_t Cig = g.cin_g(), Cog = g.cout_g(), rows = g.col_rows(), T = tg.taps;
  const int64_t S_in = g.in_size(), S_out = g.out_size(), m16 = round16(Cog);
  const int64_t rows_b = weight_block_rows(g, tg, b);
  const int64_t plane = band_plane(tg, rows_b), cb16 = round16(b.cblock), P = tg.phases();
  // Tap offsets into band2_t, in 32-bit units: the parity of the shift picks the copy.
  const int64_t* off = nullptr;
  const GridTap* taps = load_taps(g, tg, plane, o.shared, &off);
  int64_t* eoff = const_cast<int64_t*>(off);
  for (int64_t t = 0; t < T; ++t) {
    const int64_t parity = taps[t].shift & 1;
    eoff[t] = ((parity * P + taps[t].phase) * (plane / 2) + taps[t].shift / 2) * cb16;
  }
  // Each tap's pairs of positions inside the input (its products on the padding are skipped).
  TapBox* box = reinterpret_cast<TapBox*>(o.shared + taps_elems(T));
  for (int64_t t = 0; t < T; ++t) box[t] = pair_box(tap_box(g, taps[t].q));
  const PairBand pb = pair_band(tg, taps, plane, cb16);
  for_weight_tasks(
      p, b, o, [&](int64_t n0, int64_t n1, int64_t grp, int64_t c0, int64_t nc, float* dst) {
        const WeightScratch ws = weight_scratch(g, tg, b.cblock, rows_b, true);
        float* base = slot_scratch(p, b, o);
        uint32_t* dy2_t = reinterpret_cast<uint32_t*>(base);           // [pairs, m16]
        uint16_t* band = reinterpret_cast<uint16_t*>(base + ws.dy_t);  // staged: [16][P][plane]
        float* band2_t = base + ws.dy_t + ws.band;                     // [2][P][plane/2][cb16]
        float* dwt = band2_t + ws.band_t;                              // [T, nc, m16]
        std::memset(dwt, 0, static_cast<size_t>(T * nc * m16) * sizeof(float));
        double* sums = task_bias_sums(p, b, o, n0, grp, c0);  // gradBias [Cog], or null
        for (int64_t n = n0; n < n1; ++n) {
          for (int64_t r0 = 0; r0 < tg.rows(); r0 += rows_b) {
            const int64_t r1 = std::min(tg.rows(), r0 + rows_b);
            dy_pairs(tg, o.y16 + (n * g.C_out + grp * Cog) * S_out, S_out, Cog, r0, r1, m16, dy2_t,
                     sums);
            const uint16_t* x = o.x16 + (n * g.C_in + grp * Cig + c0) * S_in;
            uint32_t* b2 = reinterpret_cast<uint32_t*>(band2_t);
            if (pb.s2 > 0) {
              band_pairs_direct(tg, pb, x, S_in, nc, r0, r1, b2);
            } else {
              band_pairs(tg, x, S_in, nc, r0, r1, plane, cb16, band, b2);
            }
            // The next block (this sample's next rows, or the next sample's first) asked for
            // while this one's kernel runs.
            const bool last = r1 == tg.rows();
            const int64_t nn = last ? n + 1 : n, nr0 = last ? 0 : r1;
            WeightAhead ahead;
            if (nn < n1)
              ahead = ahead_of(tg, o.x16 + (nn * g.C_in + grp * Cig + c0) * S_in, S_in, nc,
                               o.y16 + (nn * g.C_out + grp * Cog) * S_out, S_out, Cog, nr0,
                               std::min(tg.rows(), nr0 + rows_b));
            weight_block(tg, r0, r1,
                         {.m16 = m16,
                          .nc = nc,
                          .T = T,
                          .off = off,
                          .box = box,
                          .xt = reinterpret_cast<const uint32_t*>(band2_t),
                          .cb16 = cb16,
                          .dy2_t = dy2_t,
                          .dwt = dwt},
                         &ahead);
          }
        }
        for (int64_t t = 0; t < T; ++t)  // dw[o][c*K + q_t] = dwt[t][c][o]
          for (int64_t c = 0; c < nc; ++c) {
            const float* from = dwt + (t * nc + c) * m16;
            float* to = dst + c * g.k_size() + taps[t].q;
            for (int64_t oc = 0; oc < Cog; ++oc) to[oc * rows] = from[oc];
          }
      });
  finish_bias_sums(p, b, o);
}

}  // namespace aclnn_cpu::conv::grid_direct
