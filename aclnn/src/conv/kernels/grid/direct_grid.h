// Direct fp32 convolution kernels on the padded grid (padded_grid.h): no im2col, no packing.
//
// On the grid every kernel tap is a plain shift of the padded input, so with the band of a task
// (channel c at band + c * plane) and the tap offsets off[t] = (kd*dil0*Hp + kh*dil1)*Wp + kw*dil2:
//
//   forward  out[o][j]   = sum_{c < C, t < T} w[o][c][t] * band[c * plane + j + off[t]]
//   weight   dw[o][c][t] += sum_{j < n}       dy[o][j]   * band[c * plane + j + off[t]]
//
// for grid columns j (output positions, the grid's extra columns included). The forward holds a
// register tile of 8 output channels x 48 columns (24 zmm accumulators) and walks (c, t): each step
// loads 3 vectors of the band straight from memory and broadcasts 8 weights, 24 FMAs for 11 loads,
// the same balance as the GEMM micro-kernel but with no B panel to pack (the GEMM path packs K
// copies of every input element per output-channel block). Channels are taken in chunks whose band
// window stays in L1 while all output blocks read it.
//
// The weight gradient runs on channels-last copies of the band and of dy (oneDNN's orientation):
// its register tile is 32 output channels (2 vectors) x 12 input channels of one tap, and each
// position costs 2 vector loads of dy and 12 broadcasts of x for 24 FMAs. The accumulators are
// the weight gradient itself, so nothing is summed across lanes.
//
// The data gradient of a unit-stride conv is the forward of dy with the flipped weights
// (flipped_for_data), so it runs the forward kernel too.
//
// fp32: AVX-512 (direct_grid_avx512.cpp) or AVX2 + FMA (direct_grid_avx2.cpp, with register
// tiles of 4 output channels x 24 columns and 32 x 3 channels); the unsuffixed functions pick one
// by gemm::isa() (call them only where it is at least kAvx2). bf16: AVX512_BF16 only.
#pragma once

#include <cstdint>

#include "conv/engine/source.h"
#include "cpu/cpu.h"

