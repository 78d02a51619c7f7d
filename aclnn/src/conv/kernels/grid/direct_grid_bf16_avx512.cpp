// The bf16 direct grid kernels of direct_grid.h, compiled for AVX512_BF16 (reached only after the
// runtime check, bf16_dot_kernels()). vdpbf16ps multiplies pairs of bf16 and adds both products
// to an fp32 lane: the pairs here are two input channels at one position (forward) or two
// positions of one channel (weight gradient), so one instruction does twice an fp32 FMA's work.
// No standard-library template is instantiated inside the target region.
#include <immintrin.h>

#include <array>
#include <cstdint>
#include <utility>

#include "conv/kernels/grid/direct_grid.h"
#include "int_math.h"

// The whole file is compiled for AVX-512 with BF16.
#include "gemm/target_avx512bf16_begin.h"
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// transpose16's shuffles start from _mm512_undefined_ps (GCC 12 flags its self-initialisation).
#pragma GCC diagnostic ignored "-Wuninitialized"

#include "conv/kernels/bf16_dot_avx512.h"
#include "conv/kernels/bias_sums_avx512.h"
#include "conv/kernels/grid/direct_grid_forward_avx512.h"
#include "gemm/avx512_util.h"

namespace aclnn_cpu::conv {
namespace {

constexpr int kOB = static_cast<int>(kDirectOcBlock);  // forward: output channels per tile
constexpr int kPV = 3;                                 // forward: 16-column vectors per tile
constexpr int64_t kWC = 12;  // weight gradient: input channels per tile (x 32 output channels)

// The bf16 unit of direct_grid_forward_avx512.h's tile: each unit of x is the bf16 pair of
// channels (2 c2, 2 c2 + 1) at one grid column, each unit of w the matching weight pair; the dot
// product of the two pairs is one vdpbf16ps lane (C counts the pairs).
struct Bf16PairUnit {
  using E = uint32_t;
  using V = __m512i;
  static V load(const E* p) { return _mm512_loadu_si512(p); }
  static V load_masked(__mmask16 m, const E* p) { return _mm512_maskz_loadu_epi32(m, p); }
  static V broadcast(E w) { return _mm512_set1_epi32(static_cast<int>(w)); }
  static __m512 madd(__m512 acc, V x, V w) { return dot2(acc, x, w); }
};

// acc[i][v] = dwt[c0 + i][o0 + 16 v ..] += sum_p dyt[p][o] . x(p, i): each unit of dyt is the
// pair of positions (2p, 2p + 1) of one output channel, each unit of x the same two positions of
// one input channel. kChannelsLast: x(p, i) = x[p * ld + i] (grid_direct's band, transposed);
// else x(p, i) = x[i * ld + p] (pointwise: each input channel's row read in place). The pairs p
// run over `rows` runs of L2, `pitch` pairs apart (a grid's output columns, its extra ones
// skipped).
template <int OV, int RC, bool kChannelsLast>
void weight_tile(const uint32_t* x, int64_t ld, const uint32_t* dyt, int64_t ldy, int64_t rows,
                 int64_t L2, int64_t pitch, float* dwt, int64_t ldw) {
  __m512 acc[RC][OV];
#pragma GCC unroll 16
  for (int i = 0; i < RC; ++i)
#pragma GCC unroll 16
    for (int v = 0; v < OV; ++v) acc[i][v] = _mm512_load_ps(dwt + i * ldw + 16 * v);
  for (int64_t r = 0; r < rows; ++r) {
    const uint32_t* xr = x + r * pitch * (kChannelsLast ? ld : 1);
    const uint32_t* dr = dyt + r * pitch * ldy;
    for (int64_t p = 0; p < L2; ++p, dr += ldy) {
      dot2_outer<RC, OV>(acc, dr, [&](int i) {
        return static_cast<int>(kChannelsLast ? xr[p * ld + i] : xr[i * ld + p]);
      });
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < RC; ++i)
#pragma GCC unroll 16
    for (int v = 0; v < OV; ++v) _mm512_store_ps(dwt + i * ldw + 16 * v, acc[i][v]);
}

using WeightTile = void (*)(const uint32_t*, int64_t, const uint32_t*, int64_t, int64_t, int64_t,
                            int64_t, float*, int64_t);

// kWeightTiles<OV, kChannelsLast, kMaxRC>[rc]: the tile of OV vectors of output channels x rc
// input channels, rc = 1 .. kMaxRC (entry 0 unused).
template <int OV, bool kChannelsLast, int... I>
constexpr std::array<WeightTile, sizeof...(I) + 1> weight_tiles(std::integer_sequence<int, I...>) {
  return {nullptr, weight_tile<OV, I + 1, kChannelsLast>...};
}
template <int OV, bool kChannelsLast, int kMaxRC>
constexpr auto kWeightTiles =
    weight_tiles<OV, kChannelsLast>(std::make_integer_sequence<int, kMaxRC>{});

constexpr int kRowsOV = 4, kRowsRC = 6;  // pointwise: 64 output channels x 6 input channels
constexpr const WeightTile* kRowsTilesByOV[kRowsOV + 1] = {
    nullptr, kWeightTiles<1, false, kRowsRC>.data(), kWeightTiles<2, false, kRowsRC>.data(),
    kWeightTiles<3, false, kRowsRC>.data(), kWeightTiles<4, false, kRowsRC>.data()};

}  // namespace

void direct_rows_weight_bf16(int64_t m16, int64_t C, const uint32_t* x, int64_t ldc,
                             const uint32_t* dyt, int64_t ldy, int64_t L2, float* dwt) {
  for (int64_t o0 = 0; o0 < m16; o0 += 16 * kRowsOV) {
    const int ov = static_cast<int>(min64(kRowsOV, (m16 - o0) / 16));
    for (int64_t c0 = 0; c0 < C; c0 += kRowsRC) {
      const int rc = static_cast<int>(min64(kRowsRC, C - c0));
      kRowsTilesByOV[ov][rc](x + c0 * ldc, ldc, dyt + o0, ldy, 1, L2, 0, dwt + c0 * m16 + o0, m16);
    }
  }
}

void direct_grid_forward_bf16(const GridForwardBf16& a) {
  grid_forward<kOB, kPV>(kForwardTileSets<Bf16PairUnit>, a);
}

namespace {

// The calls of direct_grid_weight_bf16's register tiles (a's own ahead ignored: `ahead`).
inline void weight_bf16_calls(const GridWeightBf16& a, WeightAhead* ahead) {
  const int64_t m16 = a.m16, C = a.C, T = a.T, ldx = a.ldx, ldy = a.ldy;
  const int64_t* off = a.off;
  const TapBox* box = a.box;
  const uint32_t *xt = a.xt, *dyt = a.dyt;
  const WeightRuns& runs = a.runs;
  float* dwt = a.dwt;
  const int64_t tiles = (C + kWC - 1) / kWC, base = C / tiles, wide = C % tiles;
  for (int64_t o0 = 0; o0 < m16; o0 += 2 * 16) {
    const bool two = o0 + 32 <= m16;
    for (int64_t i = 0, c0 = 0; i < tiles; ++i) {
      const int rc = static_cast<int>(base + (i < wide));
      for (int64_t t = 0; t < T; ++t) {
        if (ahead) ahead->ask();
        const RunWindow w = run_window(runs, box[t]);
        if (w.rows == 0) continue;  // the tap reads only padding here
        const uint32_t* x = xt + off[t] + w.start * ldx + c0;
        const uint32_t* dy = dyt + w.start * ldy + o0;
        float* d = dwt + (t * C + c0) * m16 + o0;
        if (two) {
          kWeightTiles<2, true, kWC>[rc](x, ldx, dy, ldy, w.rows, w.L, runs.pitch, d, m16);
        } else {
          kWeightTiles<1, true, kWC>[rc](x, ldx, dy, ldy, w.rows, w.L, runs.pitch, d, m16);
        }
      }
      c0 += rc;
    }
  }
}

}  // namespace

// Two copies of the calls: without an ask-ahead the compiler drops its test per tile.
void direct_grid_weight_bf16(const GridWeightBf16& a) {
  if (!a.ahead) return weight_bf16_calls(a, nullptr);
  weight_bf16_calls(a, a.ahead);
}

namespace {

// Lane i of interleave(a, b) is (a[i], b[i]): 16-bit elements 2i and 2i + 1 from the two sources.
inline void interleave(const uint16_t* a, const uint16_t* b, int64_t n, uint32_t* out) {
  const __m512i idx_lo =
      _mm512_set_epi16(47, 15, 46, 14, 45, 13, 44, 12, 43, 11, 42, 10, 41, 9, 40, 8, 39, 7, 38, 6,
                       37, 5, 36, 4, 35, 3, 34, 2, 33, 1, 32, 0);
  const __m512i idx_hi = _mm512_add_epi16(idx_lo, _mm512_set1_epi16(16));
  for (int64_t i = 0; i < n; i += 32) {
    const int64_t k = min64(32, n - i);
    const __mmask32 m = k >= 32 ? 0xffffffffu : (1u << k) - 1;
    const __m512i va = _mm512_maskz_loadu_epi16(m, a + i);
    const __m512i vb = b ? _mm512_maskz_loadu_epi16(m, b + i) : _mm512_setzero_si512();
    _mm512_mask_storeu_epi32(out + i, gemm::first_lanes(k),
                             _mm512_permutex2var_epi16(va, idx_lo, vb));
    if (k > 16)
      _mm512_mask_storeu_epi32(out + i + 16, gemm::first_lanes(k - 16),
                               _mm512_permutex2var_epi16(va, idx_hi, vb));
  }
}

// out[k] = 0 for k < n.
inline void zero_units(int64_t n, uint32_t* out) {
  for (int64_t k = 0; k < n; k += 16)
    _mm512_mask_storeu_epi32(out + k, gemm::first_lanes(n - k), _mm512_setzero_si512());
}

}  // namespace

void direct_interleave_bf16(const uint16_t* a, const uint16_t* b, int64_t n, uint32_t* out) {
  interleave(a, b, n, out);
}

void direct_pair_rows_bf16(const uint16_t* a, const uint16_t* b, const int64_t* at, int64_t rows,
                           int64_t Wp, int64_t w0, int64_t w1, uint32_t* out) {
  for (int64_t r = 0; r < rows; ++r, out += Wp) {
    if (at[r] < 0 || w1 <= w0) {
      zero_units(Wp, out);
      continue;
    }
    zero_units(w0, out);
    interleave(a + at[r], b ? b + at[r] : nullptr, w1 - w0, out + w0);
    zero_units(Wp - w1, out + w1);
  }
}

void direct_split2_bf16_avx512(const uint16_t* src, int64_t n, uint16_t* even, uint16_t* odd) {
  // Unit i of a 32-bit load is the pair (src[2 i], src[2 i + 1]): its low half is the even
  // column, its high half the odd one; vpmovdw narrows each to 16 of 16 bits.
  for (int64_t i = 0; i < n; i += 16) {
    const int64_t k = min64(16, n - i);
    const __mmask16 m = gemm::first_lanes(k);
    const __m512i v = _mm512_maskz_loadu_epi32(m, src + 2 * i);
    _mm256_mask_storeu_epi16(even + i, m, _mm512_cvtepi32_epi16(v));
    _mm256_mask_storeu_epi16(odd + i, m, _mm512_cvtepi32_epi16(_mm512_srli_epi32(v, 16)));
  }
}

namespace {

// The words [lo, hi) of 32 (clamped) as a mask.
inline __mmask32 word_range(int64_t lo, int64_t hi) {
  lo = lo < 0 ? 0 : lo;
  hi = hi > 32 ? 32 : hi;
  if (hi <= lo) return 0;
  return static_cast<__mmask32>(((uint64_t{1} << hi) - 1) & ~((uint64_t{1} << lo) - 1));
}

// v[0 .. 16) (one 32-bit unit row of 16 sources each) transposed and stored as n rows of 16
// units: out[u * ld] = unit u of every source (out 64-byte aligned, ld a multiple of 16).
inline void store_transposed(__m512 (&v)[16], int64_t n, uint32_t* out, int64_t ld) {
  gemm::transpose16(v);
  for (int64_t u = 0; u < n; ++u) _mm512_store_ps(reinterpret_cast<float*>(out + u * ld), v[u]);
}

// lo, hi (the 16 lanes' running sums in double) += the elements of v's 16 units (each a bf16
// pair; lanes: output channels, zero where nothing was read): each pair summed by vdpbf16ps
// against ones (exact products; bf16 denormals count as zero, as in the dot kernels), the 16
// units added in a tree in fp32, that sum in double. oneDNN's bf16 backward-weights kernel sums
// diff_bias the same way, into one fp32 accumulator.
inline void add_pair_sums(const __m512 (&v)[16], __m512d& lo, __m512d& hi) {
  const __m512i ones = _mm512_set1_epi32(0x3F803F80);  // the bf16 pair (1, 1)
  __m512 a[8];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i)
    a[i] = dot2(dot2(_mm512_setzero_ps(), _mm512_castps_si512(v[2 * i]), ones),
                _mm512_castps_si512(v[2 * i + 1]), ones);
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) a[i] = _mm512_add_ps(a[2 * i], a[2 * i + 1]);
  widen_add(_mm512_add_ps(_mm512_add_ps(a[0], a[1]), _mm512_add_ps(a[2], a[3])), lo, hi);
}

// The 32 band columns from k0 of one channel as 16 units: src = its source row + the column of
// k0; km the band columns inside the source, lo_m / hi_m the source words of the two loads of
// s2 = 2 (whose even words are the columns).
inline __m512i band_units(const uint16_t* src, const PairBand& pb, __mmask32 km, __mmask32 lo_m,
                          __mmask32 hi_m) {
  if (pb.s2 == 1) return _mm512_maskz_loadu_epi16(km, src);
  const __m512i even =
      _mm512_set_epi16(62, 60, 58, 56, 54, 52, 50, 48, 46, 44, 42, 40, 38, 36, 34, 32, 30, 28, 26,
                       24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  const __m512i a = _mm512_maskz_loadu_epi16(lo_m, src);
  const __m512i b = hi_m ? _mm512_maskz_loadu_epi16(hi_m, src + 32) : _mm512_setzero_si512();
  return _mm512_maskz_permutex2var_epi16(km, a, even, b);
}

// Units [j0, j0 + 16) of one copy (parity, W phase p2) of a band row for channels c0 .. c0 + 16,
// source row `row`: each channel's 32 band columns from 2 j0 + parity, transposed to
// channels-last. row2 >= -1 (rows of 8 units): units 8 .. 16 are the next band row's (source row
// row2), so that a transpose fills its 16 lanes. ahead != 0: the same columns `ahead` elements on
// are asked for (a later band row's source row: 16 channels' rows interleaved are too many
// streams for the hardware prefetcher).
void band_chunk(const uint16_t* x, int64_t S_in, int64_t nc, int64_t c0, const PairBand& pb,
                int64_t row, int64_t row2, int64_t p2, int64_t parity, int64_t j0, int64_t ahead,
                uint32_t* out) {
  const int64_t k0 = 2 * j0 + parity, col = pb.s2 * (k0 + pb.lo2) + pb.a2[p2];
  const __mmask32 km = word_range(pb.w0[p2] - k0, pb.w1[p2] - k0);
  const __mmask32 lo_m = word_range(-col, pb.S2 - col);
  const __mmask32 hi_m = word_range(-col - 32, pb.S2 - col - 32);
  __m512 v[16];
#pragma GCC unroll 16
  for (int c = 0; c < 16; ++c) {
    const uint16_t* src = x + (c0 + c) * S_in + col;
    const bool live = c0 + c < nc && km != 0;
    if (live && row >= 0 && ahead != 0) {
      _mm_prefetch(reinterpret_cast<const char*>(src + row + ahead), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(src + row + ahead + 16 * pb.s2), _MM_HINT_T0);
      if (pb.s2 == 2)
        _mm_prefetch(reinterpret_cast<const char*>(src + row + ahead + 63), _MM_HINT_T0);
    }
    __m512i w =
        live && row >= 0 ? band_units(src + row, pb, km, lo_m, hi_m) : _mm512_setzero_si512();
    if (row2 >= -1) {
      const __m512i w2 =
          live && row2 >= 0 ? band_units(src + row2, pb, km, lo_m, hi_m) : _mm512_setzero_si512();
      w = _mm512_inserti64x4(w, _mm512_castsi512_si256(w2), 1);
    }
    v[c] = _mm512_castsi512_ps(w);
  }
  const int64_t n = row2 >= -1 ? 16 : min64(16, pb.units - j0);
  store_transposed(v, n, out + j0 * pb.cb16 + c0, pb.cb16);
}

}  // namespace

void direct_band_pairs_bf16(const uint16_t* x, int64_t S_in, int64_t nc, const PairBand& pb,
                            const int64_t* src_row, const int64_t* src_row2,
                            const int64_t* next_row, int64_t i, uint32_t* band2_t) {
  const int64_t P = pb.n01 * pb.n2;
  // Long rows (c1d_audio's 4096 columns) ask for their own columns kAheadChunks chunks on, 16
  // channels at a time; short ones the next band row, in the first copy read.
  constexpr int64_t kAheadChunks = 4;
  const bool long_rows = pb.units > 2 * 16 * kAheadChunks;
  for (int64_t p01 = 0; p01 < pb.n01; ++p01) {
    int64_t ahead = long_rows                                 ? kAheadChunks * 32 * pb.s2
                    : src_row[p01] >= 0 && next_row[p01] >= 0 ? next_row[p01] - src_row[p01]
                                                              : 0;
    for (int64_t p2 = 0; p2 < pb.n2; ++p2)
      for (int64_t parity = 0; parity < 2; ++parity) {
        const int64_t ph = p01 * pb.n2 + p2;
        if (!pb.use[parity][ph]) continue;
        uint32_t* out = band2_t + ((parity * P + ph) * pb.half_plane + i * pb.units) * pb.cb16;
        for (int64_t c0 = 0; c0 < nc; c0 += 16)  // 16 channels' streams at a time
          for (int64_t j0 = 0; j0 < pb.units; j0 += 16)
            band_chunk(x, S_in, nc, c0, pb, src_row[p01], src_row2 ? src_row2[p01] : -2, p2, parity,
                       j0, ahead, out);
        ahead = 0;
      }
  }
}

void direct_dy_pairs_bf16(const uint16_t* dy, int64_t S_out, int64_t Cog, int64_t m16, int64_t at,
                          int64_t at2, int64_t n, int64_t units, int64_t next, uint32_t* dy2_t,
                          double* sums) {
  // 16 channels' rows at a time, each asked for 4 chunks on where the row is longer, else the
  // row `next` elements on.
  const __mmask32 m2 = at2 < 0 ? 0 : word_range(0, n);
  for (int64_t o0 = 0; o0 < m16; o0 += 16) {
    __m512d lo = _mm512_setzero_pd(), hi = _mm512_setzero_pd();  // gradBias of o0 .. o0 + 16
    for (int64_t j0 = 0; j0 < units; j0 += 16) {
      const __mmask32 m = at < 0 ? 0 : word_range(0, n - 2 * j0);
      const int64_t ahead = 2 * (j0 + 64) < n ? 128 : next;
      __m512 v[16];
#pragma GCC unroll 16
      for (int c = 0; c < 16; ++c) {
        const uint16_t* src = dy + (o0 + c) * S_out + at + 2 * j0;
        const bool live = o0 + c < Cog && m != 0;
        if (live && ahead != 0) {
          _mm_prefetch(reinterpret_cast<const char*>(src + ahead), _MM_HINT_T0);
          _mm_prefetch(reinterpret_cast<const char*>(src + ahead + 31), _MM_HINT_T0);
        }
        __m512i w = live ? _mm512_maskz_loadu_epi16(m, src) : _mm512_setzero_si512();
        if (at2 >= -1) {  // units 8 .. 16: the next row's
          const __m512i w2 = o0 + c < Cog && m2 != 0
                                 ? _mm512_maskz_loadu_epi16(m2, dy + (o0 + c) * S_out + at2)
                                 : _mm512_setzero_si512();
          w = _mm512_inserti64x4(w, _mm512_castsi512_si256(w2), 1);
        }
        v[c] = _mm512_castsi512_ps(w);
      }
      store_transposed(v, at2 >= -1 ? 16 : min64(16, units - j0), dy2_t + j0 * m16 + o0, m16);
      if (sums) add_pair_sums(v, lo, hi);
    }
    if (sums && o0 < Cog) add_sums(sums + o0, lo, hi, Cog - o0);
  }
}

}  // namespace aclnn_cpu::conv

#pragma GCC diagnostic pop
#include "gemm/target_end.h"
