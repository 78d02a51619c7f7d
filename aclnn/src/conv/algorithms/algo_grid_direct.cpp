// grid_direct: fp32 convolutions computed directly on a tap grid (tap_grid.h: any stride through
// phase planes, dilation, padding, 1d/2d/3d) by the register-tiled kernels of direct_grid.h
// (AVX-512 or AVX2 + FMA; the bf16 dot form AVX512_BF16): no im2col, no GEMM packing.
//
//   forward          task (sample, group, block of grid rows): the band of x it reads (all phase
//                    planes, zero-padded) in its scratch; block [Cog, rows*Wp] = the direct
//                    forward over the band with the weights packed once per call; y = its valid
//                    columns.
//   backward_data    the same per phase b of dx (tap_grid.h): source dy, the taps that reach the
//                    phase, the weights as w^T; results placed at dx[s*u + b]. Unit stride: one
//                    phase, all taps (the flipped forward, no col2im scatter).
//   backward_weight  task (batch range, group, channel block), per sample and block of grid rows:
//                    dy placed on the grid and transposed to channels-last [cols, Cog16], the
//                    band's phase planes likewise [phase][positions, cb16]; dwt [T, cb, Cog16] +=
//                    the direct weight kernel, each tap over its positions inside x only
//                    (tap_box); at the end dw block = dwt transposed back. fp32 x on AVX-512 is
//                    not copied at all: the kernel broadcasts it from the source where it lies,
//                    and dy_t is the block's positions without grid columns (one transpose);
//                    other dtypes: x converted a sample at a time into the slot and read so,
//                    dy converted (and rounded, USE_FP16 / HF32) inside that transpose.
//                    gradBias [C_out] = sum of dy over n and space: where asked (Operands::bias),
//                    the first channel block's tasks add dy (as stored, before any operand
//                    rounding) into per-range double sums as the transpose to dy_t reads it
//                    (oneDNN sums diff_bias in its first input-channel block's pass likewise), so
//                    no separate pass streams dy from memory again.
//
// Cost rules: above ~4M multiply-adds (the scratch then pays off), at most 25% of the grid's
// columns dropped, at most 64 phase planes.
#include <cstdlib>
#include <cstring>

#include "conv/algorithms/algo_support.h"
#include "conv/engine/algorithms.h"
#include "conv/kernels/depthwise/depthwise.h"
#include "conv/kernels/grid/direct_grid.h"
#include "conv/algorithms/grid_direct_plan.h"
#include "conv/kernels/grid/tap_grid.h"
#include "gemm/sgemm.h"