namespace aclnn_cpu::conv {

// Output channels per forward register tile; packed weights come in blocks of this many.
inline constexpr int64_t kDirectOcBlock = 8;

// Floats of the packed forward weights of m output channels x C channels x T taps.
inline int64_t direct_packed_w_elems(int64_t m, int64_t C, int64_t T) {
  return (m + kDirectOcBlock - 1) / kDirectOcBlock * kDirectOcBlock * C * T;
}

// One direct grid forward, fp32 (E = float) or bf16 (E = uint32_t, a unit holding the bf16 pair of
// input channels (2 c2, 2 c2 + 1); C, off and plane then count pairs):
//
//   out[o * ldo + j] = sum_{c < C, t < T} w[o][c][t] * x[c * plane + off[t] + j]   o < m, j < n
//
// with the weights packed by direct_pack_weights. Reads x only at the offsets named (masked past
// n). Channels are taken c_chunk at a time (a later chunk adds to out).
template <class E>
struct GridForward {
  int64_t m = 0;                 // output channels
  int64_t n = 0;                 // grid columns computed
  int64_t C = 0;                 // input channels (bf16: channel pairs)
  int64_t T = 0;                 // taps
  const int64_t* off = nullptr;  // [T] tap offsets into x, in units
  const E* x = nullptr;          // [C][plane] the band: channel c at x + c * plane
  int64_t plane = 0;             // channel stride of x, in units
  const E* packed = nullptr;     // [ceil(m / 8)][C][T][8] packed weights
  float* out = nullptr;          // [m][ldo]
  int64_t ldo = 0;               // row stride of out
  int64_t c_chunk = 1;           // channels per pass (their band window stays in L1)
  // row_len > 0 (at most 16): n is whole rows of `pitch` columns of which only the first row_len
  // are computed, one vector per row (narrow outputs: a 14-wide row costs 16 lanes, not the
  // grid's 18 columns). pitch >= 1 always, also with row_len == 0 (the AVX2 form divides n into
  // rows of it).
  int64_t row_len = 0;
  int64_t pitch = 1;
};
using GridForwardF32 = GridForward<float>;
using GridForwardBf16 = GridForward<uint32_t>;

void direct_grid_forward(const GridForwardF32& a);
void direct_grid_forward_avx512(const GridForwardF32& a);
void direct_grid_forward_avx2(const GridForwardF32& a);

// Where one tap of the weight gradient reads inside its source: the output positions o with
// lo[d] <= o[d] < hi[d] in every dim (outside them the tap reads zero padding, so their products
// are skipped, not computed). tap_box() gives it for a weight tap of a geometry.
struct TapBox {
  int64_t lo[3], hi[3];
};
// Every position (a weight kernel call with no padding to skip).
inline constexpr TapBox kAnyPosition{{INT64_MIN / 4, INT64_MIN / 4, INT64_MIN / 4},
                                     {INT64_MAX / 4, INT64_MAX / 4, INT64_MAX / 4}};
// The pairs of columns (2 p, 2 p + 1) holding a position of b (bf16 weight kernels).
inline TapBox pair_box(TapBox b) {
  b.lo[2] /= 2;  // b.lo[2] >= 0
  b.hi[2] = (b.hi[2] + 1) / 2;
  return b;
}

// The weight-kernel call's output positions: `rows` runs of L, `pitch` apart, the first at output
// coordinates (o0, o1, o2) and a run's positions stepping o2, successive runs o1.
struct WeightRuns {
  int64_t rows, L, pitch, o0, o1, o2;
};

struct WeightAhead;

// One weight-gradient kernel call, fp32 (E = float) or bf16 (E = uint32_t; see the bf16 kernels
// below: units are pairs of positions):
//
//   dwt[(t * C + c) * m16 + o] += sum_j xt[off[t] + j * ldx + c] * dyt[j * ldy + o]
//
// for o < m16, c < C, t < T, over the positions j = r * pitch + k (r < rows, k < L) of `runs` that
// lie in box[t]: runs of output columns, the grid's extra columns and every tap's padding skipped.
template <class E>
struct GridWeight {
  int64_t m16 = 0;               // output channels, a multiple of 16 (dyt zero past the real)
  int64_t C = 0;                 // input channels
  int64_t T = 0;                 // taps
  const int64_t* off = nullptr;  // [T] tap offsets into xt
  const TapBox* box = nullptr;   // [T] the positions each tap reads
  const E* xt = nullptr;         // [positions][ldx] the band, channels-last (ldx >= C)
  int64_t ldx = 0;               // position stride of xt
  const E* dyt = nullptr;        // [positions][ldy] dy, channels-last; 64-byte aligned
  int64_t ldy = 0;               // position stride of dyt: >= m16, a multiple of 16
  WeightRuns runs{};             // the positions of the call
  float* dwt = nullptr;          // [T][C][m16], 64-byte aligned
  WeightAhead* ahead = nullptr;  // memory to ask for meanwhile (null: none; the in-place and
                                 // bf16 forms only)
};
using GridWeightF32 = GridWeight<float>;
using GridWeightBf16 = GridWeight<uint32_t>;

void direct_grid_weight(const GridWeightF32& a);
void direct_grid_weight_avx512(const GridWeightF32& a);
void direct_grid_weight_avx2(const GridWeightF32& a);

// The weight kernel with x read where it lies (AVX-512 only): no band, no channels-last copy.
// Position j of run r of tap t reads channel c of x at x[xoff[t] + r * pitch + j * step +
// c * ldc]; every position of box[t] must be inside x (the others are never read).
struct InPlaceX {
  int64_t ldc, step, pitch;
};
// Asks for the cache lines of `bytes` bytes from p (a run the code after will read, whose misses
// the hardware prefetcher would not start early enough).
inline void prefetch_bytes(const void* p, int64_t bytes) {
  const char* b = static_cast<const char*>(p);
  for (int64_t i = 0; i < bytes; i += 64) __builtin_prefetch(b + i);
}
// Memory a weight-kernel call asks for while it runs (the next block's x and/or dy, which the
// hardware prefetcher does not see coming: channels x rows of streams): set k is count[k] runs of
// bytes[k] bytes, stride[k] bytes apart from at[k]; per_tile cache lines are asked for before
// each register tile, on from where the previous call stopped (set, run, line).
struct WeightAhead {
  const char* at[2] = {nullptr, nullptr};
  int64_t stride[2] = {0, 0}, count[2] = {0, 0}, bytes[2] = {0, 0};
  int64_t per_tile = 0, set = 0, run = 0, line = 0;

