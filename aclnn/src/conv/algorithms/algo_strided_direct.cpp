// strided_direct: fp32 strided convolutions computed on the input at its own resolution, with
// no phase planes (grid_direct splits a strided input into them and computes the grid's extra
// columns). A transposed convolution's gradients are exactly these: its data gradient is a
// strided forward of dy, its weight gradient a strided weight gradient with x and dy swapped.
// Both forms broadcast the input, so a stride is only a larger step between the values read.
//
//   forward          algo_strided_direct_forward.cpp: tiles of vectors of 8 output channels x
//                    positions (strided_direct_avx2.cpp, oneDNN's jit_avx2 orientation).
//   backward_weight  task (batch range, group, channel block), per sample, output plane and block
//                    of output rows: dy_t [rows][pitch][m16] (dy channels-last) and
//                    x_t [kd][row][col][cb16] (the rows read, zero-padded, channels-last); then
//                    dwt [K, nc, m16] += direct_grid.h's weight kernel on runs of about
//                    kCallPositions positions; at the end the dw block = dwt transposed back.
//                    fp32 x on AVX-512 is read where it lies instead (no x_t): each tap's runs
//                    are clipped to its positions inside x (tap_box), so no padding is read;
//                    other dtypes are converted a block's input rows at a time (build_x_slab).
//                    The kernel steps x by ldx per output column and pitch * ldx per output row:
//                    with ldx = s2 * cb16 and pitch = s1 * Wx / s2 (Wx a multiple of s2) that is s2
//                    input columns and s1 input rows; dy_t rows are `pitch` positions apart to
//                    match (only the first out[2] of each are written and read). In place with
//                    fp32 dy, dy_t is one transpose of the block's rows, out[2] apart, and a
//                    block is as many rows as keep dy_t within kBlockBytes (in_place_rows;
//                    ct2d_decoder: its whole 16 x 16 plane, one kernel call).
//
// Measured against grid_direct on an AVX2-only CPU (1 thread; see the commits): faster on
// ct2d_decoder's and ct3d's forward and weight gradient (runs of 64 positions keep a call's dy_t
// and x_t lines in L1; grid_direct's 128 do not); measured: bench/RESULTS.md, design
// strided_direct.avx2.
//
// Cost rules (both primitives): fp32, a stride above 1, above ~4M multiply-adds, at least 8 input
// and at most 64 output channels per group (grid_direct's AVX2 tile rules; the shapes measured).
// On AVX-512 only the weight gradient (its kernel is then the AVX-512 one; the forward's is AVX2
// and was not faster than grid_direct's there). On AVX2 the weight gradient also takes unit
// strides on small planes and few input channels (strided_direct_plan.h, avx2_weight_rules).
#include <cstring>

#include "conv/algorithms/algo_support.h"
#include "conv/engine/algorithms.h"
#include "conv/kernels/grid/direct_grid.h"
#include "conv/kernels/strided/strided_direct.h"
#include "conv/algorithms/strided_direct_plan.h"
#include "conv/kernels/grid/tap_grid.h"
#include "gemm/sgemm.h"

namespace aclnn_cpu::conv {
namespace {

using strided_direct::avx2_weight_rules;
using strided_direct::channel_rules;
using strided_direct::common;
using strided_direct::tap_offsets;

constexpr int64_t kCallPositions = 64;  // output positions per kernel call
// ... when x is read in place (AVX-512): no x_t lines to keep in L1 (measured: bench/RESULTS.md,
// design strided_direct.call-positions).
constexpr int64_t kCallPositionsInPlace = 256;
constexpr int64_t kBlockBytes = int64_t{256} << 10;  // dy_t + x_t of one row block
constexpr int64_t kMaxChannels = 96;                 // input channels per task

// The padded channels-last layout of one block of output rows.
struct Frame {
  int64_t m16 = 0, cb16 = 0;  // output channels, block channels (rounded up to 16)
  int64_t Wx = 0;             // x_t columns (input columns s2*o2 - pb2 + j)
  int64_t pitch = 0;          // dy_t / kernel row pitch, in output positions
  int64_t rows = 0;           // output rows per block
  int64_t Rx = 0;             // x_t rows per kd (input rows s1*o1 - pb1 + i)

