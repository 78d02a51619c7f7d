#include "conv/kernels/grid/tap_grid.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "conv/kernels/grid/direct_grid.h"
#include "gemm/sgemm.h"

namespace aclnn_cpu::conv {
namespace {

// e = s*m + a with 0 <= a < s.
struct Split {
  int64_t m, a;
};
Split split(int64_t e, int64_t s) {
  const int64_t m = floor_div(e, s);
  return Split{m, e - m * s};
}

int64_t tap_offset(const ConvGeometry& g, int d, int64_t k) {
  return k * g.dil[d] - g.pad_before[d];
}

// Whether kernel index k of dim d contributes to the grid (data gradient: only the phase b).
bool tap_used(const ConvGeometry& g, const TapGrid& tg, int d, int64_t k) {
  return tg.data_phase[d] < 0 || split(tap_offset(g, d, k), g.stride[d]).a == tg.data_phase[d];
}

// The grid shift of kernel index k along dim d: forward m - lo, data -m - lo.
int64_t tap_shift(const ConvGeometry& g, const TapGrid& tg, int d, int64_t k) {
  const int64_t m = split(tap_offset(g, d, k), g.stride[d]).m;
  return (tg.data_phase[d] < 0 ? m : -m) - tg.lo[d];
}

// Fills the per-dim extents of `tg` from its shifts (tg.out, src, strides and data_phase set).
void finish(const ConvGeometry& g, TapGrid& tg) {
  tg.taps = 1;
  for (int d = 0; d < 3; ++d) {
    int64_t lo = INT64_MAX, hi = INT64_MIN, used = 0;
    for (int64_t k = 0; k < g.k[d]; ++k) {
      if (!tap_used(g, tg, d, k)) continue;
      const int64_t m = split(tap_offset(g, d, k), g.stride[d]).m;
      const int64_t shift = tg.data_phase[d] < 0 ? m : -m;
      lo = std::min(lo, shift), hi = std::max(hi, shift), ++used;
    }
    tg.taps *= used;
    if (used == 0) lo = hi = 0;
    tg.lo[d] = lo;
    tg.ext[d] = tg.out[d] + hi - lo;
  }
}

}  // namespace

double TapGrid::waste() const {
  const double cols = static_cast<double>(rows()) * static_cast<double>(Wp());
  return cols > 0 ? 1.0 - static_cast<double>(out[0] * out[1] * out[2]) / cols : 1.0;
}

int64_t forward_phases(const ConvGeometry& g) {
  int64_t total = 1;
  for (int d = 0; d < 3; ++d) {
    bool seen[64] = {};
    int64_t count = 0;
    for (int64_t k = 0; k < g.k[d]; ++k) {
      const int64_t a = split(tap_offset(g, d, k), g.stride[d]).a;
      if (a >= 64) return kMaxPhases + 1;
      count += !seen[a];
      seen[a] = true;
    }
    total *= std::max<int64_t>(count, 1);
  }
  return total;
}

TapGrid forward_grid(const ConvGeometry& g) {
  TapGrid tg;
  for (int d = 0; d < 3; ++d) {
    tg.out[d] = g.out[d];
    tg.src_size[d] = g.in[d];
    tg.src_stride[d] = g.stride[d];
    tg.dst_stride[d] = 1, tg.dst_offset[d] = 0, tg.dst_size[d] = g.out[d];
    tg.data_phase[d] = -1;
    tg.phase_rank[d].fill(-1);
    for (int64_t k = 0; k < g.k[d]; ++k) {
      const int64_t a = split(tap_offset(g, d, k), g.stride[d]).a;
      if (a < 64 && tg.phase_rank[d][a] < 0) tg.phase_rank[d][a] = 0;
    }
    int8_t rank = 0;
    for (auto& r : tg.phase_rank[d])
      if (r == 0) r = rank++;
    tg.phase_count[d] = rank;
  }
  finish(g, tg);
  return tg;
}

int64_t data_phase_count(const ConvGeometry& g) {
  return g.stride[0] * g.stride[1] * g.stride[2];
}

std::array<int64_t, 3> data_phase(const ConvGeometry& g, int64_t i) {
  return {i / (g.stride[1] * g.stride[2]), (i / g.stride[2]) % g.stride[1], i % g.stride[2]};
}

TapGrid data_grid(const ConvGeometry& g, const std::array<int64_t, 3>& b) {
  TapGrid tg;
  for (int d = 0; d < 3; ++d) {
    // dx indices s*u + b inside [0, in): u < ceil((in - b) / s).
    tg.out[d] = b[d] < g.in[d] ? ceil_div(g.in[d] - b[d], g.stride[d]) : 0;
    tg.src_size[d] = g.out[d];
    tg.src_stride[d] = 1;
    tg.dst_stride[d] = g.stride[d], tg.dst_offset[d] = b[d], tg.dst_size[d] = g.in[d];
    tg.data_phase[d] = b[d];
    tg.phase_rank[d].fill(-1);
    tg.phase_rank[d][0] = 0;
    tg.phase_count[d] = 1;
  }
  finish(g, tg);
  return tg;
}

void grid_taps(const ConvGeometry& g, const TapGrid& tg, GridTap* taps) {
  int64_t t = 0;
  for (int64_t k0 = 0; k0 < g.k[0]; ++k0) {
    if (!tap_used(g, tg, 0, k0)) continue;
    for (int64_t k1 = 0; k1 < g.k[1]; ++k1) {
      if (!tap_used(g, tg, 1, k1)) continue;
      for (int64_t k2 = 0; k2 < g.k[2]; ++k2) {
        if (!tap_used(g, tg, 2, k2)) continue;
        const int64_t k[3] = {k0, k1, k2};
        int64_t phase = 0, shift = 0;
        for (int d = 0; d < 3; ++d) {
          const int64_t a = tg.data_phase[d] < 0 ? split(tap_offset(g, d, k[d]), g.stride[d]).a : 0;
          phase = phase * tg.phase_count[d] + tg.phase_rank[d][a];
        }
        shift = (tap_shift(g, tg, 0, k0) * tg.ext[1] + tap_shift(g, tg, 1, k1)) * tg.ext[2] +
                tap_shift(g, tg, 2, k2);
        taps[t++] = GridTap{(k0 * g.k[1] + k1) * g.k[2] + k2, phase, shift};
      }
    }
  }
}

namespace {
// Kernel index per dim of weight tap q.
std::array<int64_t, 3> tap_index(const ConvGeometry& g, int64_t q) {
  return {q / (g.k[1] * g.k[2]), q / g.k[2] % g.k[1], q % g.k[2]};
}
}  // namespace

TapBox tap_box(const ConvGeometry& g, int64_t q) {
  const std::array<int64_t, 3> k = tap_index(g, q);
  TapBox b;
  for (int d = 0; d < 3; ++d) {
    const int64_t e = tap_offset(g, d, k[d]);
    // s*o + e >= 0  <=>  o >= ceil(-e / s);  s*o + e < in  <=>  o <= floor((in - 1 - e) / s).
    b.lo[d] = std::clamp<int64_t>(-floor_div(e, g.stride[d]), 0, g.out[d]);
    b.hi[d] = std::clamp<int64_t>(floor_div(g.in[d] - 1 - e, g.stride[d]) + 1, b.lo[d], g.out[d]);
  }
  return b;
}

int64_t tap_source_offset(const ConvGeometry& g, int64_t q) {
  const std::array<int64_t, 3> k = tap_index(g, q);
  return (tap_offset(g, 0, k[0]) * g.in[1] + tap_offset(g, 1, k[1])) * g.in[2] +
         tap_offset(g, 2, k[2]);
}

namespace {

// How build_band_row copies source runs: converting a Source to fp32, or copying 16-bit bits.
// fp32 sources as they are copy inline (a band row is many short runs: a call and a dtype switch
// per run cost more than the copy), with the ISA of the stride-2 split looked up once.
struct ConvertCopier {
  using Dst = float;
  Source src;
  const float* f32 = nullptr;  // src.data when it is fp32 as is, else null
  int split = 0;               // stride-2 split kernel: 2 AVX-512, 1 AVX2, 0 none

