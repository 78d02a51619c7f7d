// cl_direct: fp32 convolutions on the channel-lane row kernels of cl_direct.h (AVX-512; AVX2 for
// unit stride and dilation along rows): the forward (stride up to 2 along rows, any along the outer
// dims), and the data gradient (any stride) as a sum of shifted rows of dy per phase of dx.
//
// A pass computes out[o][u] = sum_{c, taps} W(o, c, tap) * src[c][u + e_tap] over output
// positions u (per dim) and taps with source offsets e (per dim):
//   forward          src x, out y, every tap, e = k*dil - pb, source index s*u + e (along rows
//                    s = 2 splits the taps by residue: cl_direct.h);
//   backward_data    per phase b of dx (dx index s*u + b): src dy, the taps with
//                    (b + pb - k*dil) divisible by s, e = (b + pb - k*dil) / s, and the result
//                    placed at dx[s*u + b] (tap_grid.h's decomposition; one phase at unit stride).
// Along rows the taps of a pass are offsets 1 apart (or 2: dilation 2 at unit stride, computed as
// two rows of every other output; 2 apart in two walks: stride 2): the kernel holds a row of
// outputs and walks the source columns.
//
//   task (pass, sample, group, block of output rows): for each output row and block of 16 output
//   channels, the row's tiles (<= 16 positions each) over the tap rows whose source row exists,
//   reading the source [C, S] as stored (other dtypes: the source rows of the task converted
//   into the slot; 3d with one pass: streamed through a ring of planes, Stream) and storing into
//   the output directly. Weights packed once per call and pass:
//   [group][16-channel block][tap row][c][tap along the row][16].
//
// Against grid_direct's padded grid nothing is computed on padding (taps clipped per row, edge
// columns skipped), no lane is spent past a row, and there is no band to build nor block to copy
// out: 14x14 outputs with a 5x5 kernel, pad 2, take 16% fewer multiply-adds, and the grid
// kernel's rows mode computes 16 lanes per 14-wide row.
#include <algorithm>
#include <array>
#include <cstdint>

#include "conv/algorithms/algo_support.h"
#include "conv/engine/algorithms.h"
#include "conv/kernels/cl/cl_direct.h"
#include "conv/algorithms/cl_direct_pass.h"
#include "conv/kernels/grid/tap_grid.h"