  // Asks for the next per_tile cache lines (each line of a run once), on from where the previous
  // ask stopped; nothing once both sets are asked for. The run's bounds are worked out once per
  // ask, not per line (per line they showed in the profile; measured: bench/RESULTS.md, design
  // direct_grid.ask-bounds).
  void ask() {
    for (int64_t k = per_tile; k > 0 && set < 2;) {
      const uintptr_t start = reinterpret_cast<uintptr_t>(at[set] + run * stride[set]);
      const uintptr_t first = start & ~uintptr_t{63};
      const int64_t lines = static_cast<int64_t>((start + bytes[set] - first + 63) / 64);
      const int64_t n = k < lines - line ? k : lines - line;
      const char* p = reinterpret_cast<const char*>(first) + line * 64;
      for (int64_t i = 0; i < n; ++i) __builtin_prefetch(p + 64 * i, 0, 3);
      line += n, k -= n;
      if (line < lines) return;
      line = 0;
      if (++run < count[set]) continue;
      run = 0;
      ++set;
    }
  }
};
// The bounds of an ask-ahead, fp32 and bf16 alike: at most kAheadMaxBytes asked for (L2 also holds
// the accumulators and the current block), and at least kAheadMinWorkPerLine vector FMAs or dots
// computed meanwhile per line asked for (mnist1's one-channel tiles have too few to hide the asks,
// and c1d_audio's 1.5 MB samples are too large: both ran slower with them; measured:
// bench/RESULTS.md, design direct_grid.ahead-bounds).
inline constexpr int64_t kAheadMaxBytes = int64_t{640} << 10;
inline constexpr int64_t kAheadMinWorkPerLine = 128;
// Cache lines a's runs cover (at most, whatever their alignment).
inline int64_t ahead_lines(const WeightAhead& a) {
  return a.count[0] * (a.bytes[0] / 64 + 1) + a.count[1] * (a.bytes[1] / 64 + 1);
}
// Sets a.per_tile so that its lines are asked for over `asks` register tiles.
inline void spread_ahead(WeightAhead& a, int64_t asks) {
  if (asks < 1) asks = 1;
  a.per_tile = (ahead_lines(a) + asks - 1) / asks;
}
// The weight kernel with x read in place (a.xt and a.ldx unused), asking for a.ahead's memory
// meanwhile.
void direct_weight_in_place_avx512(const GridWeightF32& a, const float* x, const InPlaceX& xl);
// Register tiles of one such call (over every tap): WeightAhead::ask's calls, for WeightAhead's
// spread. Output channel blocks of 64 (6 input channels a tile), then 32 and 16 (12 a tile).
inline int64_t weight_tiles_in_place(int64_t m16, int64_t C, int64_t T) {
  int64_t tiles = 0;
  for (int64_t o0 = 0; o0 < m16;) {
    const int64_t ov = o0 + 64 <= m16 ? 4 : o0 + 32 <= m16 ? 2 : 1, wc = ov == 4 ? 6 : 12;
    tiles += (C + wc - 1) / wc;
    o0 += 16 * ov;
  }
  return tiles * T;
}

// The part of `runs` tap box b reads: `rows` runs of L positions from position `start` of the
// call (rows or L zero: none).
struct RunWindow {
  int64_t start, rows, L;
};
inline RunWindow run_window(const WeightRuns& runs, const TapBox& b) {
  if (runs.o0 < b.lo[0] || runs.o0 >= b.hi[0]) return RunWindow{0, 0, 0};
  const int64_t r0 = b.lo[1] > runs.o1 ? b.lo[1] - runs.o1 : 0;
  const int64_t r1 = b.hi[1] - runs.o1 < runs.rows ? b.hi[1] - runs.o1 : runs.rows;
  const int64_t c0 = b.lo[2] > runs.o2 ? b.lo[2] - runs.o2 : 0;
  const int64_t c1 = b.hi[2] - runs.o2 < runs.L ? b.hi[2] - runs.o2 : runs.L;
  if (r1 <= r0 || c1 <= c0) return RunWindow{0, 0, 0};
  return RunWindow{r0 * runs.pitch + c0, r1 - r0, c1 - c0};
}

// dst[c * ld_dst + r] = src[r * ld_src + c] for c < cols and r < width (a multiple of 16), zero
// for r >= rows: rows of src become columns of dst. dst and ld_dst 64-byte aligned.
void direct_transpose(const float* src, int64_t ld_src, int64_t rows, int64_t cols, float* dst,
                      int64_t ld_dst, int64_t width);
void direct_transpose_avx512(const float* src, int64_t ld_src, int64_t rows, int64_t cols,
                             float* dst, int64_t ld_dst, int64_t width);
// direct_transpose_avx512 that also adds each source row into sums: sums[r] += sum_{c < cols}
// src[r * ld_src + c] for r < rows, in double (16 columns at a time in fp32, ~4 roundings deep):
// the weight gradient's gradBias, summed from dy as the transpose reads it.
void direct_transpose_sums_avx512(const float* src, int64_t ld_src, int64_t rows, int64_t cols,
                                  float* dst, int64_t ld_dst, int64_t width, double* sums);
// direct_transpose_sums_avx512 on a `kind` source (not an 8-bit kind): src and ld_src in
// elements of that kind, dst the values converted to fp32 and rounded as Source::value does (fp16
// widened, USE_FP16 rounded through fp16 in register, HF32), with no converted copy of src made.
// sums (null: none) of the values as stored, before the rounding (gradBias under any cubeMathType).
void direct_transpose_convert_avx512(SrcKind kind, const void* src, int64_t ld_src, int64_t rows,
                                     int64_t cols, float* dst, int64_t ld_dst, int64_t width,
                                     double* sums);

// bf16 (AVX512_BF16, direct_grid_bf16_avx512.cpp; where bf16_dot_kernels()): the same
// kernels on pairs, fp32 accumulation. Forward: x2 and the packed weights hold bf16 pairs of
// input channels (2 c2, 2 c2 + 1) as 32-bit units (C2 = ceil(C / 2) pairs; off and plane in
// units; row_len and pitch as direct_grid_forward's: GridForwardBf16). Weight: xt and dyt hold
// pairs of positions (2 p, 2 p + 1) as units, channels-last (ldx, ldy in units), over `runs` of
// pairs (L, pitch and o2 count pairs; box[t]'s dim 2 in pairs too: pair_box()).
void direct_grid_forward_bf16(const GridForwardBf16& a);
void direct_grid_weight_bf16(const GridWeightBf16& a);
// The argument-list form (for callers not yet on GridWeightBf16), without an ask-ahead.
inline void direct_grid_weight_bf16(int64_t m16, int64_t C, int64_t T, const int64_t* off,
                                    const TapBox* box, const uint32_t* xt, int64_t ldx,
                                    const uint32_t* dyt, int64_t ldy, const WeightRuns& runs,
                                    float* dwt) {
  direct_grid_weight_bf16({m16, C, T, off, box, xt, ldx, dyt, ldy, runs, dwt, nullptr});
}
// Register tiles of one direct_grid_weight_bf16 call (over every tap): for WeightAhead's spread.
inline int64_t weight_tiles_bf16(int64_t m16, int64_t C, int64_t T) {
  return (m16 + 31) / 32 * ((C + 11) / 12) * T;
}
// The weight kernel with x read in place: dwt[c][o] += sum_{p < L2} dyt[p][o] . x[c * ldc + p]
// for c < C, o < m16, each unit of x the pair of positions (2 p, 2 p + 1) of channel c's row
// (pointwise: no band, no transpose of x). dyt and dwt 64-byte aligned, ldy a multiple of 16.
void direct_rows_weight_bf16(int64_t m16, int64_t C, const uint32_t* x, int64_t ldc,
                             const uint32_t* dyt, int64_t ldy, int64_t L2, float* dwt);
// The bf16 weight gradient's band straight in its kernel's layout (no staging band, no
// transposes of it): band2_t[parity][ph][i * units + u][c] = the pair of band columns
// (2 u + parity, 2 u + 1 + parity) of band row i of phase ph, channel c (a column past Wp or
// outside the source: zero). Phase ph = p01 * n2 + p2 reads the source row src_row[p01] of each
// channel (-1: outside, all zero) at column s2 * (k + lo2) + a2[p2] for band column k in
// [w0[p2], w1[p2]) (s2 <= 2: at most two W phases; source rows S2 long). Only the (parity, phase)
// copies `use` names are written; channels nc .. round16(nc) are written zero.
struct PairBand {
  int64_t n01, n2, s2, lo2, S2;
  int64_t a2[2], w0[2], w1[2];
  bool use[2][64];
  int64_t units, half_plane, cb16;  // units = Wp / 2 a band row; half_plane = plane / 2
};
void direct_band_pairs_bf16(const uint16_t* x, int64_t S_in, int64_t nc, const PairBand& pb,
                            const int64_t* src_row, const int64_t* src_row2,
                            const int64_t* next_row, int64_t i, uint32_t* band2_t);
// One grid row of the weight gradient's dy pairs, channels-last: dy2_t[u * m16 + o] = the pair
// (dy[o * S_out + at + 2 u], dy[o * S_out + at + 2 u + 1]) for u < units, zero past n positions,
// for o >= Cog and where at < 0 (a grid row holding no outputs).
// at2 >= -1 (units == 8): the next grid row's too, its dy row at2, in the same pass. next != 0:
// a later row's offset from at, asked for from memory meanwhile. sums (not null): sums[o] += the
// elements of channel o read, o < Cog, in double (a weight gradient's gradBias; 32 positions at a
// time in fp32, ~5 roundings deep).
void direct_dy_pairs_bf16(const uint16_t* dy, int64_t S_out, int64_t Cog, int64_t m16, int64_t at,
                          int64_t at2, int64_t n, int64_t units, int64_t next, uint32_t* dy2_t,
                          double* sums = nullptr);
// out[i] = a[i] | b[i] << 16 for i < n: two bf16 rows as a row of pairs (b null: zeros).
void direct_interleave_bf16(const uint16_t* a, const uint16_t* b, int64_t n, uint32_t* out);
// Rows of a pair band: for r < rows, out[r * Wp + k] = the pair (a[at[r] + k - w0],
// b[at[r] + k - w0]) for w0 <= k < w1 (b null: zeros), zero elsewhere in the row (all of it where
// at[r] < 0).
void direct_pair_rows_bf16(const uint16_t* a, const uint16_t* b, const int64_t* at, int64_t rows,
                           int64_t Wp, int64_t w0, int64_t w1, uint32_t* out);
// even[i] = src[2 i], odd[i] = src[2 i + 1] for i < n, bf16 bits: the two phase planes of a
// stride-2 row (AVX-512, like direct_split2_avx512).
void direct_split2_bf16_avx512(const uint16_t* src, int64_t n, uint16_t* even, uint16_t* odd);
// Whether bf16 convolutions run the dot kernels above (the CPU module's bf16_dot policy: AMD's
// AVX512_BF16 by default, ACLNN_CPU_BF16_DOT=0|1 forces it); elsewhere bf16 is converted to fp32.
inline bool bf16_dot_kernels() {
  return cpu::policy(cpu::Policy::kBf16Dot);
}

// dst[i] = element i of a `kind` source as fp32 (converted, rounded) for i < n; bit-exact with
// Source::value.
void direct_convert_avx512(SrcKind kind, const void* src, int64_t n, float* dst);

// dst[i] = src[i] rounded to fp16 (bf16 == false) or bf16 bits, to nearest even, for i < n;
// bit-exact with half.h's float_to_half / float_to_bf16.
void direct_narrow_avx512(bool bf16, const float* src, int64_t n, uint16_t* dst);

// dst[2 i] = src[i] for i < n (the odd elements untouched): a row of a stride-2 phase placed in its
// output row (AVX-512 only).
void direct_scatter2_avx512(const float* src, int64_t n, float* dst);

// even[i] = src[2 i], odd[i] = src[2 i + 1] for i < n: the two phase planes of a stride-2 row
// (AVX-512 only; elsewhere the phases are copied one by one).
void direct_split2_avx512(const float* src, int64_t n, float* even, float* odd);

}  // namespace aclnn_cpu::conv