  explicit ConvertCopier(const Source& s) : src(s) {
    if (s.kind != SrcKind::kF32) return;
    f32 = static_cast<const float*>(s.data);
    split = gemm::have_avx512() ? 2 : gemm::isa() >= gemm::Isa::kAvx2 ? 1 : 0;
  }
  // dst[k] = source element at + k * stride, for k < n.
  void run(int64_t at, int64_t n, int64_t stride, float* dst) const {
    if (!f32) return src.at(at).convert(n, stride, dst);
    if (stride == 1) {
      if (n > 0) std::memcpy(dst, f32 + at, static_cast<size_t>(n) * sizeof(float));
      return;
    }
    for (int64_t k = 0; k < n; ++k) dst[k] = f32[at + k * stride];
  }
  // Stride 2, both phases in one pass (fp32 as is only); false: copy them one by one.
  bool split2(int64_t at, int64_t n, float* even, float* odd) const {
    if (split == 2) direct_split2_avx512(f32 + at, n, even, odd);
    if (split == 1) phase_split2_avx2(f32 + at, n, even, odd);
    return split != 0;
  }
};

struct BitsCopier {
  using Dst = uint16_t;
  const uint16_t* src;
  bool split = gemm::have_avx512();  // stride-2 split kernel (AVX-512)
  void run(int64_t at, int64_t n, int64_t stride, uint16_t* dst) const {
    if (stride == 1 && n > 0) {
      std::memcpy(dst, src + at, static_cast<size_t>(n) * sizeof(uint16_t));
      return;
    }
    for (int64_t k = 0; k < n; ++k) dst[k] = src[at + k * stride];
  }
  bool split2(int64_t at, int64_t n, uint16_t* even, uint16_t* odd) const {
    if (split) direct_split2_bf16_avx512(src + at, n, even, odd);
    return split;
  }
};

// Asks for the cache lines of source elements [at, at + n) (fp32 sources and bf16 bits).
template <typename Copier>
void prefetch_row(const Copier& copier, int64_t at, int64_t n) {
  if constexpr (std::is_same_v<Copier, ConvertCopier>) {
    if (copier.f32) prefetch_bytes(copier.f32 + at, n * 4);
  } else {
    prefetch_bytes(copier.src + at, n * 2);
  }
}

// What every row of a band shares: the phases in use per dim, and per W phase the grid columns
// [w0, w1) that hold source columns (computed once per band, not per row).
struct RowPlan {
  int64_t a2s[64], w0[64], w1[64], n2 = 0;
  int64_t a0s[64], a1s[64], n0 = 0, n1 = 0;
  bool pair = false;  // stride 2 with both W phases: the common interior split in one pass
  int64_t in0 = 0, in1 = 0;

