// strided_direct's forward (algo_strided_direct.cpp has the weight gradient and the algorithm's
// overview): a strided convolution on the input at its own resolution, in oneDNN's jit_avx2
// orientation.
//
//   forward          task (sample, group, output plane, block of output rows): x_p = the rows the
//                    block reads, zero-padded, as they are (NCHW); tiles of up to 3 vectors of 8
//                    output channels x positions (strided_direct_avx2.cpp, oneDNN's jit_avx2
//                    orientation) into a position-major block, transposed to y at the end.
//                    Weights of a tile's channel blocks x a channel chunk stay in L1.
#include <algorithm>
#include <cstring>

#include "conv/algorithms/algo_support.h"
#include "conv/engine/algorithms.h"
#include "conv/kernels/strided/strided_direct.h"
#include "conv/algorithms/strided_direct_plan.h"

namespace aclnn_cpu::conv {
namespace {

using strided_direct::channel_rules;
using strided_direct::common;
using strided_direct::tap_offsets;

constexpr int64_t kFwdBlockBytes = int64_t{256} << 10;  // x_p + y_t of one row block
constexpr int64_t kChunkBytes = int64_t{16} << 10;      // packed weights of a 3-block tile

// x_p [c][kd][i][j] = x[c][s0*od - pb0 + kd*d0][s1*o1 - pb1 + i][j - pb2] (zero outside) for a
// block of `rows` output rows; y_t [position][mp] the block's outputs position-major.
struct FwdFrame {
  int64_t Wx = 0, Rx = 0, rows = 0, cplane = 0, mp = 0;
  int64_t x_elems(int64_t C) const { return round16(C * cplane); }
  int64_t y_elems(int64_t n) const { return round16(rows * n * mp); }
};

FwdFrame fwd_frame(const ConvGeometry& g, int64_t rows) {
  FwdFrame f;
  f.Wx = g.stride[2] * (g.out[2] - 1) + g.dil[2] * (g.k[2] - 1) + 1;
  f.Rx = g.stride[1] * (rows - 1) + g.dil[1] * (g.k[1] - 1) + 1;
  f.rows = rows;
  f.cplane = g.k[0] * f.Rx * f.Wx;
  f.mp = ceil_div(g.cout_g(), 8) * 8;
  return f;
}

int64_t fwd_rows(const ConvGeometry& g) {
  int64_t rows = g.out[1];
  while (rows > 1) {
    const FwdFrame f = fwd_frame(g, rows);
    if ((f.x_elems(g.cin_g()) + f.y_elems(g.out[2])) * 4 <= kFwdBlockBytes) break;
    rows = ceil_div(rows, 2);
  }
  return rows;
}

int64_t packed_elems(const ConvGeometry& g) {
  return ceil_div(g.cout_g(), 8) * 8 * g.cin_g() * g.k_size();
}

Fit plan_forward(const Problem& p) {
  Fit f = common(p, /*avx512_measured=*/false);
  if (!f.applies) return f;
  const ConvGeometry& g = p.g;
  // Measured only where the weight gradient's rules hold (transposed convolutions' shapes).
  channel_rules(f, g);
  f.b.rows = fwd_rows(g);
  const FwdFrame fr = fwd_frame(g, f.b.rows);
  f.b.cblock = std::clamp<int64_t>(kChunkBytes / (24 * g.k_size() * 4), 1, g.cin_g());
  f.b.slot_elems = fr.x_elems(g.cin_g()) + fr.y_elems(g.out[2]);
  // Then (other dtypes) the weights converted once: weights_f32.
  f.b.shared_elems =
      round16(2 * g.k_size()) + g.groups * round16(packed_elems(g)) + weights_f32_elems(p);
  return f;
}

// x_p of one row block (see FwdFrame), converted from the source's dtype.
void build_x_p(const ConvGeometry& g, const FwdFrame& f, const Source& x, int64_t od, int64_t i0,
               float* x_p) {
  const int64_t W = g.in[2], pb2 = g.pad_before[2];
  const int64_t lo = std::clamp<int64_t>(pb2, 0, f.Wx), hi = std::clamp<int64_t>(pb2 + W, lo, f.Wx);
  for (int64_t c = 0; c < g.cin_g(); ++c)
    for (int64_t kd = 0; kd < g.k[0]; ++kd) {
      const int64_t id = g.stride[0] * od - g.pad_before[0] + kd * g.dil[0];
      for (int64_t i = 0; i < f.Rx; ++i) {
        const int64_t ih = i0 + i;
        float* dst = x_p + c * f.cplane + (kd * f.Rx + i) * f.Wx;
        if (id < 0 || id >= g.in[0] || ih < 0 || ih >= g.in[1] || hi <= lo) {
          std::memset(dst, 0, static_cast<size_t>(f.Wx) * sizeof(float));
          continue;
        }
        std::memset(dst, 0, static_cast<size_t>(lo) * sizeof(float));
        std::memset(dst + hi, 0, static_cast<size_t>(f.Wx - hi) * sizeof(float));
        x.at(c * g.in_size() + (id * g.in[1] + ih) * W + lo - pb2).convert(hi - lo, 1, dst + lo);
      }
    }
}

void forward(const Problem& p, const Blocking& b, const Operands<float>& o) {
  const ConvGeometry& g = p.g;
  const int64_t Cig = g.cin_g(), Cog = g.cout_g(), K = g.k_size(), n = g.out[2];
  const int64_t blocks = ceil_div(Cog, 8), pk_g = round16(packed_elems(g));
  const FwdFrame f = fwd_frame(g, b.rows);
  int64_t* off = reinterpret_cast<int64_t*>(o.shared);  // tap q -> x_p offset
  tap_offsets(g, f.Rx, f.Wx, 1, off);
  float* packed = o.shared + round16(2 * K);
  // [ob][c][q][8], zero past Cog; fp32 weights read directly, others converted (and rounded) once,
  // vectorised (Source::value's dtype switch per element, and its USE_FP16 rounding, showed in the
  // call's profile; measured: bench/RESULTS.md, design strided_direct_forward.weights).
  const float* w32 = weights_f32(o.wsrc, g.C_out * Cig * K, packed + g.groups * pk_g);
  for_tasks(g.groups, [&](int64_t grp) {
    float* pk = packed + grp * pk_g;
    for (int64_t ob = 0; ob < blocks; ++ob)
      for (int64_t c = 0; c < Cig; ++c)
        for (int64_t q = 0; q < K; ++q, pk += 8)
          for (int64_t i = 0; i < 8; ++i) {
            const int64_t oc = ob * 8 + i, at = ((grp * Cog + oc) * Cig + c) * K + q;
            pk[i] = oc >= Cog ? 0.0f : w32[at];
          }
  });
  const int64_t row_blocks = ceil_div(g.out[1], f.rows), per_sample = g.out[0] * row_blocks;
  for_tasks(g.N * g.groups * per_sample, [&](int64_t t) {
    const int64_t blk = t % per_sample, ng = t / per_sample, grp = ng % g.groups, s = ng / g.groups;
    const int64_t od = blk / row_blocks, o1 = blk % row_blocks * f.rows;
    const int64_t rows = std::min(f.rows, g.out[1] - o1);
    float* x_p = slot_scratch(p, b, o);
    float* y_t = x_p + f.x_elems(Cig);
    build_x_p(g, f, o.xsrc.at((s * g.C_in + grp * Cig) * g.in_size()), od,
              g.stride[1] * o1 - g.pad_before[1], x_p);
    const float* pk = packed + grp * pk_g;
    const int64_t ob_stride = Cig * K * 8;
    // Weights of up to 3 blocks x a channel chunk stay in L1 (groups as the kernel splits them).
    const int64_t groups3 = ceil_div(blocks, 3);
    for (int64_t gi = 0, ob = 0, nb = 0; gi < groups3; ++gi, ob += nb) {
      nb = blocks / groups3 + (gi < blocks % groups3);
      for (int64_t c0 = 0; c0 < Cig; c0 += b.cblock)
        for (int64_t r = 0; r < rows; ++r)
          strided_forward_avx2({.blocks = nb,
                                .n = n,
                                .C = std::min(b.cblock, Cig - c0),
                                .T = K,
                                .off = off,
                                .x = x_p + c0 * f.cplane + g.stride[1] * r * f.Wx,
                                .cstride = f.cplane,
                                .xstep = g.stride[2],
                                .packed = pk + ob * ob_stride + c0 * K * 8,
                                .ob_stride = ob_stride,
                                .yt = y_t + r * n * f.mp + ob * 8,
                                .ldy = f.mp,
                                .add = c0 > 0});
    }
    float* y = o.out + (s * g.C_out + grp * Cog) * g.out_size() + (od * g.out[1] + o1) * n;
    for (int64_t r = 0; r < rows; ++r)
      positions_to_channels_avx2(y_t + r * n * f.mp, f.mp, n, Cog, y + r * n, g.out_size());
  });
}

}  // namespace

const Algorithm kStridedDirectForward{"strided_direct",
                                      Primitive::kForward,
                                      plan_forward,
                                      forward,
                                      /*run_f64=*/nullptr,
                                      /*run_bf16=*/nullptr,
                                      /*reads_sources=*/true,
                                      /*needs=*/cpu::kAvx2Features};

}  // namespace aclnn_cpu::conv