namespace aclnn_cpu::conv {
namespace {

using namespace grid_direct;

// packed[ob][c][t][8] = W(ob*8 + i, c, q[t]) = w[(ob*8 + i) * so + c * si + q[t]] as fp32, zero
// for output channels past m.
void pack_weights(int64_t m, int64_t C, int64_t T, const int64_t* q, const Source& w, int64_t so,
                  int64_t si, float* packed) {
  for (int64_t o0 = 0; o0 < m; o0 += kDirectOcBlock)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t t = 0; t < T; ++t, packed += kDirectOcBlock)
        for (int64_t i = 0; i < kDirectOcBlock; ++i)
          packed[i] = o0 + i < m ? w.value((o0 + i) * so + c * si + q[t]) : 0.0f;
}

// One pass in fp32: band (converted from the source's dtype), direct forward kernel, scatter.
void run_pass(const Pass<Source>& ps, float* shared, const Problem& p, const Blocking& b,
              const Operands<float>& o) {
  const ConvGeometry& g = ps.g;
  const TapGrid& tg = ps.tg;
  const int64_t plane = band_plane(tg, ps.rows), T = tg.taps;
  const int64_t* off = nullptr;
  const GridTap* taps = load_taps(g, tg, plane, shared, &off);
  float* packed = shared + taps_elems(T);
  const int64_t pk_g = direct_packed_w_elems(ps.m, ps.C, T);
  // The packing reads the weight tap of every tap: q of tap t, contiguous for the packer.
  int64_t* q = const_cast<int64_t*>(off) + T;  // after the offsets (within taps_elems)
  for (int64_t t = 0; t < T; ++t) q[t] = taps[t].q;
  for_tasks(g.groups, [&](int64_t grp) {
    pack_weights(ps.m, ps.C, T, q, advance(ps.w, grp * ps.wg), ps.so, ps.si, packed + grp * pk_g);
  });
  const int64_t blocks = ceil_div(tg.rows(), ps.rows);
  for_tasks(g.N * g.groups * blocks, [&](int64_t t) {
    const int64_t blk = t % blocks, ng = t / blocks, grp = ng % g.groups, n = ng / g.groups;
    const int64_t r0 = blk * ps.rows, r1 = std::min(tg.rows(), r0 + ps.rows);
    const int64_t cols = (r1 - r0) * tg.Wp();
    float* block = slot_scratch(p, b, o);                     // [m, cols]
    float* band = block + round16(ps.m * ps.rows * tg.Wp());  // [C][phase][plane]
    build_band(tg, advance(ps.src, n * ps.src_sample + grp * ps.src_group), ps.src_cstride, ps.C,
               r0, r1 - r0, plane, band);
    // Narrow rows one vector each where that wastes less than the grid's extra columns.
    const int64_t row = tg.out[2], Wp = tg.Wp();
    const bool by_rows = row <= 16 && Wp > 16;
    direct_grid_forward({.m = ps.m,
                         .n = cols,
                         .C = ps.C,
                         .T = T,
                         .off = off,
                         .x = band,
                         .plane = tg.phases() * plane,
                         .packed = packed + grp * pk_g,
                         .out = block,
                         .ldo = cols,
                         .c_chunk = ps.cchunk,
                         .row_len = by_rows ? row : 0,
                         .pitch = Wp});
    scatter_block(tg, block, cols, ps.m, r0, r1, ps.dst + n * ps.dst_sample + grp * ps.dst_group,
                  ps.dst_cstride);
  });
}

Fit plan_forward(const Problem& p) {
  const ConvGeometry& g = p.g;
  const TapGrid tg = forward_grid(g);
  Fit f = applies(p, tg.waste());
  if (!f.applies) return f;
  // A short reduction (input channels x taps) leaves each register tile little work between zeroing
  // and storing it: MNIST's first layer (1 channel, 3x3) runs slower here than on implicit_gemm
  // (measured: bench/RESULTS.md, design grid_direct.short-reduction).
  prefer_not(f, g.col_rows() < kMinReduction, "reduction (C_in/g x taps) below 32");
  f.b.rows = rows_per_task(tg, g.cout_g(), pieces_wanted(p));
  f.b.slot_elems = pass_slot_elems(tg, g.cout_g(), g.cin_g(), f.b.rows);
  f.b.shared_elems = pass_shared_elems(tg, g.cout_g(), g.cin_g(), g.groups);
  f.b.cblock = channel_chunk(tg, g, g.cin_g());
  return f;
}

void forward(const Problem& p, const Blocking& b, const Operands<float>& o) {
  const TapGrid tg = forward_grid(p.g);
  run_pass(forward_pass(p, b, tg, o.xsrc, o.wsrc, o.out), o.shared, p, b, o);
}

// backward_data: the phases of dx, each a pass with its own tap grid; the shared scratch holds
// every phase's taps and packed weights one after another, the slot fits the largest pass.
Fit plan_data(const Problem& p) {
  const ConvGeometry& g = p.g;
  double waste = 0;
  for (int64_t i = 0; i < data_phase_count(g) && data_phase_count(g) <= kMaxPhases; ++i) {
    const TapGrid tg = data_grid(g, data_phase(g, i));
    if (!tg.empty()) waste = std::max(waste, tg.waste());
  }
  Fit f = applies(p, waste);
  if (!f.applies) return f;
  // Strided: the per-phase bands and strided stores cost more than col2im's scatter; fewer than 8
  // input channels leave the 8-channel tiles part empty (first7x7's 3). bf16 inputs: the dot
  // kernels beat col2im's converted fp32 GEMM (measured: bench/RESULTS.md, design
  // grid_direct.data-rules).
  prefer_not(f, data_phase_count(g) > 1 && !p.bf16, "strided: col2im is faster");
  prefer_not(f, g.cin_g() < 8, "fewer than 8 input channels per group");
  const int64_t want = ceil_div(pieces_wanted(p), data_phase_count(g));
  const TapGrid first = data_grid(g, {0, 0, 0});  // the largest phase
  f.b.rows = rows_per_task(first, g.cin_g(), want);
  for (int64_t i = 0; i < data_phase_count(g); ++i) {
    const TapGrid tg = data_grid(g, data_phase(g, i));
    if (tg.empty()) continue;
    f.b.slot_elems = std::max(f.b.slot_elems, pass_slot_elems(tg, g.cin_g(), g.cout_g(), f.b.rows));
    f.b.shared_elems += pass_shared_elems(tg, g.cin_g(), g.cout_g(), g.groups);
  }
  f.b.cblock = channel_chunk(first, g, g.cout_g());
  return f;
}

void backward_data(const Problem& p, const Blocking& b, const Operands<float>& o) {
  for_data_passes(p, b, o.ysrc, o.wsrc, o.out, o.shared,
                  [&](const Pass<Source>& ps, float* shared) { run_pass(ps, shared, p, b, o); });
}

// The AVX-512 weight kernel reads fp32 x where it lies; other dtypes (fp16, USE_FP16, ...) are
// converted a sample at a time, x [cblock, S_in], into the slot and then read the same way, dy
// converted inside its transpose (8-bit dy staged [Cog, block positions] first), which beats the
// converting band (measured: bench/RESULTS.md, design grid_direct.convert-in-place). Taken while
// the slots' copies stay within the element count of the largest tensor, x or dy (1 byte an
// element: float8), so the workspace bound holds; larger samples keep the converting band. Bounded
// by x alone, c3d_video at 2 threads (dy twice x) kept the band, and its 16-bit weight gradient ran
// slower than its fp32 one (same entry).
bool converts_x_in_place(const Problem& p, int64_t cblock) {
  const ConvGeometry& g = p.g;
  const int64_t largest = g.N * std::max(g.C_in * g.in_size(), g.C_out * g.out_size());
  return p.converts && p.avx512() && 4 * p.slots * round16(cblock * g.in_size()) <= largest;
}
// Its slot part: the stage of a block's dy [Cog, positions] (used by 8-bit dy only; the plan does
// not see dy's dtype), then a sample's x [cblock, S_in].
int64_t converted_stage_elems(const ConvGeometry& g, const TapGrid& tg, const Blocking& b) {
  return round16(g.cout_g() * b.rows * tg.out[2]);
}
int64_t converted_elems(const ConvGeometry& g, const TapGrid& tg, const Blocking& b) {
  return converted_stage_elems(g, tg, b) + round16(b.cblock * g.in_size());
}

// The bf16 weight gradient's slot holds, besides the block's dy, the band of every stride phase
// twice (both parities of pairs): sized by output rows, a strided 3d grid's band is 8 blocks of
// input (ct3d: 4.6 MB a slot, the workspace 3.4x its largest tensor at 2 threads). Fewer rows keep
// the slots within the bytes of the largest bf16 tensor (ct3d at 2 threads: 61 rows, not 141; 30
// rows, when the slot also held a staging band, cost no measurable time; measured:
// bench/RESULTS.md, design grid_direct.bf16-weight-rows).
int64_t bf16_weight_rows(const Problem& p, const Blocking& b) {
  const ConvGeometry& g = p.g;
  const TapGrid tg = weight_grid_bf16(g);
  const int64_t largest = 2 * std::max({g.N * g.C_in * g.in_size(), g.N * g.C_out * g.out_size(),
                                        g.C_out * g.col_rows()});
  int64_t rows = b.rows;
  while (rows > 1 && 4 * p.slots * weight_scratch(g, tg, b.cblock, rows, true).total() > largest)
    rows = rows * 7 / 8;
  return rows;
}

// Whether the fp32 weight gradient (x read in place) asks for the next sample's x block of nc
// channels and dy while it computes a sample (ahead_of_next), within direct_grid.h's bounds.
bool asks_next_sample(const ConvGeometry& g, const TapGrid& tg, const Blocking& b, int64_t nc) {
  const int64_t bytes = (g.cout_g() * g.out_size() + nc * g.in_size()) * 4;
  const int64_t fmas = g.out_size() * round16(g.cout_g()) / 16 * nc * tg.taps;
  return b.rows >= tg.rows() && bytes <= kAheadMaxBytes &&
         fmas >= kAheadMinWorkPerLine * (bytes / 64);
}

Fit plan_weight(const Problem& p) {
  const ConvGeometry& g = p.g;
  const TapGrid tg = forward_grid(g);
  Fit f = applies(p, tg.waste());
  if (!f.applies) return f;
  // AVX2: fewer than 8 input channels make narrow tiles, each dy load feeding few FMAs; with a W
  // stride, where implicit_gemm does not apply, they still beat im2col_gemm's column copies.
  // AVX-512 reads x in place with 64-channel tiles and skips the padding: ahead of the GEMM
  // lowerings everywhere, fp32 and bf16 (measured: bench/RESULTS.md, design
  // grid_direct.few-channels).
  prefer_not(f, g.cin_g() < 8 && !p.avx512() && g.stride[2] == 1,
             "AVX2 and fewer than 8 input channels per group");
  // Depthwise: one channel a group makes 1-channel tiles per group; the plane kernels win (and
  // bf16, which prefers algorithms reading it natively, must not take this over them: the depthwise
  // bf16 weight gradient runs several times slower here; measured: bench/RESULTS.md, design
  // grid_direct.depthwise).
  prefer_not(f, depthwise_preferred(g), "depthwise: depthwise_direct's plane kernels");
  // AVX2's tiles are 32 output channels x 3 input channels: above 64 output channels the GEMM
  // lowerings measured faster; at 64 grid_direct is ahead or level (measured: bench/RESULTS.md,
  // design grid_direct.avx2-outputs).
  prefer_not(f, !p.avx512() && g.cout_g() > 64,
             "AVX2 and more than 64 output channels per group: the GEMM lowering is faster");
  // Whole groups' channels per task where they fit a few tiles (the kernel's tiles are 12 wide,
  // narrower ones waste loads); threads then split the batch.
  plan_weight_split(p, 4, even_cblock(p, kWeightChannels), f.b);
  f.b.rows = rows_per_task(tg, round16(g.cout_g()), 1);
  if (p.bf16) f.b.rows = bf16_weight_rows(p, f.b);
  f.b.slot_elems = std::max(
      weight_scratch(g, tg, f.b.cblock, f.b.rows, false).total() +
          (converts_x_in_place(p, f.b.cblock) ? converted_elems(g, tg, f.b) : 0),
      p.bf16 ? weight_scratch(g, weight_grid_bf16(g), f.b.cblock, f.b.rows, true).total() : 0);
  // gradBias is summed from dy as the kernels' transposes read it: fp32 x in place on AVX-512 (or
  // converted a sample at a time; dy then converted and rounded inside the transpose, summed from
  // its stored values before that rounding), and the bf16 run (its dy pairs); AVX2's band path
  // leaves it to the engine's channel_sum.
  const bool in_place = p.avx512() && (!p.converts || converts_x_in_place(p, f.b.cblock));
  f.b.sums_bias = p.bf16 || in_place;
  f.b.sums_unrounded = in_place;
  f.b.shared_elems = weight_shared_elems(tg.taps) + bias_sums_elems(g, f.b);
  if (p.avx512() && !p.converts && !p.bf16 && g.N > 1 && asks_next_sample(g, tg, f.b, f.b.cblock))
    f.reason += ", next sample asked for";
  return f;
}

// dy_t[(r - r0) * Wp + col][o] = dy[o] at the output position of grid column (r, col), zero in
// the grid's extra columns and past Cog.
void dy_channels_last(const TapGrid& tg, const Source& dy, int64_t S_out, int64_t Cog, int64_t r0,
                      int64_t r1, int64_t m16, float* stage, float* dy_t) {
  const int64_t Wp = tg.Wp(), n = tg.out[2];
  for (int64_t r = r0; r < r1; ++r) {
    float* dst = dy_t + (r - r0) * Wp * m16;
    const int64_t o0 = r / tg.Hp(), o1 = r % tg.Hp();
    const int64_t valid = o1 < tg.out[1] ? n : 0;  // rows between 3d planes are all padding
    const Source row = dy.at((o0 * tg.out[1] + o1) * n);
    if (valid > 0 && dy.kind == SrcKind::kF32) {
      const float* src = static_cast<const float*>(row.data);
      // The transpose reads Cog rows S_out apart, which the hardware prefetcher misses: fetch
      // each channel's row 4 grid rows ahead (within the sample's dy).
      const int64_t ahead = 4 * n;
      if ((o0 * tg.out[1] + o1) * n + ahead + n <= S_out)
        for (int64_t o = 0; o < Cog; ++o) {
          __builtin_prefetch(src + o * S_out + ahead);
          __builtin_prefetch(src + o * S_out + ahead + n - 1);
        }
      direct_transpose(src, S_out, Cog, n, dst, m16, m16);
    } else if (valid > 0 && !transpose_convert(dy.kind, row.data, S_out, Cog, n, dst, m16, m16)) {
      // Other dtypes are converted (and rounded) inside the transpose above; the 8-bit ones
      // (and CPUs without its vector forms): 16 channels converted into `stage`, then transposed.
      for (int64_t o = 0; o < m16; o += 16) {
        const int64_t cnt = std::clamp<int64_t>(Cog - o, 0, 16);
        for (int64_t k = 0; k < cnt; ++k) row.at((o + k) * S_out).convert(n, 1, stage + k * n);
        direct_transpose(stage, n, cnt, n, dst + o, m16, 16);
      }
    }
    std::memset(dst + valid * m16, 0, static_cast<size_t>((Wp - valid) * m16) * sizeof(float));
  }
}

// band_t[phase][i * Wp + col][c] for the band rows of grid rows [r0, r1): channels-last copies of
// the band's phase planes, built 16 channels of one row at a time through `row`.
void band_channels_last(const TapGrid& tg, const Source& x, int64_t S_in, int64_t nc, int64_t r0,
                        int64_t r1, int64_t plane, int64_t cb16, float* row, float* band_t) {
  const int64_t Wp = tg.Wp(), P = tg.phases();
  for (int64_t i = 0; i < tg.band_rows(r1 - r0); ++i)
    for (int64_t c = 0; c < nc; c += 16) {
      const int64_t cnt = std::min<int64_t>(16, nc - c);
      build_band_row(tg, x.at(c * S_in), S_in, cnt, r0 + i, row, P * Wp, Wp);
      for (int64_t ph = 0; ph < P; ++ph)
        direct_transpose(row + ph * Wp, P * Wp, cnt, Wp, band_t + (ph * plane + i * Wp) * cb16 + c,
                         cb16, 16);
    }
}

// Calls f(j, runs) for the output positions of grid rows [r0, r1) as runs of `rows` x L
// positions starting at block column j (a row's L output columns, rows `pitch` apart in dy: Wp
// on the grid, out[2] where dy is read compact): about `cols` positions per call, the grid's
// extra columns and the padding rows between 3d output planes skipped.
template <typename F>
void weight_runs(const TapGrid& tg, int64_t r0, int64_t r1, int64_t cols, int64_t pitch, F&& f) {
  const int64_t n = tg.out[2], Wp = tg.Wp();
  const int64_t per_call = std::max<int64_t>(1, cols / std::max<int64_t>(n, 1));
  for (int64_t r = r0; r < r1;) {
    if (r % tg.Hp() >= tg.out[1]) {
      ++r;
      continue;
    }
    const int64_t plane_end = r - r % tg.Hp() + tg.out[1];
    const int64_t count = std::min({per_call, r1 - r, plane_end - r});
    const int64_t o0 = r / tg.Hp(), o1 = r % tg.Hp();
    if (n <= cols) {
      f((r - r0) * Wp, WeightRuns{count, n, pitch, o0, o1, 0});
    } else {  // long rows (1-d): column chunks of one row
      for (int64_t c = 0; c < n; c += cols)
        f((r - r0) * Wp + c, WeightRuns{1, std::min(cols, n - c), pitch, o0, o1, c});
    }
    r += count;
  }
}

// The output rows of grid rows before r, counting only rows that hold outputs (not the padding
// rows between 3d planes): output position (o0, o1, 0) is dy element compact_row * out[2].
int64_t compact_row(const TapGrid& tg, int64_t r) {
  return r / tg.Hp() * tg.out[1] + std::min(r % tg.Hp(), tg.out[1]);
}

// The weight gradient of grid rows [r0, r1) of one sample with fp32 x and dy where they lie
// (AVX-512): dy's positions of those rows are contiguous, so they become channels-last with one
// transpose, dy_t [positions, m16], with no grid columns between rows; the kernel then walks dy_t
// with pitch out[2] and x with its own layout.
// With `sums` (the first input-channel block's tasks): gradBias[o] (sums[o], o < Cog) += the
// block's dy, added as the transpose reads it.
struct InPlaceBlock {
  int64_t m16;          // Cog rounded up to 16: dy_t's and dwt's row length
  const float* x;       // the sample's x block [nc, S_in], where it lies
  int64_t nc;           // input channels of the block
  const int64_t* xoff;  // [T] each tap's offset from its run's source position
  const TapBox* box;    // [T] each tap's positions inside the input
  float* stage;         // 8-bit dy: [Cog, positions]
  float* dy_t;          // [positions, m16]
  float* dwt;           // [T, nc, m16] += the block's products
  WeightAhead* ahead;   // memory asked for over the kernel calls, or null
  double* sums;         // gradBias sums [Cog], or null
};
void in_place_block(const ConvGeometry& g, const TapGrid& tg, int64_t r0, int64_t r1,
                    const Source& dy, const InPlaceBlock& blk) {
  const int64_t m16 = blk.m16, nc = blk.nc;
  const float* x = blk.x;
  const int64_t* xoff = blk.xoff;
  const TapBox* box = blk.box;
  float *stage = blk.stage, *dy_t = blk.dy_t, *dwt = blk.dwt;
  WeightAhead* ahead = blk.ahead;
  double* sums = blk.sums;
  const int64_t n = tg.out[2], q0 = compact_row(tg, r0), Cog = g.cout_g();
  const int64_t positions = (compact_row(tg, r1) - q0) * n;
  if (positions <= 0) return;
  if (dy.kind != SrcKind::kE4M3FN && dy.kind != SrcKind::kHiF8) {
    // fp32, fp16, bf16 and rounded fp32 converted inside the transpose (no stage), gradBias
    // summed there from dy as stored: USE_FP16 and HF32 runs sum the unrounded fp32 dy.
    direct_transpose_convert_avx512(dy.kind, dy.at(q0 * n).data, g.out_size(), Cog, positions, dy_t,
                                    m16, m16, sums);
  } else {  // 8-bit: the block's positions converted, stage [Cog, positions], then transposed
    for (int64_t o = 0; o < Cog; ++o)
      dy.at(o * g.out_size() + q0 * n).convert(positions, 1, stage + o * positions);
    if (sums) {
      direct_transpose_sums_avx512(stage, positions, Cog, positions, dy_t, m16, m16, sums);
    } else {
      direct_transpose(stage, positions, Cog, positions, dy_t, m16, m16);
    }
  }
  if (ahead) {  // its lines spread over the block's register tiles
    int64_t calls = 0;
    weight_runs(tg, r0, r1, kWeightColsInPlace, n, [&](int64_t, const WeightRuns&) { ++calls; });
    spread_ahead(*ahead, calls * weight_tiles_in_place(m16, nc, tg.taps));
  }
  weight_runs(tg, r0, r1, kWeightColsInPlace, n, [&](int64_t, const WeightRuns& runs) {
    const int64_t j0 = (runs.o0 * tg.out[1] + runs.o1 - q0) * n + runs.o2;
    direct_weight_in_place_avx512({.m16 = m16,
                                   .C = nc,
                                   .T = tg.taps,
                                   .off = xoff,
                                   .box = box,
                                   .dyt = dy_t + j0 * m16,
                                   .ldy = m16,
                                   .runs = runs,
                                   .dwt = dwt,
                                   .ahead = ahead},
                                  x + run_source_offset(g, runs), in_place_layout(g));
  });
}

// The next sample's x block and dy for the kernel calls to ask for while they run, where one block
// is the whole sample and both fit kAheadMaxBytes (else `a` stays empty). The transpose of dy reads
// Cog rows S_out apart and the kernel x's nc rows: streams the hardware prefetcher does not see
// coming at the start of a sample. Of the benchmark's fp32 cases stride2 and mnist2 take it, and
// gain (dy alone gave about half of that; measured: bench/RESULTS.md, design
// grid_direct.ahead-next).
bool ahead_of_next(const ConvGeometry& g, const TapGrid& tg, const Blocking& b,
                   const Operands<float>& o, int64_t n, int64_t grp, int64_t c0, int64_t nc,
                   WeightAhead& a) {
  if (!asks_next_sample(g, tg, b, nc)) return false;
  const int64_t dy_bytes = g.cout_g() * g.out_size() * 4, x_bytes = nc * g.in_size() * 4;
  const float* dy = f32_data(o.ysrc.at(((n + 1) * g.C_out + grp * g.cout_g()) * g.out_size()));
  const float* x = f32_data(o.xsrc.at(((n + 1) * g.C_in + grp * g.cin_g() + c0) * g.in_size()));
  if (!dy || !x) return false;
  a.at[0] = reinterpret_cast<const char*>(dy), a.count[0] = 1, a.bytes[0] = dy_bytes;
  a.at[1] = reinterpret_cast<const char*>(x), a.count[1] = 1, a.bytes[1] = x_bytes;
  return true;
}

void backward_weight(const Problem& p, const Blocking& b, const Operands<float>& o) {
  const ConvGeometry& g = p.g;
  const TapGrid tg = forward_grid(g);
  const int64_t Cig = g.cin_g(), Cog = g.cout_g(), rows = g.col_rows(), T = tg.taps;
  const int64_t S_in = g.in_size(), S_out = g.out_size(), m16 = round16(Cog);
  const int64_t plane = band_plane(tg, b.rows), cb16 = round16(b.cblock);
  // Tap offsets into the channels-last band [phase][position][cb16], in elements.
  const int64_t* off = nullptr;
  const GridTap* taps = load_taps(g, tg, plane, o.shared, &off);
  int64_t* eoff = const_cast<int64_t*>(off);
  for (int64_t t = 0; t < T; ++t) eoff[t] = (taps[t].phase * plane + taps[t].shift) * cb16;
  // Each tap's positions inside the input (its products on the padding are skipped).
  TapBox* box = reinterpret_cast<TapBox*>(o.shared + taps_elems(T));
  for (int64_t t = 0; t < T; ++t) box[t] = tap_box(g, taps[t].q);
  // fp32 x on AVX-512 is read where it lies: each tap's offset from the source position of its
  // run's first output (inside the box every read is inside x, so no padded band is built).
  const bool converted = converts_x_in_place(p, b.cblock);
  const bool in_place =
      converted || (p.avx512() && o.xsrc.kind == SrcKind::kF32 && o.ysrc.kind == SrcKind::kF32);
  int64_t* xoff = reinterpret_cast<int64_t*>(o.shared + taps_elems(T) + boxes_elems(T));
  for (int64_t t = 0; t < T; ++t) xoff[t] = tap_source_offset(g, taps[t].q);
  for_weight_tasks(
      p, b, o, [&](int64_t n0, int64_t n1, int64_t grp, int64_t c0, int64_t nc, float* dst) {
        const WeightScratch ws = weight_scratch(g, tg, b.cblock, b.rows, false);
        float* dy_t = slot_scratch(p, b, o);                   // [cols, m16]
        float* row = dy_t + ws.dy_t;                           // [16][phase][Wp]
        float* band_t = row + ws.band;                         // [phase][plane][cb16]
        float* dwt = band_t + ws.band_t;                       // [T, nc, m16]
        float* stage = dwt + ws.dwt;                           // 8-bit dy: [Cog, positions]
        float* x32 = stage + converted_stage_elems(g, tg, b);  // converted: x [nc, S_in]
        std::memset(dwt, 0, static_cast<size_t>(T * nc * m16) * sizeof(float));
        // gradBias [Cog] of this range and group (first channel block only), or null.
        double* sums = task_bias_sums(p, b, o, n0, grp, c0);  // plan: only when in_place
        for (int64_t n = n0; n < n1; ++n) {
          const Source x = o.xsrc.at((n * g.C_in + grp * Cig + c0) * S_in);
          const Source dy = o.ysrc.at((n * g.C_out + grp * Cog) * S_out);
          const float* xs = f32_data(x);
          if (in_place && !xs) x.convert(nc * S_in, 1, x32), xs = x32;
          for (int64_t r0 = 0; r0 < tg.rows(); r0 += b.rows) {
            const int64_t r1 = std::min(tg.rows(), r0 + b.rows);
            if (in_place) {
              WeightAhead ahead;
              const bool ask = n + 1 < n1 && ahead_of_next(g, tg, b, o, n, grp, c0, nc, ahead);
              in_place_block(g, tg, r0, r1, dy,
                             {.m16 = m16,
                              .x = xs,
                              .nc = nc,
                              .xoff = xoff,
                              .box = box,
                              .stage = stage,
                              .dy_t = dy_t,
                              .dwt = dwt,
                              .ahead = ask ? &ahead : nullptr,
                              .sums = sums});
              continue;
            }
            dy_channels_last(tg, dy, S_out, Cog, r0, r1, m16, row, dy_t);
            band_channels_last(tg, x, S_in, nc, r0, r1, plane, cb16, row, band_t);
            weight_runs(tg, r0, r1, kWeightCols, tg.Wp(), [&](int64_t j0, const WeightRuns& runs) {
              direct_grid_weight({.m16 = m16,
                                  .C = nc,
                                  .T = T,
                                  .off = off,
                                  .box = box,
                                  .xt = band_t + j0 * cb16,
                                  .ldx = cb16,
                                  .dyt = dy_t + j0 * m16,
                                  .ldy = m16,
                                  .runs = runs,
                                  .dwt = dwt});
            });
          }
        }
        for (int64_t oc = 0; oc < Cog; ++oc)  // dw[o][c*K + q_t] = dwt[t][c][o]
          for (int64_t c = 0; c < nc; ++c)
            for (int64_t t = 0; t < T; ++t)
              dst[oc * rows + c * g.k_size() + taps[t].q] = dwt[(t * nc + c) * m16 + oc];
      });
  finish_bias_sums(p, b, o);
}

}  // namespace

// run_f32 reads the inputs as stored (fp32, fp16 or bf16, rounded per cubeMathType) and
// converts them as it builds its bands; run_bf16 is the AVX512_BF16 dot-product form.
const Algorithm kGridDirectForward{"grid_direct",
                                   Primitive::kForward,
                                   plan_forward,
                                   forward,
                                   nullptr,
                                   grid_direct::forward_bf16,
                                   /*reads_sources=*/true,
                                   /*needs=*/cpu::kAvx2Features,
                                   /*writes_bf16=*/true};
const Algorithm kGridDirectData{"grid_direct",
                                Primitive::kBackwardData,
                                plan_data,
                                backward_data,
                                nullptr,
                                grid_direct::backward_data_bf16,
                                /*reads_sources=*/true,
                                /*needs=*/cpu::kAvx2Features,
                                /*writes_bf16=*/true};
const Algorithm kGridDirectWeight{"grid_direct",
                                  Primitive::kBackwardWeight,
                                  plan_weight,
                                  backward_weight,
                                  nullptr,
                                  grid_direct::backward_weight_bf16,
                                  /*reads_sources=*/true,
                                  /*needs=*/cpu::kAvx2Features};

}  // namespace aclnn_cpu::conv