namespace aclnn_cpu::conv {
namespace cl_direct {
namespace {

// The tap rows (kd, kh) of the pass whose source row exists for output row (ud, uh): their
// offsets in a source channel (column 0 of the source row) and in a channel block's packed
// weights. Returns how many.
int64_t list_tap_rows(const ClPass& ps, int64_t ud, int64_t uh, const RowMap& m, int64_t* soff,
                      int64_t* woff) {
  const Axis &D = ps.ax[0], &H = ps.ax[1];
  const int64_t per_row = ps.C * ps.ax[2].taps() * 16;
  int64_t n = 0, rank = 0;
  for (int64_t kd = 0; kd < D.K; ++kd) {
    if (!D.member(kd)) continue;
    const int64_t id = D.s_in() * ud + D.e(kd);
    for (int64_t kh = 0; kh < H.K; ++kh) {
      if (!H.member(kh)) continue;
      const int64_t ih = H.s_in() * uh + H.e(kh), r = rank++;
      if (id < 0 || id >= D.src || ih < 0 || ih >= H.src) continue;
      soff[n] = m.at(id, ih, H.src, ps.ax[2].src);
      woff[n++] = r * per_row;
    }
  }
  return n;
}

}  // namespace

void run_rows(const ClPass& ps, const PassRows& a) {
  const float *src = a.src, *packed = a.packed;
  const RowMap& m = a.map;
  const int64_t ldc = a.ldc, r0 = a.r0, r1 = a.r1;
  float* out = a.out;
  int64_t *soff = a.soff, *woff = a.woff;
  RingAhead* ahead = a.ahead;
  const Axis &D = ps.ax[0], &H = ps.ax[1], &W = ps.ax[2];
  const int64_t S_dst = ps.dst_size(), B = blocks16(ps.m), nW = W.taps();
  const int64_t e0 = nW > 0 ? W.e(W.row_tap(0)) : 0, d = W.split(), si = W.s_in();
  ClRow r{src, soff, woff, 0, ps.C, ldc, nullptr, nW * 16, 0, W.src, W.cs(), W.residues()};
  r.bcast_reg = cpu::policy(cpu::Policy::kBcastReg);
  const ClRowKernel kernel = cl_row_kernel(nW);
  for (int64_t row = r0; row < r1; ++row) {
    const int64_t ud = row / H.out, uh = row % H.out;
    float* dst =
        out +
        ((D.s_out() * ud + D.b_out()) * H.dst_size + H.s_out() * uh + H.b_out()) * W.dst_size +
        W.b_out();
    r.rows = nW > 0 ? list_tap_rows(ps, ud, uh, m, soff, woff) : 0;
    for (int64_t blk = 0; blk < B; ++blk) {
      const int64_t nch = std::min<int64_t>(16, ps.m - blk * 16);
      float* dst_blk = dst + blk * 16 * S_dst;
      if (nW == 0) {  // no tap reaches this phase: zeros
        for (int64_t o = 0; o < nch; ++o)
          for (int64_t u = 0; u < W.out; ++u) dst_blk[o * S_dst + u * W.s_out()] = 0.0f;
        continue;
      }
      r.w = packed + blk * ps.C * ps.taps() * 16;
      // Dilation d along rows (unit stride): outputs u = res + d*j read input columns
      // res + e0 + d*(j + k), a row of its own per residue res. Stride si: output u0 of a tile
      // reads from column si * u0 + e0.
      for (int64_t res = 0; res < d; ++res) {
        const int64_t J = ceil_div(W.out - res, d), tiles = ceil_div(J, kernel.max_row);
        for (int64_t i = 0; i < tiles; ++i) {  // tiles of nearly equal width
          const int64_t j0 = i * J / tiles, j1 = (i + 1) * J / tiles, u0 = res + d * j0;
          r.col0 = si * u0 + e0;
          if (ahead) ahead->ask();
          kernel.run(j1 - j0, nW, r, dst_blk + u0 * W.s_out(), S_dst, nch, d * W.s_out());
        }
      }
    }
  }
}

}  // namespace cl_direct

namespace {

using namespace cl_direct;

// The source rows (flat over the outer dims, [lo, hi)) that output rows [r0, r1) of a pass read.
void source_rows(const ClPass& ps, int64_t r0, int64_t r1, int64_t& lo, int64_t& hi) {
  const Axis &D = ps.ax[0], &H = ps.ax[1];
  for (int64_t row = r0; row < r1; ++row)
    for (int64_t kd = 0; kd < D.K; ++kd)
      for (int64_t kh = 0; kh < H.K; ++kh) {
        const int64_t id = D.s_in() * (row / H.out) + D.e(kd),
                      ih = H.s_in() * (row % H.out) + H.e(kh);
        if (!D.member(kd) || !H.member(kh) || id < 0 || id >= D.src || ih < 0 || ih >= H.src)
          continue;
        lo = std::min(lo, id * H.src + ih), hi = std::max(hi, id * H.src + ih + 1);
      }
}

// The source rows task block blk (of nb) reads in all passes: [lo, hi), empty as [0, 0).
void task_rows(const Problem& p, bool data, int64_t blk, int64_t nb, int64_t& lo, int64_t& hi) {
  lo = INT64_MAX, hi = 0;
  for (int64_t i = 0; i < passes(p, data); ++i) {
    const ClPass ps = pass(p, data, i);
    source_rows(ps, ps.rows() * blk / nb, ps.rows() * (blk + 1) / nb, lo, hi);
  }
  if (hi <= lo) lo = hi = 0;
}

Fit plan(const Problem& p, bool data) {
  Fit f;
  const ConvGeometry& g = p.g;
  if (p.fp64 || !p.packed_gemm()) {
    f.reason = "needs fp32 and AVX2 or AVX-512";
  } else if (!p.avx512() && (g.dil[2] != 1 || (!data && g.stride[2] != 1))) {
    f.reason = "AVX2: needs unit stride and dilation along rows (the data gradient: dilation)";
  } else if (g.out_size() <= 0 || g.cout_g() <= 0 || g.cin_g() <= 0 || g.N <= 0) {
    f.reason = "empty";
  } else if (g.dil[2] > 2 || (data && g.dil[2] == 2 && g.stride[2] != 1) ||
             (!data && g.stride[2] > 2)) {
    f.reason = data ? "dilation along rows above 2, or 2 with a stride"
                    : "stride or dilation along rows above 2";
  } else if (g.k[2] > kClMaxKw || passes(p, data) > kMaxPhases) {
    f.reason = "kernel wider than 7, or more than 64 phases";
  } else {
    f.applies = true;
    f.preferred = true;
    f.reason = p.avx512() && cpu::policy(cpu::Policy::kBcastReg)
                   ? "16-channel row tiles, columns broadcast in registers (bcast_reg)"
                   : "16-channel row tiles";
    const ClPass first = pass(p, data, 0);  // the largest
    for (int64_t i = 0; i < passes(p, data); ++i)
      f.b.shared_elems += packed_elems(pass(p, data, i), g.groups);
    f.b.shared_elems += weights_f32_elems(p);  // other dtypes: the weights converted once
    f.b.rows = block_size(first.rows(), ceil_div(pieces_wanted(p), passes(p, data)));
    if (small_blocks()) f.b.rows = 1;
    // Slot: the tap-row lists (two int64 per tap row), then (other dtypes) the source rows of a
    // task's block as fp32. 3d: blocks of at most 1/8 of the output depth, so that a task
    // converts a slab of the volume, not all of it.
    int64_t span = 0;
    if (streams(p, data)) {
      const Stream st = stream_of(p, data);
      f.b.rows = st.hc;
      f.b.slot_elems = round16(4 * g.k[0] * g.k[1]) + round16(st.ring_elems(first.C));
      return f;
    }
    if (p.converts) {
      const Axis &D = first.ax[0], &H = first.ax[1];
      if (D.out > 1) f.b.rows = std::min(f.b.rows, ceil_div(D.out, 8) * H.out);
      const int64_t nb = ceil_div(first.rows(), f.b.rows);
      for (int64_t blk = 0, lo, hi; blk < nb; ++blk)
        task_rows(p, data, blk, nb, lo, hi), span = std::max(span, hi - lo);
      span *= first.ax[2].src;
    }
    f.b.slot_elems = round16(4 * g.k[0] * g.k[1]) + round16(first.C * span);
    // The forward is one pass storing whole output rows: a task's rows are one run per channel.
    f.b.adds_bias = !data;
  }
  return f;
}

// forward: by the rules of the data gradient below, with the output channels in the lanes. Ahead of
// grid_direct on every fp32 forward of the benchmark's geometries it applies to, strided (the data
// gradient of a transposed convolution) and unit stride alike, as it computes nothing on padding
// and builds no band (measured: bench/RESULTS.md, design cl_direct.forward).
Fit plan_forward(const Problem& p) {
  const ConvGeometry& g = p.g;
  Fit f = plan(p, false);
  if (!f.applies) return f;
  const char* why = g.cout_g() % 16 != 0          ? "C_out/g not a multiple of 16"
                    : g.cin_g() * g.k_size() < 32 ? "reduction (C_in/g x taps) below 32"
                    : p.macs() < double(1 << 22)  ? "below 4M multiply-adds"
                    : p.bf16                      ? "bf16 inputs: grid_direct's vdpbf16ps kernels"
                                                  : nullptr;
  if (why) f.preferred = false, f.reason = why;
  return f;
}

// backward_data: ahead of what ran before (grid_direct; strided: col2im_gemm) on every fp32 case of
// the benchmark it applies to, and level with oneDNN's primitives. Kept off where that was not
// measured: partial 16-channel tiles (the lanes past C_in/g are computed for nothing), a short
// reduction (the row's transpose and stores are paid per C_out/g x taps multiply-adds), small
// problems, and bf16 inputs where grid_direct runs its vdpbf16ps kernels. Inputs converted from
// another dtype (fp16, USE_FP16, HF32, bf16 without the dot kernels) are converted a (sample,
// group) at a time and still win, and on AVX2 it is ahead too (measured: bench/RESULTS.md, design
// cl_direct.data).
Fit plan_data(const Problem& p) {
  const ConvGeometry& g = p.g;
  Fit f = plan(p, true);
  if (!f.applies) return f;
  const char* why = g.cin_g() % 16 != 0            ? "C_in/g not a multiple of 16"
                    : g.cout_g() * g.k_size() < 32 ? "reduction (C_out/g x taps) below 32"
                    : p.macs() < double(1 << 22)   ? "below 4M multiply-adds"
                    : p.bf16                       ? "bf16 inputs: grid_direct's vdpbf16ps kernels"
                                                   : nullptr;
  if (why) f.preferred = false, f.reason = why;
  return f;
}

// packed[grp][blk][tap row][c][i][16]: lane l = W(blk * 16 + l, c, (kd, kh, kernel_tap(i))), zero
// past m; tap rows (kd, kh) in order among the pass's taps. Tap-row-major, so the kernel's
// channel loop over one tap row streams contiguous weights.
void pack_weights(const ClPass& ps, const Source& w, int64_t groups, float* packed) {
  const Axis &D = ps.ax[0], &H = ps.ax[1], &W = ps.ax[2];
  const int64_t B = blocks16(ps.m), nW = W.taps(), wg = ps.m * ps.C * D.K * H.K * W.K;
  const float* w32 = f32_data(w);
  int64_t kw[kClMaxKw];  // the row taps in kernel order
  for (int64_t i = 0; i < nW; ++i) kw[i] = W.kernel_tap(i);
  for_tasks(groups * B, [&](int64_t gb) {
    const int64_t grp = gb / B, blk = gb % B, nl = std::min<int64_t>(16, ps.m - blk * 16);
    float* dst = packed + gb * ps.C * ps.taps() * 16;
    for (int64_t kd = 0; kd < D.K; ++kd)
      for (int64_t kh = 0; kh < H.K; ++kh) {
        if (!D.member(kd) || !H.member(kh)) continue;
        for (int64_t c = 0; c < ps.C; ++c)
          for (int64_t i = 0; i < nW; ++i, dst += 16) {
            const int64_t at = grp * wg + (blk * 16) * ps.so + c * ps.si + (kd * H.K + kh) * W.K;
            for (int64_t l = 0; l < 16; ++l)
              dst[l] = l >= nl ? 0.0f
                       : w32   ? w32[at + l * ps.so + kw[i]]
                               : w.value(at + l * ps.so + kw[i]);
          }
      }
  });
}

void run(const Problem& p, const Blocking& b, const Operands<float>& o, bool data) {
  const ConvGeometry& g = p.g;
  const Source& src = data ? o.ysrc : o.xsrc;
  const int64_t src_sample = data ? g.C_out * g.out_size() : g.C_in * g.in_size();
  const int64_t P = passes(p, data), nb = ceil_div(pass(p, data, 0).rows(), b.rows);
  int64_t packed_total = 0;
  for (int64_t i = 0; i < P; ++i) packed_total += packed_elems(pass(p, data, i), g.groups);
  // Other dtypes: the weights converted (and rounded) once, vectorised, after the packed passes;
  // packing through Source::value, element by element, cost a visible share of a converting call
  // (measured: bench/RESULTS.md, design cl_direct.weights).
  const Source w{weights_f32(o.wsrc, g.C_out * g.cin_g() * g.k_size(), o.shared + packed_total),
                 SrcKind::kF32};
  for (int64_t i = 0, at = 0; i < P; ++i) {
    const ClPass ps = pass(p, data, i);
    pack_weights(ps, w, g.groups, o.shared + at);
    at += packed_elems(ps, g.groups);
  }
  if (streams(p, data)) return run_streamed(p, b, o, data, o.shared);
  for_tasks(g.N * g.groups * nb, [&](int64_t t) {
    const int64_t ng = t / nb, blk = t % nb, n = ng / g.groups, grp = ng % g.groups;
    int64_t* soff = reinterpret_cast<int64_t*>(slot_scratch(p, b, o));
    int64_t* woff = soff + g.k[0] * g.k[1];
    const ClPass first = pass(p, data, 0);
    const int64_t S_src = first.src_size(), C = first.C;
    const Source s = src.at(n * src_sample + grp * C * S_src);  // [C, S_src]
    const float* s32 = f32_data(s);
    int64_t base = 0, ldc = S_src;
    if (!s32) {  // other dtypes: the source rows the task reads, converted into the slot
      float* buf = reinterpret_cast<float*>(woff + g.k[0] * g.k[1]);
      int64_t lo, hi;
      task_rows(p, data, blk, nb, lo, hi);
      const int64_t W = first.ax[2].src;
      base = lo * W, ldc = (hi - lo) * W;
      for (int64_t c = 0; c < C; ++c) s.at(c * S_src + base).convert(ldc, 1, buf + c * ldc);
      s32 = buf;
    }
    const float* packed = o.shared;
    for (int64_t i = 0; i < P; ++i) {
      const ClPass ps = i == 0 ? first : pass(p, data, i);
      const int64_t R = ps.rows(), per_group = blocks16(ps.m) * ps.C * ps.taps() * 16;
      const int64_t r0 = R * blk / nb, r1 = R * (blk + 1) / nb;
      float* dst = o.out + ng * ps.m * ps.dst_size();  // [m, dst_size]
      run_rows(ps, {.src = s32,
                    .map = RowMap{base},
                    .ldc = ldc,
                    .out = dst,
                    .r0 = r0,
                    .r1 = r1,
                    .soff = soff,
                    .woff = woff,
                    .packed = packed + grp * per_group});
      if (o.add_bias) {  // (the forward: one pass, rows of ax[2].dst_size positions)
        const int64_t W = ps.ax[2].dst_size;
        add_bias_block(dst + r0 * W, ps.dst_size(), ps.m, (r1 - r0) * W, o.add_bias + grp * ps.m);
      }
      packed += packed_elems(ps, g.groups);
    }
  });
}

void forward(const Problem& p, const Blocking& b, const Operands<float>& o) {
  run(p, b, o, false);
}
void backward_data(const Problem& p, const Blocking& b, const Operands<float>& o) {
  run(p, b, o, true);
}

}  // namespace

// run_f32 reads the inputs as stored (other dtypes converted a (sample, group) at a time).
const Algorithm kClDirectForward{"cl_direct",
                                 Primitive::kForward,
                                 plan_forward,
                                 forward,
                                 nullptr,
                                 nullptr,
                                 /*reads_sources=*/true,
                                 /*needs=*/cpu::kAvx2Features};
const Algorithm kClDirectData{"cl_direct",
                              Primitive::kBackwardData,
                              plan_data,
                              backward_data,
                              nullptr,
                              nullptr,
                              /*reads_sources=*/true,
                              /*needs=*/cpu::kAvx2Features};

}  // namespace aclnn_cpu::conv
