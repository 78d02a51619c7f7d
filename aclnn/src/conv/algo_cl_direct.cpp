// cl_direct: unit-stride fp32 convolutions on the row kernels of cl_direct.h (AVX-512): forward,
// and the data gradient as the forward of dy with the flipped weights (flipped_for_data).
//
//   task (sample, group, block of output rows): for each output row and block of 16 output
//   channels, the row's tiles (<= 14 positions each) over the tap rows that exist for that row,
//   reading the source [C, S_in] (x, or dy) as stored and storing into out [m, S_out] directly;
//   sources of other dtypes are converted a (sample, group) at a time into the slot. The weights
//   are packed once per call: [group][16-channel block][c][tap][16].
//
// Against grid_direct's padded grid nothing is computed on padding (taps clipped per row, edge
// columns skipped), no lane is spent past a row and there is no band to build nor block to copy
// out: 14x14 outputs with a 5x5 kernel, pad 2, take 16% fewer multiply-adds, and the grid
// kernel's rows mode computes 16 lanes per 14-wide row.
//
// Cost rules (backward_data; the forward is only forced): see plan_pass.
#include <algorithm>
#include <cstdint>

#include "conv/algo_support.h"
#include "conv/algorithms.h"
#include "conv/cl_direct.h"

namespace aclnn_cpu::conv {
namespace {

// A forward-form pass: out [N, groups * m, S_out] from src [N, groups * C, S_in] by the unit-stride
// geometry fg; W(o, c, q) = w[(grp * wg) + o * so + c * si + q] with q reversed (K - 1 - q) when
// `flip`.
struct ClPass {
  ConvGeometry fg;
  int64_t m, C;
  Source src;
  float* out;
  Source w;
  int64_t wg, so, si;
  bool flip;
};

ClPass forward_pass(const Problem& p, const Operands<float>& o) {
  const ConvGeometry& g = p.g;
  const int64_t K = g.k_size();
  return ClPass{
      g, g.cout_g(), g.cin_g(), o.xsrc, o.out, o.wsrc, g.cout_g() * g.cin_g() * K, g.cin_g() * K,
      K, false};
}

// dx[c] = sum_{o, q'} w[o][c][K-1-q'] * dy[o][shifted]: W(c, o, q') = w[o*Cig*K + c*K + K-1-q'].
ClPass data_pass(const Problem& p, const Operands<float>& o) {
  const ConvGeometry& g = p.g;
  const int64_t K = g.k_size();
  return ClPass{flipped_for_data(g),        g.cin_g(), g.cout_g(),    o.ysrc, o.out, o.wsrc,
                g.cout_g() * g.cin_g() * K, K,         g.cin_g() * K, true};
}

int64_t blocks16(int64_t m) {
  return ceil_div(m, 16);
}
int64_t packed_elems(const ConvGeometry& fg, int64_t m, int64_t C) {
  return fg.groups * blocks16(m) * 16 * C * fg.k_size();
}
int64_t tap_rows(const ConvGeometry& fg) {
  return fg.k[0] * fg.k[1];
}

// Output rows (od, oh) of a pass.
int64_t out_rows(const ConvGeometry& fg) {
  return fg.out[0] * fg.out[1];
}

Fit plan_pass(const Problem& p, const ConvGeometry& fg, int64_t m, int64_t C) {
  Fit f;
  if (p.fp64 || !p.avx512()) {
    f.reason = "needs fp32 and AVX-512";
  } else if (fg.out_size() <= 0 || m <= 0 || C <= 0 || fg.N <= 0) {
    f.reason = "empty";
  } else if (!unit_stride(fg) || fg.dil[2] != 1) {
    f.reason = "needs unit stride and unit dilation along rows";
  } else if (fg.k[2] > kClMaxKw) {
    f.reason = "kernel wider than 7";
  } else {
    f.applies = true;
    f.preferred = true;
    f.reason = "unit stride, 16-channel tiles";
    // Slot: the tap-row lists (two int64 per tap row), then (other dtypes) one (sample, group)
    // of the source as fp32.
    f.b.slot_elems = round16(4 * tap_rows(fg)) + (p.converts ? round16(C * fg.in_size()) : 0);
    f.b.shared_elems = packed_elems(fg, m, C);
    f.b.rows = block_size(out_rows(fg), pieces_wanted(p));
  }
  return f;
}

// Forced only: the forward has no benchmark of its own yet to set a rule by.
Fit plan_forward(const Problem& p) {
  Fit f = plan_pass(p, p.g, p.g.cout_g(), p.g.cin_g());
  if (f.applies) f.preferred = false, f.reason = "forward: forced only";
  return f;
}

// backward_data: ahead of grid_direct on every unit-stride fp32 case of the benchmark it applies
// to (Zen 4, 1 thread, loaded machine, medians of 3, ms; oneDNN prim in brackets): mnist2 14.0 vs
// 19.5 (13.8), grouped 12.9 vs 15.9 (13.2), resnet3x3 100 vs 114 (104), c3d_video 278 vs 350
// (298). Kept off where that was not measured: partial 16-channel tiles (the lanes past C_in/g
// are computed for nothing), a short reduction (the row's transpose and stores are paid per
// C_out/g x taps multiply-adds), small problems, and inputs converted from another dtype.
Fit plan_data(const Problem& p) {
  if (!unit_stride(p.g)) return Fit{false, false, "needs unit stride", {}};
  const ConvGeometry& g = p.g;
  Fit f = plan_pass(p, flipped_for_data(g), g.cin_g(), g.cout_g());
  if (!f.applies) return f;
  const char* why = g.cin_g() % 16 != 0            ? "C_in/g not a multiple of 16"
                    : g.cout_g() * g.k_size() < 32 ? "reduction (C_out/g x taps) below 32"
                    : p.macs() < double(1 << 22)   ? "below 4M multiply-adds"
                    : p.converts                   ? "inputs converted from another dtype"
                                                   : nullptr;
  if (why) f.preferred = false, f.reason = why;
  return f;
}

// packed[grp][blk][kd, kh][c][kw][16]: lane i = W(blk * 16 + i, c, (kd, kh, kw)), zero past m.
// Tap-row-major, so the kernel's channel loop over one tap row streams contiguous weights.
void pack_weights(const ClPass& ps, float* packed) {
  const int64_t K = ps.fg.k_size(), KW = ps.fg.k[2], B = blocks16(ps.m);
  const float* w32 = f32_data(ps.w);
  for_tasks(ps.fg.groups * B, [&](int64_t gb) {
    const int64_t grp = gb / B, blk = gb % B;
    float* dst = packed + gb * ps.C * K * 16;
    for (int64_t tr = 0; tr < tap_rows(ps.fg); ++tr)
      for (int64_t c = 0; c < ps.C; ++c)
        for (int64_t kw = 0; kw < KW; ++kw, dst += 16)
          for (int64_t i = 0; i < 16; ++i) {
            const int64_t o = blk * 16 + i, q = tr * KW + kw;
            const int64_t at = grp * ps.wg + o * ps.so + c * ps.si + (ps.flip ? K - 1 - q : q);
            dst[i] = o >= ps.m ? 0.0f : w32 ? w32[at] : ps.w.value(at);
          }
  });
}

// The tap rows (kd, kh) whose input row exists for output row (od, oh): their offsets in a source
// channel (column 0 of the input row) and in a channel's packed weights. Returns how many.
int64_t list_tap_rows(const ConvGeometry& fg, int64_t C, int64_t od, int64_t oh, int64_t* soff,
                      int64_t* woff) {
  int64_t n = 0;
  for (int64_t kd = 0; kd < fg.k[0]; ++kd) {
    const int64_t id = od + kd * fg.dil[0] - fg.pad_before[0];
    if (id < 0 || id >= fg.in[0]) continue;
    for (int64_t kh = 0; kh < fg.k[1]; ++kh) {
      const int64_t ih = oh + kh * fg.dil[1] - fg.pad_before[1];
      if (ih < 0 || ih >= fg.in[1]) continue;
      soff[n] = (id * fg.in[1] + ih) * fg.in[2];
      woff[n++] = (kd * fg.k[1] + kh) * C * fg.k[2] * 16;
    }
  }
  return n;
}

// Output rows [r0, r1) of one (sample, group): src [C, S_in] -> out [m, S_out].
void run_rows(const ClPass& ps, int64_t grp, const float* src, float* out, int64_t r0, int64_t r1,
              int64_t* soff, int64_t* woff, const float* packed) {
  const ConvGeometry& fg = ps.fg;
  const int64_t S_out = fg.out_size(), K = fg.k_size(), B = blocks16(ps.m);
  const int64_t Wo = fg.out[2], tiles = ceil_div(Wo, kClMaxRow);
  ClRow r{src, soff, woff, 0, ps.C, fg.in_size(), nullptr, fg.k[2] * 16, 0, fg.in[2]};
  for (int64_t row = r0; row < r1; ++row) {
    r.rows = list_tap_rows(fg, ps.C, row / fg.out[1], row % fg.out[1], soff, woff);
    for (int64_t blk = 0; blk < B; ++blk) {
      r.w = packed + (grp * B + blk) * ps.C * K * 16;
      const int64_t nch = std::min<int64_t>(16, ps.m - blk * 16);
      for (int64_t i = 0; i < tiles; ++i) {  // tiles of nearly equal width
        const int64_t ow0 = i * Wo / tiles, ow1 = (i + 1) * Wo / tiles;
        r.col0 = ow0 - fg.pad_before[2];
        cl_direct_row_avx512(ow1 - ow0, fg.k[2], r, out + blk * 16 * S_out + row * Wo + ow0, S_out,
                             nch);
      }
    }
  }
}

void run_pass(const ClPass& ps, const Problem& p, const Blocking& b, const Operands<float>& o) {
  const ConvGeometry& fg = ps.fg;
  const int64_t S_in = fg.in_size(), S_out = fg.out_size(), R = out_rows(fg);
  const int64_t blocks = ceil_div(R, b.rows);
  pack_weights(ps, o.shared);
  for_tasks(fg.N * fg.groups * blocks, [&](int64_t t) {
    const int64_t ng = t / blocks, r0 = t % blocks * b.rows, r1 = std::min(R, r0 + b.rows);
    int64_t* soff = reinterpret_cast<int64_t*>(slot_scratch(p, b, o));
    int64_t* woff = soff + tap_rows(fg);
    const Source src = ps.src.at(ng * ps.C * S_in);  // [C, S_in]
    const float* src32 = f32_data(src);
    if (!src32) {  // other dtypes: the whole (sample, group) converted into the slot
      float* buf = reinterpret_cast<float*>(woff + tap_rows(fg));
      src.convert(ps.C * S_in, 1, buf);
      src32 = buf;
    }
    run_rows(ps, ng % fg.groups, src32, ps.out + ng * ps.m * S_out, r0, r1, soff, woff, o.shared);
  });
}

void forward(const Problem& p, const Blocking& b, const Operands<float>& o) {
  run_pass(forward_pass(p, o), p, b, o);
}
void backward_data(const Problem& p, const Blocking& b, const Operands<float>& o) {
  run_pass(data_pass(p, o), p, b, o);
}

}  // namespace

const Algorithm kClDirectForward{"cl_direct",
                                 Primitive::kForward,
                                 plan_forward,
                                 forward,
                                 nullptr,
                                 nullptr,
                                 /*reads_sources=*/true,
                                 /*needs_isa=*/gemm::Isa::kAvx512};
const Algorithm kClDirectData{"cl_direct",
                              Primitive::kBackwardData,
                              plan_data,
                              backward_data,
                              nullptr,
                              nullptr,
                              /*reads_sources=*/true,
                              /*needs_isa=*/gemm::Isa::kAvx512};

}  // namespace aclnn_cpu::conv