  explicit RowPlan(const TapGrid& tg) {
    const int64_t Wp = tg.Wp(), S2 = tg.src_size[2], s2 = tg.src_stride[2], lo2 = tg.lo[2];
    // Phases are residues mod the stride: only a < s can be in use.
    for (int64_t a2 = 0; a2 < std::min<int64_t>(s2, 64); ++a2) {
      if (tg.phase_rank[2][a2] < 0) continue;
      a2s[n2] = a2;
      w0[n2] = std::clamp<int64_t>(ceil_div(-a2, s2) - lo2, 0, Wp);
      w1[n2] = std::clamp<int64_t>(ceil_div(S2 - a2, s2) - lo2, w0[n2], Wp);
      ++n2;
    }
    pair = s2 == 2 && n2 == 2;
    in0 = pair ? std::max(w0[0], w0[1]) : 0, in1 = pair ? std::min(w1[0], w1[1]) : 0;
    for (int64_t a = 0; a < std::min<int64_t>(tg.src_stride[0], 64); ++a)
      if (tg.phase_rank[0][a] >= 0) a0s[n0++] = a;
    for (int64_t a = 0; a < std::min<int64_t>(tg.src_stride[1], 64); ++a)
      if (tg.phase_rank[1][a] >= 0) a1s[n1++] = a;
  }
};

// Band row r of one source channel (element `chan` of the source on): dst + phase *
// phase_stride, every phase (build_band_row's layout for one channel).
template <typename Copier>
void band_row(const TapGrid& tg, const RowPlan& rp, const Copier& copier, int64_t chan, int64_t r,
              typename Copier::Dst* dst, int64_t phase_stride) {
  using T = typename Copier::Dst;
  const int64_t Hp = tg.Hp(), Wp = tg.Wp();
  const int64_t S1 = tg.src_size[1], S2 = tg.src_size[2], s2 = tg.src_stride[2], lo2 = tg.lo[2];
  const int64_t n1 = rp.n1, n2 = rp.n2;
  for (int64_t p0 = 0; p0 < rp.n0; ++p0)
    for (int64_t p1 = 0; p1 < n1; ++p1) {
      T* base = dst + (p0 * n1 + p1) * n2 * phase_stride;
      const int64_t at = phase_source_row(tg, r, rp.a0s[p0], rp.a1s[p1]);
      const bool inside = at >= 0;
      const int64_t i1 = tg.src_stride[1] * (r % Hp + tg.lo[1]) + rp.a1s[p1];
      const int64_t row = chan + (inside ? at : 0);
      // The source row two grid rows on (the same phase) is asked for, so the next call finds it
      // in cache: strided bands read phases x channels source rows, too many streams for the
      // hardware prefetcher (unit-stride bands were not measured slow without).
      const bool strided = tg.src_stride[0] > 1 || tg.src_stride[1] > 1 || s2 > 1;
      if (strided && inside && i1 + 2 * tg.src_stride[1] < S1)
        prefetch_row(copier, row + 2 * tg.src_stride[1] * S2, S2);
      const bool interior_done = inside && rp.pair && rp.in1 > rp.in0 &&
                                 copier.split2(row + 2 * (rp.in0 + lo2), rp.in1 - rp.in0,
                                               base + rp.in0, base + phase_stride + rp.in0);
      for (int64_t p = 0; p < n2; ++p) {
        T* d = base + p * phase_stride;
        const int64_t lo = inside ? rp.w0[p] : 0, hi = inside ? rp.w1[p] : 0;
        for (int64_t k = 0; k < lo; ++k) d[k] = T(0);
        for (int64_t k = hi; k < Wp; ++k) d[k] = T(0);
        if (!inside || hi <= lo) continue;
        const int64_t at = row + s2 * (lo + lo2) + rp.a2s[p];  // source column of grid column lo
        if (!interior_done) {
          copier.run(at, hi - lo, s2, d + lo);
          continue;
        }
        copier.run(at, rp.in0 - lo, s2, d + lo);  // around the split interior
        copier.run(at + s2 * (rp.in1 - lo), hi - rp.in1, s2, d + rp.in1);
      }
    }
}

// Unit stride, fp32 (the common case: every forward / weight grid of a unit-stride conv and every
// data grid): one phase, rows copied straight from the source plane. UnitRows walks grid rows in
// order, giving each row's source offset in a channel (-1: outside the source, all zero).
struct UnitRows {
  const TapGrid& tg;
  int64_t o0, o1;  // grid row r = o0 * Hp + o1
  UnitRows(const TapGrid& t, int64_t r) : tg(t), o0(r / t.Hp()), o1(r % t.Hp()) {}
  int64_t offset() const {
    const int64_t i0 = o0 + tg.lo[0], i1 = o1 + tg.lo[1];
    const bool inside = i0 >= 0 && i0 < tg.src_size[0] && i1 >= 0 && i1 < tg.src_size[1];
    return inside ? (i0 * tg.src_size[1] + i1) * tg.src_size[2] : -1;
  }
  void next() {
    if (++o1 == tg.Hp()) o1 = 0, ++o0;
  }
};

bool unit_grid(const TapGrid& tg) {
  return tg.phases() == 1 && tg.src_stride[0] == 1 && tg.src_stride[1] == 1 &&
         tg.src_stride[2] == 1;
}
bool unit_f32(const TapGrid& tg, const Source& src) {
  return src.kind == SrcKind::kF32 && unit_grid(tg);
}

// d[0, Wp) = the row at source offset `at` (-1: zeros) placed at grid columns [w0, w1).
template <typename T>
inline void unit_row(const T* src, int64_t at, int64_t w0, int64_t w1, int64_t lo2, int64_t Wp,
                     T* d) {
  if (at < 0) w0 = w1 = 0;
  for (int64_t k = 0; k < w0; ++k) d[k] = T(0);
  if (w1 > w0) {
    const T* s = src + at + lo2;
    for (int64_t k = w0; k < w1; ++k) d[k] = s[k];
  }
  for (int64_t k = w1; k < Wp; ++k) d[k] = T(0);
}

// unit_row for a converting source (fp16, bf16, rounded fp32): the row's elements converted in one
// call, without band_row's per-row phase arithmetic, which showed in a 16-bit call's profile around
// conversions of 28-element rows (measured: bench/RESULTS.md, design tap_grid.unit-row-convert).
inline void unit_row_convert(const Source& src, int64_t at, int64_t w0, int64_t w1, int64_t lo2,
                             int64_t Wp, float* d) {
  if (at < 0) w0 = w1 = 0;
  std::fill(d, d + w0, 0.0f);
  if (w1 > w0) src.at(at + lo2 + w0).convert(w1 - w0, 1, d + w0);
  std::fill(d + w1, d + Wp, 0.0f);
}

// Row r of a unit grid for `channels` channels (src_cstride apart) at dst + c * dst_cstride.
// Callers go row by row over several channels, a pattern the hardware prefetcher misses: fetch
// each channel's row 4 ahead.
template <typename T>
void unit_band_row(const TapGrid& tg, const RowPlan& rp, const T* src, int64_t src_cstride,
                   int64_t channels, int64_t r, T* dst, int64_t dst_cstride) {
  const int64_t at = UnitRows(tg, r).offset(), ahead = UnitRows(tg, r + 4).offset();
  for (int64_t c = 0; c < channels; ++c) {
    unit_row(src + c * src_cstride, at, rp.w0[0], rp.w1[0], tg.lo[2], tg.Wp(),
             dst + c * dst_cstride);
    if (ahead >= 0) {
      __builtin_prefetch(src + c * src_cstride + ahead);
      __builtin_prefetch(src + c * src_cstride + ahead + tg.src_size[2] - 1);
    }
  }
}

}  // namespace

void build_band_row(const TapGrid& tg, const Source& src, int64_t src_cstride, int64_t channels,
                    int64_t r, float* dst, int64_t dst_cstride, int64_t phase_stride) {
  const RowPlan rp(tg);
  if (unit_f32(tg, src)) {
    unit_band_row(tg, rp, static_cast<const float*>(src.data), src_cstride, channels, r, dst,
                  dst_cstride);
    return;
  }
  if (unit_grid(tg)) {
    const int64_t at = UnitRows(tg, r).offset();
    for (int64_t c = 0; c < channels; ++c)
      unit_row_convert(src.at(c * src_cstride), at, rp.w0[0], rp.w1[0], tg.lo[2], tg.Wp(),
                       dst + c * dst_cstride);
    return;
  }
  const ConvertCopier copier(src);
  for (int64_t c = 0; c < channels; ++c)
    band_row(tg, rp, copier, c * src_cstride, r, dst + c * dst_cstride, phase_stride);
}

void build_band_row(const TapGrid& tg, const uint16_t* src, int64_t src_cstride, int64_t channels,
                    int64_t r, uint16_t* dst, int64_t dst_cstride, int64_t phase_stride) {
  const RowPlan rp(tg);
  if (unit_grid(tg)) {
    unit_band_row(tg, rp, src, src_cstride, channels, r, dst, dst_cstride);
    return;
  }
  const BitsCopier copier{src};
  for (int64_t c = 0; c < channels; ++c)
    band_row(tg, rp, copier, c * src_cstride, r, dst + c * dst_cstride, phase_stride);
}

// Channel by channel, each channel's rows in order: the source is read as a few sequential streams
// the hardware prefetcher follows (row-major over all channels it missed the cache on most rows;
// measured: bench/RESULTS.md, design tap_grid.channel-order).
void build_band(const TapGrid& tg, const Source& src, int64_t src_cstride, int64_t channels,
                int64_t r0, int64_t rows, int64_t plane, float* band) {
  const int64_t count = tg.band_rows(rows), cstride = tg.phases() * plane;
  const RowPlan rp(tg);
  if (unit_grid(tg)) {
    // fp32 rows copied by unit_row's own loop, others converted by unit_row_convert.
    const float* f32 = unit_f32(tg, src) ? static_cast<const float*>(src.data) : nullptr;
    for (int64_t c = 0; c < channels; ++c) {
      UnitRows walk(tg, r0);
      for (int64_t i = 0; i < count; ++i, walk.next()) {
        float* d = band + c * cstride + i * tg.Wp();
        if (f32) {
          unit_row(f32 + c * src_cstride, walk.offset(), rp.w0[0], rp.w1[0], tg.lo[2], tg.Wp(), d);
        } else {
          unit_row_convert(src.at(c * src_cstride), walk.offset(), rp.w0[0], rp.w1[0], tg.lo[2],
                           tg.Wp(), d);
        }
      }
    }
    return;
  }
  const ConvertCopier copier(src);
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t i = 0; i < count; ++i)
      band_row(tg, rp, copier, c * src_cstride, r0 + i, band + c * cstride + i * tg.Wp(), plane);
}