  int64_t dy_elems() const { return round16(rows * pitch * m16); }
  int64_t x_elems(int64_t k0) const { return round16(k0 * Rx * Wx * cb16); }
};

Frame frame_of(const ConvGeometry& g, int64_t cblock, int64_t rows) {
  Frame f;
  f.m16 = round16(g.cout_g());
  f.cb16 = round16(cblock);
  const int64_t s1 = g.stride[1], s2 = g.stride[2];
  const int64_t width = s2 * (g.out[2] - 1) + g.dil[2] * (g.k[2] - 1) + 1;
  f.Wx = ceil_div(width, s2) * s2;
  f.pitch = s1 * f.Wx / s2;
  f.rows = rows;
  f.Rx = s1 * (rows - 1) + g.dil[1] * (g.k[1] - 1) + 1;
  return f;
}

// Output rows per block: as many as keep dy_t and x_t within kBlockBytes (at least 1).
int64_t block_rows(const ConvGeometry& g, int64_t cblock) {
  int64_t rows = g.out[1];
  while (rows > 1) {
    const Frame f = frame_of(g, cblock, rows);
    if ((f.dy_elems() + f.x_elems(g.k[0])) * 4 <= block_budget(kBlockBytes)) break;
    rows = ceil_div(rows, 2);
  }
  return rows;
}

// Output rows per block of fp32 read in place (AVX-512): as many as keep dy_t (the block's
// positions x m16) within kBlockBytes; no x_t.
int64_t in_place_rows(const ConvGeometry& g) {
  int64_t rows = g.out[1];
  while (rows > 1 && rows * g.out[2] * round16(g.cout_g()) * 4 > block_budget(kBlockBytes))
    rows = ceil_div(rows, 2);
  return rows;
}

// x_t's floats: AVX-512 reads x in place, or from its converted slab, never from x_t.
int64_t x_t_elems(const Problem& p, const ConvGeometry& g, const Frame& f) {
  return p.avx512() ? 0 : f.x_elems(g.k[0]);
}

// Converted x on AVX-512: what a block of output rows (plane od, rows from o1) reads, as fp32
// x_s [nc][k0][Rx][W]: planes s0*od - pb0 + kd*dil0, rows ih0 + i (ih0 = s1*o1 - pb1), every
// column, in x's own row layout, so the in-place kernel reads it like x itself (slab_layout).
// Rows and planes outside x are left unwritten: no tap reads them (tap_box). The k0 planes are a
// ring (plane_slot): the block of plane od + 1 with the same rows shares planes with this one
// (plane kd + shift of od is its plane kd), and those stay in their slots, converted once.
int64_t slab_elems(const ConvGeometry& g, const Frame& f) {
  return round16(f.cb16 * g.k[0] * f.Rx * g.in[2]);
}
// Converted dy on AVX-512: a block's rows [Cog][rows * out[2]] as fp32 (one run per channel).
int64_t dy_block_elems(const ConvGeometry& g, const Frame& f) {
  return round16(g.cout_g() * f.rows * g.out[2]);
}
InPlaceX slab_layout(const ConvGeometry& g, const Frame& f) {
  return InPlaceX{g.k[0] * f.Rx * g.in[2], g.stride[2], g.stride[1] * g.in[2]};
}
// Planes kd + shift of block plane od are planes kd of od + 1 (dil0 dividing s0, s0 < k0 * dil0;
// ct3d: s0 = 2, k0 = 3, a third of the planes); shift = k0: none shared.
int64_t plane_shift(const ConvGeometry& g) {
  const int64_t s0 = g.stride[0], d0 = g.dil[0];
  return s0 % d0 == 0 && s0 / d0 < g.k[0] ? s0 / d0 : g.k[0];
}
// The x_s slot of plane kd of block plane od: a shared plane keeps its slot from one block to the
// next ((kd + shift) + (od - 1) * shift = kd + od * shift).
int64_t plane_slot(const ConvGeometry& g, int64_t od, int64_t kd) {
  return (kd + od * plane_shift(g)) % g.k[0];
}
// Tap q's offset in x_s (blocks of plane od) from its run's first output's (i, j) element
// i * s1 * W + j * s2.
int64_t slab_tap_offset(const ConvGeometry& g, const Frame& f, int64_t od, int64_t q) {
  const int64_t kd = q / (g.k[1] * g.k[2]), kh = q / g.k[2] % g.k[1], kw = q % g.k[2];
  return (plane_slot(g, od, kd) * f.Rx + kh * g.dil[1]) * g.in[2] + kw * g.dil[2] - g.pad_before[2];
}
Fit plan(const Problem& p) {
  // On AVX-512 the weight kernel is direct_grid.h's AVX-512 one, and it wins there as well
  // (measured: bench/RESULTS.md, design strided_direct.avx512-weight).
  Fit f = common(p, /*avx512_measured=*/true);
  if (!f.applies) return f;
  const ConvGeometry& g = p.g;
  channel_rules(f, g);
  if (!p.avx512()) avx2_weight_rules(f, p);
  plan_weight_split(p, 4, even_cblock(p, kMaxChannels), f.b);
  f.b.rows = p.avx512() && !p.converts ? in_place_rows(g) : block_rows(g, f.b.cblock);
  const Frame fr = frame_of(g, f.b.cblock, f.b.rows);
  const int64_t T = g.k_size();
  // dy_t, x_t, dwt, then 16 converted rows of a non-fp32 source (staged for the transposes);
  // converting on AVX-512: x_s, dy_b and a block's x_s tap offsets (int64).
  f.b.slot_elems =
      fr.dy_elems() + x_t_elems(p, g, fr) + round16(T * fr.cb16 * fr.m16) +
      round16(16 * std::max(g.in[2], g.out[2])) +
      (p.converts && p.avx512() ? slab_elems(g, fr) + dy_block_elems(g, fr) + round16(2 * T) : 0);
  // x_t offsets (int64), tap boxes, in-place x offsets and slab offsets (int64), then (AVX2)
  // gradBias's per-range sums, taken from dy_t as it is built.
  f.b.sums_bias = !p.avx512();
  f.b.shared_elems = round16(2 * T) + round16(12 * T) + 2 * round16(2 * T);
  f.b.shared_elems += bias_sums_elems(g, f.b);
  return f;
}

// Asks for the cache lines of n elements of `src` (any kind): the next of the short runs the
// conversions below read one after another, so that its misses overlap the current one's work.
void prefetch_run(const Source& src, int64_t n) {
  prefetch_bytes(src.data, n * static_cast<int64_t>(src.elem_bytes()));
}

// Asks for the cache lines of `channels` source rows of n elements, `cstride` apart (fp32 only):
// the copies below read many rows at once, more streams than the hardware prefetcher follows.
void prefetch_rows(const Source& src, int64_t channels, int64_t cstride, int64_t n) {
  if (src.kind != SrcKind::kF32) return;
  for (int64_t c = 0; c < channels; ++c) prefetch_run(src.at(c * cstride), n);
}

// dst[c * ldc + k] = channel c of `src` (channel stride cstride) at element k, converted, for
// c < channels and k < n; channel c + 1's run asked for while channel c converts.
void convert_channels(const Source& src, int64_t cstride, int64_t channels, int64_t n, float* dst,
                      int64_t ldc) {
  for (int64_t c = 0; c < channels; ++c) {
    if (c + 1 < channels) prefetch_run(src.at((c + 1) * cstride), n);
    src.at(c * cstride).convert(n, 1, dst + c * ldc);
  }
}

// dst[k * ld_dst + c] = row c of src (cnt rows of n elements, row stride ld_src) at element k, for
// k < n, c < 16 (zero for c >= cnt). fp32 sources are read in place; others are converted as they
// are transposed where transpose_convert runs (AVX2: no staged copy, faster 16-bit weight
// gradients; measured: bench/RESULTS.md, design strided_direct.transpose-convert), else converted
// into `stage` first.
void rows_to_channels_last(const Source& src, int64_t ld_src, int64_t cnt, int64_t n, float* dst,
                           int64_t ld_dst, float* stage) {
  if (src.kind == SrcKind::kF32) {
    direct_transpose(static_cast<const float*>(src.data), ld_src, cnt, n, dst, ld_dst, 16);
    return;
  }
  if (transpose_convert(src.kind, src.data, ld_src, cnt, n, dst, ld_dst, 16)) return;
  for (int64_t c = 0; c < cnt; ++c) src.at(c * ld_src).convert(n, 1, stage + c * n);
  direct_transpose(stage, n, cnt, n, dst, ld_dst, 16);
}

// dy_t[r * pitch + j][o] = dy[o][od][o1 + r][j] for r < rows, j < out[2], o < Cog (zero to m16).
void build_dy_t(const ConvGeometry& g, const Frame& f, const Source& dy, int64_t od, int64_t o1,
                int64_t rows, float* stage, float* dy_t) {
  const int64_t S_out = g.out_size(), Cog = g.cout_g(), n = g.out[2];
  for (int64_t r = 0; r < rows; ++r) {
    const Source row = dy.at((od * g.out[1] + o1 + r) * n);
    for (int64_t o = 0; o < f.m16; o += 16)
      rows_to_channels_last(row.at(o * S_out), S_out, std::clamp<int64_t>(Cog - o, 0, 16), n,
                            dy_t + r * f.pitch * f.m16 + o, f.m16, stage);
  }
}

// x_t[(kd * Rx + i) * Wx + j][c] = x[c][s0*od - pb0 + kd*d0][i0 + i][j - pb2] for c < nc, zero
// outside the input.
void build_x_t(const ConvGeometry& g, const Frame& f, const Source& x, int64_t nc, int64_t od,
               int64_t i0, float* stage, float* x_t) {
  const int64_t S_in = g.in_size(), W = g.in[2], pb2 = g.pad_before[2];
  const int64_t lo = std::clamp<int64_t>(pb2, 0, f.Wx), hi = std::clamp<int64_t>(pb2 + W, lo, f.Wx);
  for (int64_t kd = 0; kd < g.k[0]; ++kd) {
    const int64_t id = g.stride[0] * od - g.pad_before[0] + kd * g.dil[0];
    for (int64_t i = 0; i < f.Rx; ++i) {
      const int64_t ih = i0 + i;
      float* dst = x_t + (kd * f.Rx + i) * f.Wx * f.cb16;
      const bool inside = id >= 0 && id < g.in[0] && ih >= 0 && ih < g.in[1] && hi > lo;
      if (!inside) {
        std::memset(dst, 0, static_cast<size_t>(f.Wx * f.cb16) * sizeof(float));
        continue;
      }
      std::memset(dst, 0, static_cast<size_t>(lo * f.cb16) * sizeof(float));
      std::memset(dst + hi * f.cb16, 0, static_cast<size_t>((f.Wx - hi) * f.cb16) * sizeof(float));
      const Source row = x.at((id * g.in[1] + ih) * W + lo - pb2);
      if (ih + 1 < g.in[1]) prefetch_rows(row.at(W), nc, S_in, hi - lo);
      for (int64_t c = 0; c < nc; c += 16)
        rows_to_channels_last(row.at(c * S_in), S_in, std::min<int64_t>(16, nc - c), hi - lo,
                              dst + lo * f.cb16 + c, f.cb16, stage);
    }
  }
}

// The planes of x a block of output rows (plane od, input rows from ih0) converts into x_s:
// fn(kd, run, n, at) for each plane kd inside x not already in its slot (`follows`: x_s holds the
// block of plane od - 1 with the same rows), with run = channel 0's n elements of the plane's
// rows inside x (one run of x) and at = their place in x_s.
template <typename Fn>
void slab_planes(const ConvGeometry& g, const Frame& f, const Source& x, int64_t od, int64_t ih0,
                 bool follows, Fn&& fn) {
  const int64_t H = g.in[1], W = g.in[2], shift = plane_shift(g);
  const int64_t lo = std::max<int64_t>(0, -ih0), hi = std::min(f.Rx, H - ih0);
  if (hi <= lo) return;
  for (int64_t kd = 0; kd < g.k[0]; ++kd) {
    const int64_t id = g.stride[0] * od - g.pad_before[0] + kd * g.dil[0];
    if (id < 0 || id >= g.in[0] || (follows && kd + shift < g.k[0])) continue;
    fn(kd, x.at((id * H + ih0 + lo) * W), (hi - lo) * W, (plane_slot(g, od, kd) * f.Rx + lo) * W);
  }
}

void build_x_slab(const ConvGeometry& g, const Frame& f, const Source& x, int64_t nc, int64_t od,
                  int64_t ih0, bool follows, float* x_s) {
  const int64_t ldc = slab_layout(g, f).ldc;
  slab_planes(g, f, x, od, ih0, follows, [&](int64_t, const Source& run, int64_t n, int64_t at) {
    convert_channels(run, g.in_size(), nc, n, x_s + at, ldc);
  });
}

// The runs build_x_slab converts for a block, as `a`'s two sets (its first two planes, nc runs a
// channel apart each), for the weight kernel to ask for while it computes the block before: the
// conversions then read cache, not memory, and take less than half the time (measured:
// bench/RESULTS.md, design strided_direct.slab-ahead). False: none, or more than kAheadMaxBytes.
bool slab_ahead(const ConvGeometry& g, const Frame& f, const Source& x, int64_t nc, int64_t od,
                int64_t ih0, bool follows, WeightAhead& a) {
  const int64_t eb = static_cast<int64_t>(x.elem_bytes());
  int s = 0;
  slab_planes(g, f, x, od, ih0, follows, [&](int64_t, const Source& run, int64_t n, int64_t) {
    if (s == 2) return;
    a.at[s] = static_cast<const char*>(run.data);
    a.count[s] = nc, a.stride[s] = g.in_size() * eb, a.bytes[s] = n * eb;
    ++s;
  });
  return s > 0 && ahead_lines(a) * 64 <= kAheadMaxBytes;
}

// The dy rows of a block (plane od, output rows from o1) of fp32 read in place, as `a`'s first
// set (Cog runs S_out apart), for the kernel calls of the block before to ask for: the block's
// transpose reads them first, Cog streams the hardware prefetcher does not see coming (asking
// for x's rows as well measured no better). False: more than kAheadMaxBytes, or fewer than
// kAheadMinWorkPerLine FMAs a line to hide them behind.
bool in_place_ahead(const ConvGeometry& g, const Frame& f, const float* dy, int64_t nc, int64_t od,
                    int64_t o1, WeightAhead& a) {
  const int64_t run = std::min(f.rows, g.out[1] - o1) * g.out[2];
  a.at[0] = reinterpret_cast<const char*>(dy + (od * g.out[1] + o1) * g.out[2]);
  a.count[0] = g.cout_g(), a.stride[0] = g.out_size() * 4, a.bytes[0] = run * 4;
  const int64_t lines = ahead_lines(a), fmas = run * (f.m16 / 16) * nc * g.k_size();
  return lines * 64 <= kAheadMaxBytes && fmas >= kAheadMinWorkPerLine * lines;
}

// Calls call(r, j, runs) for output rows [o1, o1 + rows) of plane od (the block) as runs of about
// `positions` positions, the first at block row r, column j; dy_t rows `pitch` positions apart.
template <typename Call>
void for_block_runs(const ConvGeometry& g, int64_t od, int64_t o1, int64_t rows, int64_t positions,
                    int64_t pitch, Call&& call) {
  const int64_t n = g.out[2];
  if (n > positions) {  // long rows: column chunks of one row
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < n; j += positions)
        call(r, j, WeightRuns{1, std::min(positions, n - j), pitch, od, o1 + r, j});
    return;
  }
  const int64_t per_call = std::max<int64_t>(1, positions / n);
  for (int64_t r = 0; r < rows; r += per_call)
    call(r, 0, WeightRuns{std::min(per_call, rows - r), n, pitch, od, o1 + r, 0});
}

// Kernel calls for_block_runs makes over output rows [o1, o1 + rows) of a plane.
int64_t block_calls(const ConvGeometry& g, int64_t o1, int64_t rows, int64_t positions,
                    int64_t pitch) {
  int64_t calls = 0;
  for_block_runs(g, 0, o1, rows, positions, pitch,
                 [&](int64_t, int64_t, const WeightRuns&) { ++calls; });
  return calls;
}

// On the AVX2 path, the next sample's fp32 dy of a task (its Cog planes, one run) asked for over
// the current sample's kernel calls (false: not asked for), so that its transposes find it in
// cache. Only where each dy element takes at most kDyAheadMaxWork multiply-adds: there the pass
// waits on dy's streams (32 channels of short rows). MNIST's first layer (1 -> 32, 3 x 3, 28 x 28,
// batch 128, in a training step: dy from memory) gains; its second (32 -> 64, 288 per element),
// asked for too, lost a little (measured: bench/RESULTS.md, design strided_direct.dy-ahead).
constexpr int64_t kDyAheadMaxWork = 64;
bool next_dy_ahead(const ConvGeometry& g, const Frame& f, int64_t nc, const float* next,
                   WeightAhead& a) {
  if (!next || nc * g.k_size() > kDyAheadMaxWork) return false;
  a.at[0] = reinterpret_cast<const char*>(next);
  a.count[0] = 1, a.bytes[0] = g.cout_g() * g.out_size() * 4;
  int64_t calls = 0;
  for (int64_t o1 = 0; o1 < g.out[1]; o1 += f.rows)
    calls += block_calls(g, o1, std::min(f.rows, g.out[1] - o1), kCallPositions, f.pitch);
  spread_ahead(a, calls * g.out[0]);
  return true;
}

// A weight task's scratch on the in-place path (AVX-512): dy_t [rows * out[2]][m16], dwt
// [K, nc, m16]; converting: x_s (slab_elems), dy_b [Cog][rows * out[2]] and the taps' x_s
// offsets of the current block.
struct InPlaceScratch {
  float *dy_t, *dwt, *x_s, *dy_b;
  int64_t* xoff;
};

// The in-place weight gradient of one block of output rows (plane od, rows [o1, o1 + r)) of one
// sample: dy_t is one transpose of the block's rows, contiguous in each channel and out[2] apart
// (the kernel steps x by its own layout): fp32 dy read in place, other dtypes converted first into
// dy_b, one run per channel (converting 28-element rows 16 channels at a time waited on memory;
// measured: bench/RESULTS.md, design strided_direct.dy-convert). x: read in place (fp32, xoff the
// taps' source offsets) or from x_s (`slab`: the block's planes converted, x_s's offsets per
// block). `ahead` (null: none): memory asked for over the block's kernel calls.
void in_place_block(const ConvGeometry& g, const Frame& f, const Source& dy, const Source& x,
                    int64_t nc, int64_t od, int64_t o1, bool slab, const int64_t* xoff,
                    const TapBox* box, const InPlaceScratch& ws, WeightAhead* ahead) {
  const int64_t r = std::min(f.rows, g.out[1] - o1), Cog = g.cout_g(), K = g.k_size();
  const int64_t at = (od * g.out[1] + o1) * g.out[2], run = r * g.out[2], S_out = g.out_size();
  const float* dy32 = f32_data(dy);
  if (!dy32) convert_channels(dy.at(at), S_out, Cog, run, ws.dy_b, run);
  direct_transpose(dy32 ? dy32 + at : ws.dy_b, dy32 ? S_out : run, Cog, run, ws.dy_t, f.m16, f.m16);
  if (slab) {
    build_x_slab(g, f, x, nc, od, g.stride[1] * o1 - g.pad_before[1], /*follows=*/od > 0, ws.x_s);
    for (int64_t q = 0; q < K; ++q) ws.xoff[q] = slab_tap_offset(g, f, od, q);
    xoff = ws.xoff;
  }
  const InPlaceX xl = slab ? slab_layout(g, f) : in_place_layout(g);
  if (ahead)  // its lines spread over the block's register tiles
    spread_ahead(*ahead, block_calls(g, o1, r, kCallPositionsInPlace, g.out[2]) *
                             weight_tiles_in_place(f.m16, nc, K));
  const float* xs = static_cast<const float*>(x.data);
  for_block_runs(g, od, o1, r, kCallPositionsInPlace, g.out[2],
                 [&](int64_t i, int64_t j, const WeightRuns& runs) {
                   const float* at = slab ? ws.x_s + i * g.stride[1] * g.in[2] + j * g.stride[2]
                                          : xs + run_source_offset(g, runs);
                   direct_weight_in_place_avx512({.m16 = f.m16,
                                                  .C = nc,
                                                  .T = K,
                                                  .off = xoff,
                                                  .box = box,
                                                  .dyt = ws.dy_t + (i * g.out[2] + j) * f.m16,
                                                  .ldy = f.m16,
                                                  .runs = runs,
                                                  .dwt = ws.dwt,
                                                  .ahead = ahead},
                                                 at, xl);
                 });
}

// One sample's blocks on AVX-512 (x read in place, or converted a slab at a time). Converting
// (slab): the planes inner, so each block follows the same rows of the plane before and keeps
// the x planes they share; else the row blocks inner. While a block computes, the next one (the
// next inner index, else outer, else the next sample's first: ndy, nx; null: none) is asked for.
void in_place_sample(const ConvGeometry& g, const Frame& f, const Source& dy, const Source& x,
                     const Source* ndy, const Source* nx, int64_t nc, bool slab,
                     const int64_t* xoff, const TapBox* box, const InPlaceScratch& ws) {
  const int64_t row_blocks = ceil_div(g.out[1], f.rows);
  const int64_t outer = slab ? row_blocks : g.out[0], inner = slab ? g.out[0] : row_blocks;
  for (int64_t i_out = 0; i_out < outer; ++i_out)
    for (int64_t i_in = 0; i_in < inner; ++i_in) {
      const int64_t od = slab ? i_in : i_out, o1 = (slab ? i_out : i_in) * f.rows;
      const bool last_in = i_in + 1 == inner, last = last_in && i_out + 1 == outer;
      const int64_t ni_out = last ? 0 : last_in ? i_out + 1 : i_out, ni_in = last_in ? 0 : i_in + 1;
      const int64_t nod = slab ? ni_in : ni_out, no1 = (slab ? ni_out : ni_in) * f.rows;
      WeightAhead ahead;
      bool ask = false;
      if (!last || ndy) {
        const Source& bx = last ? *nx : x;
        const float* bdy = f32_data(last ? *ndy : dy);
        ask = slab ? slab_ahead(g, f, bx, nc, nod, g.stride[1] * no1 - g.pad_before[1], nod > 0,
                                ahead)
                   : bdy && in_place_ahead(g, f, bdy, nc, nod, no1, ahead);
      }
      in_place_block(g, f, dy, x, nc, od, o1, slab, xoff, box, ws, ask ? &ahead : nullptr);
    }
}

void backward_weight(const Problem& p, const Blocking& b, const Operands<float>& o) {
  const ConvGeometry& g = p.g;
  const int64_t Cig = g.cin_g(), Cog = g.cout_g(), K = g.k_size(), rows = g.col_rows();
  const int64_t S_in = g.in_size(), S_out = g.out_size();
  const Frame f = frame_of(g, b.cblock, b.rows);
  int64_t* off = reinterpret_cast<int64_t*>(o.shared);  // tap q -> x_t offset
  tap_offsets(g, f.Rx, f.Wx, f.cb16, off);
  // Each tap's positions inside the input (its products on the padding are skipped).
  TapBox* box = reinterpret_cast<TapBox*>(o.shared + round16(2 * K));
  for (int64_t q = 0; q < K; ++q) box[q] = tap_box(g, q);
  // fp32 x on AVX-512 is read where it lies (as grid_direct's weight gradient): each tap's
  // offset from the source position of its run's first output; no x_t is built. Other dtypes
  // are converted a block's rows at a time (build_x_slab), then read so too.
  const bool in_place = p.avx512();
  const bool slab = in_place && o.xsrc.kind != SrcKind::kF32;
  int64_t* xoff = reinterpret_cast<int64_t*>(o.shared + round16(2 * K) + round16(12 * K));
  for (int64_t q = 0; q < K; ++q) xoff[q] = tap_source_offset(g, q);
  const int64_t ldx = g.stride[2] * f.cb16, xrow = g.stride[1] * f.Wx * f.cb16;
  for_weight_tasks(
      p, b, o, [&](int64_t n0, int64_t n1, int64_t grp, int64_t c0, int64_t nc, float* dst) {
        float* dy_t = slot_scratch(p, b, o);
        float* x_t = dy_t + f.dy_elems();       // (AVX2 only)
        float* dwt = x_t + x_t_elems(p, g, f);  // [K, nc, m16]
        float* stage = dwt + round16(K * f.cb16 * f.m16);
        float* x_s = stage + round16(16 * std::max(g.in[2], g.out[2]));  // converted x slab
        float* dy_b = x_s + slab_elems(g, f);  // converted dy block [Cog][r * out[2]]
        const InPlaceScratch ws{dy_t, dwt, x_s, dy_b,
                                reinterpret_cast<int64_t*>(dy_b + dy_block_elems(g, f))};
        std::memset(dwt, 0, static_cast<size_t>(K * nc * f.m16) * sizeof(float));
        // gradBias [Cog] of this range and group (first channel block only), or null (AVX-512:
        // the plan does not sum it, so the engine never asks).
        double* sums = task_bias_sums(p, b, o, n0, grp, c0);
        const auto x_of = [&](int64_t n) {
          return o.xsrc.at((n * g.C_in + grp * Cig + c0) * S_in);
        };
        const auto dy_of = [&](int64_t n) { return o.ysrc.at((n * g.C_out + grp * Cog) * S_out); };
        for (int64_t n = n0; n < n1; ++n) {
          const Source dy = dy_of(n), x = x_of(n);
          if (in_place) {
            const bool more = n + 1 < n1;
            const Source ndy = more ? dy_of(n + 1) : dy, nx = more ? x_of(n + 1) : x;
            in_place_sample(g, f, dy, x, more ? &ndy : nullptr, more ? &nx : nullptr, nc, slab,
                            xoff, box, ws);
            continue;
          }
          WeightAhead ahead;
          const bool ask = n + 1 < n1 && next_dy_ahead(g, f, nc, f32_data(dy_of(n + 1)), ahead);
          for (int64_t od = 0; od < g.out[0]; ++od)
            for (int64_t o1 = 0; o1 < g.out[1]; o1 += f.rows) {
              const int64_t r = std::min(f.rows, g.out[1] - o1);
              build_dy_t(g, f, dy, od, o1, r, stage, dy_t);
              if (sums) channels_last_sums_avx2(dy_t, r, g.out[2], f.pitch, f.m16, Cog, sums);
              build_x_t(g, f, x, nc, od, g.stride[1] * o1 - g.pad_before[1], stage, x_t);
              for_block_runs(g, od, o1, r, kCallPositions, f.pitch,
                             [&](int64_t i, int64_t j, const WeightRuns& runs) {
                               if (ask) ahead.ask();
                               direct_grid_weight({.m16 = f.m16,
                                                   .C = nc,
                                                   .T = K,
                                                   .off = off,
                                                   .box = box,
                                                   .xt = x_t + i * xrow + j * ldx,
                                                   .ldx = ldx,
                                                   .dyt = dy_t + (i * f.pitch + j) * f.m16,
                                                   .ldy = f.m16,
                                                   .runs = runs,
                                                   .dwt = dwt});
                             });
            }
        }
        if (p.avx512()) return weight_acc_to_dw_avx512(dwt, K, nc, f.m16, Cog, dst, rows);
        for (int64_t oc = 0; oc < Cog; ++oc)  // dw[o][c*K + q] = dwt[q][c][o]
          for (int64_t c = 0; c < nc; ++c)
            for (int64_t q = 0; q < K; ++q)
              dst[oc * rows + c * K + q] = dwt[(q * nc + c) * f.m16 + oc];
      });
  finish_bias_sums(p, b, o);
}

}  // namespace

const Algorithm kStridedDirectWeight{"strided_direct",
                                     Primitive::kBackwardWeight,
                                     plan,
                                     backward_weight,
                                     /*run_f64=*/nullptr,
                                     /*run_bf16=*/nullptr,
                                     /*reads_sources=*/true,
                                     /*needs=*/cpu::kAvx2Features};

}  // namespace aclnn_cpu::conv