void scatter_block(const TapGrid& tg, const float* block, int64_t ld, int64_t channels, int64_t r0,
                   int64_t r1, float* dst, int64_t dst_cstride) {
  const int64_t Wp = tg.Wp(), n = tg.out[2], s2 = tg.dst_stride[2];
  const bool avx512 = gemm::have_avx512();
  for_output_rows(tg, channels, r0, r1, [&](int64_t o, int64_t i, int64_t at) {
    const float* src = block + o * ld + i * Wp;
    float* row = dst + o * dst_cstride + at;
    if (s2 == 1) {
      std::memcpy(row, src, static_cast<size_t>(n) * sizeof(float));
    } else if (s2 == 2 && avx512) {
      direct_scatter2_avx512(src, n, row);
    } else {
      for (int64_t w = 0; w < n; ++w) row[w * s2] = src[w];
    }
  });
}

void gather_block(const TapGrid& tg, const float* src, int64_t src_cstride, int64_t channels,
                  int64_t r0, int64_t r1, float* grid, int64_t ld) {
  const int64_t Hp = tg.Hp(), Wp = tg.Wp(), n = tg.out[2], D1 = tg.out[1];
  for (int64_t o = 0; o < channels; ++o) {
    float* dst = grid + o * ld;
    for (int64_t r = r0; r < r1; ++r, dst += Wp) {
      const int64_t o0 = r / Hp, o1 = r % Hp;
      if (o1 >= tg.out[1]) {
        std::fill(dst, dst + Wp, 0.0f);
        continue;
      }
      std::memcpy(dst, src + o * src_cstride + (o0 * D1 + o1) * n,
                  static_cast<size_t>(n) * sizeof(float));
      std::fill(dst + n, dst + Wp, 0.0f);
    }
  }
}

}  // namespace aclnn_cpu::conv
