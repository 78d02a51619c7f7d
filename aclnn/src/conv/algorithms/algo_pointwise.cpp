// pointwise_gemm: 1x1(x1) kernels with unit stride and no padding. The input of a (sample, group)
// already is its im2col matrix [Cig, S], so every primitive is one GEMM per task on the tensors:
//
//   forward          y[n, g]  (Cog x S)  = w[g] (Cog x Cig) * x[n, g] (Cig x S)
//   backward_data    dx[n, g] (Cig x S)  = w[g]^T * dy[n, g]
//   backward_weight  dw[g]    (Cog x Cig) = sum_n dy[n, g] * x[n, g]^T
//
// bf16 inputs (where bf16_dot_kernels()) run the same GEMMs with the AVX512_BF16 dot kernels
// (algo_pointwise_bf16.cpp). The fp32 GEMMs read the inputs as stored (reads_sources), with no
// whole-tensor fp32 copy. Where an input converts (fp16, bf16, rounded fp32): on our packed GEMM,
// forward and backward_data pack w[g] (or w[g]^T) once and convert x (dy) while packing the B
// panels (SourceRows); the weight gradient reads USE_FP16 fp32 inputs in place on our GEMM, rounded
// as the GEMM packs them (gemm::Mat::fp16), and fp16 / bf16 inputs in place on the AVX-512 one,
// widened as it packs them (gemm::Mat::p16); otherwise it, and OpenBLAS runs, convert a chunk of
// columns at a time into the task's scratch, the weights once into the shared scratch.
// gradBias (fp32 and 16-bit runs, where the engine asks: Blocking::sums_bias) is summed by the
// weight gradient's first channel block from each dy block just before its GEMM reads it, so dy is
// not streamed from memory once more by a separate pass (resnet1x1: 25.7 MB).
#include <algorithm>
#include <type_traits>

#include "conv/algorithms/algo_support.h"
#include "conv/engine/algorithms.h"
#include "conv/algorithms/pointwise_bf16.h"
#include "conv/kernels/im2col/source_panels.h"
#include "conv/engine/strided.h"
#include "gemm/sgemm.h"

namespace aclnn_cpu::conv {
namespace {

int64_t elem_bytes(const Problem& p) {
  return p.fp64 ? 8 : 4;
}

Fit applies(const Problem& p) {
  Fit f;
  if (!p.g.pointwise()) {
    f.reason = "needs a 1x1 kernel, unit stride and no padding";
  } else {
    f.applies = f.preferred = true;
    f.reason = "1x1 kernel: the input is its own column matrix";
    f.b.pack_elems = p.own_gemm() ? gemm::pack_elems() : 0;
    // bf16 dot kernels: like grid_direct's, only from 4M multiply-adds (small problems keep the
    // converted fp32 GEMM, which also keeps their bf16 denormals, which vdpbf16ps flushes).
    if (p.bf16 && p.macs() < double(1 << 22)) {
      f.preferred = false;
      f.reason = "bf16 below 4M multiply-adds";
    }
  }
  return f;
}

// Bytes of a weight gradient's converted chunk (dy's and x's columns): half of Zen 4's L2.
constexpr int64_t kConvertedChunkBytes = int64_t{512} << 10;

// An input the packed GEMM reads in place: fp32; fp32 under USE_FP16, which the kernels round to
// fp16 as they pack it (gemm::Mat::fp16); fp16 or bf16, which the AVX-512 kernels widen as they
// pack it (gemm::Mat::p16).
bool packs_in_place(const Blocking& b, const Source& s) {
  if (s.kind == SrcKind::kF32) return true;
  if (b.pack_elems == 0) return false;
  if (s.kind == SrcKind::kF32Fp16) return gemm::packs_fp16();
  return (s.kind == SrcKind::kF16 || s.kind == SrcKind::kBF16) && gemm::packs_16bit();
}

// Element `at` of an input packs_in_place accepts, as a [rs, cs]-strided GEMM operand.
gemm::Mat in_place_mat(const Source& s, int64_t at, int64_t rs, int64_t cs) {
  const Source e = s.at(at);
  if (s.kind == SrcKind::kF16 || s.kind == SrcKind::kBF16)
    return gemm::Mat{.rs = rs,
                     .cs = cs,
                     .p16 = static_cast<const uint16_t*>(e.data),
                     .bf16 = s.kind == SrcKind::kBF16};
  return gemm::Mat{static_cast<const float*>(e.data), rs, cs, s.kind == SrcKind::kF32Fp16};
}

// Converting inputs on our packed GEMM (forward, backward_data): weights packed once per group
// (A: M x K) into the shared scratch, converted first in a slot; tasks over column ranges. Run
// decides from the plan's blocking (the Problem it gets is not marked forced).
bool packs_sources(const Problem& p, const Blocking& b) {
  return p.converts && b.pack_elems > 0;
}
void plan_packed(const Problem& p, int64_t M, int64_t K, Blocking& b) {
  const ConvGeometry& g = p.g;
  b.cols = block_size(g.out_size(), pieces_wanted(p));
  b.cblock = g.cin_g();
  b.slot_elems = g.cout_g() * g.cin_g();
  // A 16-bit output stored by the GEMM's micro-kernel (one K block: the product is final there).
  b.stores16 = p.avx512() && K > 0 && K <= gemm::kMaxPanelDepth;
  b.shared_elems = g.groups * gemm::packed_a_elems(M, K);
}

// out[n, g][:, cols] (M x cols) = A[g] (M x K) * src[n, g][:, cols] (K x cols), A[g] = w[g]
// (forward: M = Cog, K = Cig, src = x) or w[g]^T (backward_data: M = Cig, K = Cog, src = dy),
// src converted as its panels are packed; into Operands::out16 where set (Blocking::stores16),
// narrowed by the micro-kernel as it stores the product.
void packed_source_gemm(const Problem& p, const Blocking& b, const Operands<float>& o, bool data) {
  const ConvGeometry& g = p.g;
  const int64_t Cig = g.cin_g(), Cog = g.cout_g(), S = g.out_size();
  const int64_t M = data ? Cig : Cog, K = data ? Cog : Cig, apack = gemm::packed_a_elems(M, K);
  for_tasks(g.groups, [&](int64_t grp) {
    const float* w = weights_f32(o.wsrc.at(grp * Cog * Cig), Cog * Cig, slot_scratch(p, b, o));
    const gemm::Mat a = data ? gemm::Mat{w, 1, Cig} : gemm::Mat{w, Cig, 1};
    gemm::pack_a_once(M, K, a, o.shared + grp * apack);
  });
  const Source& src = data ? o.ysrc : o.xsrc;
  const int64_t C_src = data ? g.C_out : g.C_in, C_dst = data ? g.C_in : g.C_out;
  const int64_t chunks = ceil_div(S, b.cols);
  for_tasks(g.N * g.groups * chunks, [&](int64_t t) {
    const int64_t chunk = t % chunks, ng = t / chunks, grp = ng % g.groups, n = ng / g.groups;
    const int64_t j0 = chunk * b.cols, j1 = std::min(S, j0 + b.cols);
    const int64_t src_at = (n * C_src + grp * K) * S + j0, out_at = (n * C_dst + grp * M) * S + j0;
    // src [K, cols]: read in place where the packing converts it (no row staged in between)
    const bool mat = packs_in_place(b, src);
    const gemm::Mat view = mat ? in_place_mat(src, src_at, S, 1) : gemm::Mat{};
    const SourceRows rows(src.at(src_at), S);
    const gemm::Mat* b_mat = mat ? &view : nullptr;
    const gemm::BPanels* b_panels = mat ? nullptr : &rows;
    if (o.out16) {
      gemm::sgemm_packed_narrow(M, j1 - j0, K, o.shared + grp * apack, b_mat, b_panels,
                                !o.out16_fp16, o.out16 + out_at, S, pack_scratch(p, b, o));
    } else {
      gemm::sgemm_packed(M, j1 - j0, K, o.shared + grp * apack, nullptr, b_mat, b_panels, false,
                         o.out + out_at, S, pack_scratch(p, b, o));
    }
  });
}

Fit plan_forward(const Problem& p) {
  Fit f = applies(p);
  if (p.bf16) {
    f.b.pack_elems = 0;
    if (f.applies) pointwise_bf16::plan_forward(p, f.b);
    return f;
  }
  if (packs_sources(p, f.b)) {
    plan_packed(p, p.g.cout_g(), p.g.cin_g(), f.b);
    return f;
  }
  const ConvGeometry& g = p.g;
  // Converting: x's chunk [Cig, cols] goes through the task's scratch, so it is kept L2-sized.
  f.b.cols =
      chunk_columns(p.converts ? g.cin_g() : 0, g.out_size(), elem_bytes(p), pieces_wanted(p));
  if (p.converts) f.b.slot_elems = g.cin_g() * f.b.cols;
  f.b.shared_elems = weights_f32_elems(p);
  return f;
}

Fit plan_data(const Problem& p) {
  Fit f = applies(p);
  if (p.bf16) {
    f.b.pack_elems = 0;
    if (f.applies) pointwise_bf16::plan_data(p, f.b);
    return f;
  }
  if (packs_sources(p, f.b)) {
    plan_packed(p, p.g.cin_g(), p.g.cout_g(), f.b);
    return f;
  }
  f.b.cblock = block_size(p.g.cin_g(), pieces_wanted(p));
  if (p.converts) {  // dy a chunk [Cog, cols] at a time
    f.b.cols = chunk_columns(p.g.cout_g(), p.g.in_size(), elem_bytes(p), 1);
    f.b.slot_elems = p.g.cout_g() * f.b.cols;
  }
  f.b.shared_elems = weights_f32_elems(p);
  return f;
}

// Positions of dy summed into gradBias per step, just before the GEMM reads them: a block of
// at most ~256 KB, which the GEMM then finds in L2 (one GEMM over a whole sample would find the
// sample's first positions evicted by the time it reads them).
int64_t bias_step(int64_t Cog) {
  return std::max<int64_t>(256, round16((int64_t{256} << 10) / (4 * std::max<int64_t>(Cog, 1))));
}

Fit plan_weight(const Problem& p) {
  Fit f = applies(p);
  if (p.bf16) {
    if (!f.applies) return f;
    // bf16: channel blocks of at most 256 (each block transposes dy again).
    plan_weight_split(p, 4, even_cblock(p, pointwise_bf16::kWeightChannels), f.b);
    pointwise_bf16::plan_weight(p, f.b);
    return f;
  }
  plan_weight_split(p, elem_bytes(p), gemm_weight_cblock(p), f.b);
  // gradBias from the dy blocks the GEMMs read, each summed right after (backward_weight), where
  // our GEMM's scratch makes a workspace anyway (a small fp32 problem needs none at all).
  f.b.sums_bias = f.applies && !p.fp64 && p.own_gemm();
  f.b.shared_elems = round16(f.b.shared_elems) + bias_sums_elems(p.g, f.b);
  if (p.converts) {  // dy [Cog, cols] and x [cblock, cols] a chunk of positions at a time
    const int64_t rows = p.g.cout_g() + f.b.cblock, S = p.g.in_size();
    // The chunk is written by the conversion and read back by the GEMM's packing: kept within half
    // of L2, in chunks of nearly equal size, not the 2 MB of chunk_columns, which sent it through
    // L3 and made the 16-bit weight gradient slower than fp32's (measured: bench/RESULTS.md, design
    // pointwise.chunk-bytes).
    const int64_t total = std::max<int64_t>(S, 1);
    int64_t cols =
        std::clamp<int64_t>(block_budget(kConvertedChunkBytes) / (std::max<int64_t>(rows, 1) * 4),
                            std::min<int64_t>(16, total), total);
    f.b.cols = std::min(total, round16(ceil_div(total, ceil_div(total, cols))));
    f.b.slot_elems = rows * f.b.cols;
    // weight_in_place converts one summing step of a dy row into the slot for gradBias.
    if (f.b.sums_bias) f.b.slot_elems = std::max(f.b.slot_elems, bias_step(p.g.cout_g()));
  }
  return f;
}

// The inputs of a run: fp64 copies, or (fp32 runs) the inputs as stored.
struct In64 {
  const double *x, *w, *y;
};
struct In32 {
  Source x, w, y;
};
In64 inputs(const Operands<double>& o) {
  return {o.x, o.w, o.y};
}
In32 inputs(const Operands<float>& o) {
  return {o.xsrc, o.wsrc, o.ysrc};
}
bool in_place(const double*) {
  return true;
}
bool in_place(const Source& s) {  // by kind: an empty input's Source has no data
  return s.kind == SrcKind::kF32;
}
const double* weights(const double* w, int64_t, double*) {
  return w;
}
const float* weights(const Source& w, int64_t count, float* scratch) {
  return weights_f32(w, count, scratch);
}

// Rows x columns [j0, j1) of a [*, S] matrix from element `at`: in place (fp64 copies, fp32 as
// is; row stride S), or converted into `scratch` (row stride j1 - j0).
template <typename T>
struct Block {
  const T* p;
  int64_t ld;
};
Block<double> block(const double* m, int64_t at, int64_t, int64_t S, int64_t j0, int64_t, double*) {
  return {m + at + j0, S};
}
Block<float> block(const Source& src, int64_t at, int64_t rows, int64_t S, int64_t j0, int64_t j1,
                   float* scratch) {
  if (const float* f = f32_data(src)) return {f + at + j0, S};
  convert_block(src.at(at + j0), rows, S, j1 - j0, scratch, j1 - j0);
  return {scratch, j1 - j0};
}

template <typename T>
void forward(const Problem& p, const Blocking& b, const Operands<T>& o) {
  if constexpr (std::is_same_v<T, float>)
    if (packs_sources(p, b)) return packed_source_gemm(p, b, o, /*data=*/false);
  const ConvGeometry& g = p.g;
  const int64_t Cig = g.cin_g(), Cog = g.cout_g(), S = g.out_size();
  const int64_t chunks = ceil_div(S, b.cols);
  const auto in = inputs(o);
  const T* w = weights(in.w, g.C_out * Cig, o.shared);
  for_tasks(g.N * g.groups * chunks, [&](int64_t t) {
    const int64_t chunk = t % chunks, ng = t / chunks, grp = ng % g.groups, n = ng / g.groups;
    const int64_t j0 = chunk * b.cols, j1 = std::min(S, j0 + b.cols);
    // y[n, g][:, j0..j1) = w[g] * x[n, g][:, j0..j1)   (Cog x cols)
    const Block<T> x =
        block(in.x, (n * g.C_in + grp * Cig) * S, Cig, S, j0, j1, slot_scratch(p, b, o));
    // out[g][Cog][j0 .. j1) = w[g][Cog][Cig] * x[g][Cig][j0 .. j1)
    gemm(GemmCall<T>{.M = Cog,
                     .N = j1 - j0,
                     .K = Cig,
                     .A = w + grp * Cog * Cig,
                     .lda = Cig,
                     .B = x.p,
                     .ldb = x.ld,
                     .C = o.out + (n * g.C_out + grp * Cog) * S + j0,
                     .ldc = S,
                     .pack = pack_scratch(p, b, o)});
  });
}

template <typename T>
void backward_data(const Problem& p, const Blocking& b, const Operands<T>& o) {
  if constexpr (std::is_same_v<T, float>)
    if (packs_sources(p, b)) return packed_source_gemm(p, b, o, /*data=*/true);
  const ConvGeometry& g = p.g;
  const int64_t Cig = g.cin_g(), Cog = g.cout_g(), S = g.in_size();
  const int64_t blocks = ceil_div(Cig, b.cblock);
  const auto in = inputs(o);
  const T* w = weights(in.w, g.C_out * Cig, o.shared);
  const int64_t cols = in_place(in.y) ? S : b.cols;  // converting: a chunk of dy at a time
  for_tasks(g.N * g.groups * blocks, [&](int64_t t) {
    const int64_t blk = t % blocks, ng = t / blocks, grp = ng % g.groups, n = ng / g.groups;
    const int64_t c0 = blk * b.cblock, nc = std::min(Cig, c0 + b.cblock) - c0;
    for (int64_t j0 = 0; j0 < S; j0 += cols) {
      const int64_t j1 = std::min(S, j0 + cols);
      // dx[n, g][c-block, j0..j1) = w[g][:, c-block]^T * dy[n, g][:, j0..j1)
      const Block<T> dy =
          block(in.y, (n * g.C_out + grp * Cog) * S, Cog, S, j0, j1, slot_scratch(p, b, o));
      // dx[g][c0 .. c0 + nc][j0 .. j1) = w[g][Cog][c0 .. c0 + nc)ᵀ * dy[g][Cog][j0 .. j1)
      gemm(GemmCall<T>{.ta = true,
                       .M = nc,
                       .N = j1 - j0,
                       .K = Cog,
                       .A = w + grp * Cog * Cig + c0,
                       .lda = Cig,
                       .B = dy.p,
                       .ldb = dy.ld,
                       .C = o.out + (n * g.C_in + grp * Cig + c0) * S + j0,
                       .ldc = S,
                       .pack = pack_scratch(p, b, o)});
    }
  });
}

// backward_weight with both inputs read in place by the packed GEMM (fp32 rounded to fp16, fp16,
// bf16), as for fp32: one GEMM per sample over all S positions, or per bias step where the task
// sums gradBias (from dy as stored, each step's run converted into the slot and summed just
// before the GEMM reads it). Converting a chunk and packing it again made the 16-bit weight
// gradients slower than fp32's (measured: bench/RESULTS.md, design pointwise.weight-in-place).
void weight_in_place(const Problem& p, const Blocking& b, const Operands<float>& o) {
  const ConvGeometry& g = p.g;
  const int64_t Cig = g.cin_g(), Cog = g.cout_g(), S = g.in_size();
  for_weight_tasks(
      p, b, o, [&](int64_t n0, int64_t n1, int64_t grp, int64_t c0, int64_t nc, float* dst) {
        double* sums = task_bias_sums(p, b, o, n0, grp, c0);
        const int64_t step = sums ? std::min(S, bias_step(Cog)) : S;
        for (int64_t n = n0; n < n1; ++n) {
          const int64_t dy_at = (n * g.C_out + grp * Cog) * S,
                        x_at = (n * g.C_in + grp * Cig + c0) * S;
          for (int64_t j0 = 0; j0 < S; j0 += step) {
            const int64_t cols = std::min(S, j0 + step) - j0;
            if (sums)
              for (int64_t oc = 0; oc < Cog; ++oc)
                sums[oc] += o.ysrc.at(dy_at + oc * S + j0).convert_sum(cols, slot_scratch(p, b, o));
            // dw[g][:, c-block] += dy[n, g][:, j0..) (Cog x cols) * x[n, g][c-block, j0..)^T
            const gemm::Mat a = in_place_mat(o.ysrc, dy_at + j0, S, 1);
            const gemm::Mat bt = in_place_mat(o.xsrc, x_at + j0, 1, S);
            gemm::sgemm(Cog, nc, cols, a, bt, true, dst, Cig, pack_scratch(p, b, o));
          }
        }
      });
  finish_bias_sums(p, b, o);
}

template <typename T>
void backward_weight(const Problem& p, const Blocking& b, const Operands<T>& o) {
  if constexpr (std::is_same_v<T, float>)
    if (o.xsrc.kind != SrcKind::kF32 && packs_in_place(b, o.xsrc) && packs_in_place(b, o.ysrc))
      return weight_in_place(p, b, o);
  const ConvGeometry& g = p.g;
  const int64_t Cig = g.cin_g(), Cog = g.cout_g(), S = g.in_size();
  const auto in = inputs(o);
  // converting: a chunk of positions at a time
  const int64_t cols = in_place(in.x) && in_place(in.y) ? S : b.cols;
  for_weight_tasks(p, b, o,
                   [&](int64_t n0, int64_t n1, int64_t grp, int64_t c0, int64_t nc, T* dst) {
                     // converting: dy's chunk [Cog, cols], then x's [nc, cols]
                     T* dy_chunk = slot_scratch(p, b, o);
                     T* x_chunk = in_place(in.x) ? nullptr : dy_chunk + Cog * cols;
                     // gradBias [Cog] of this range and group where this task sums it (fp32 runs),
                     // summed from each dy block as it is read, in steps the cache keeps for the
                     // GEMM.
                     double* sums = nullptr;
                     if constexpr (std::is_same_v<T, float>)
                       sums = task_bias_sums(p, b, o, n0, grp, c0);
                     const int64_t step = sums ? std::min(cols, bias_step(Cog)) : cols;
                     for (int64_t n = n0; n < n1; ++n)
                       for (int64_t j0 = 0; j0 < S; j0 += step) {
                         const int64_t j1 = std::min(S, j0 + step);
                         // dw[g][:, c-block] += dy[n, g][:, j0..j1) * x[n, g][c-block, j0..j1)^T
                         const Block<T> dy =
                             block(in.y, (n * g.C_out + grp * Cog) * S, Cog, S, j0, j1, dy_chunk);
                         const Block<T> x =
                             block(in.x, (n * g.C_in + grp * Cig + c0) * S, nc, S, j0, j1, x_chunk);
                         // dst[Cog][nc] += dy[Cog][j0 .. j1) * x[nc][j0 .. j1)ᵀ
                         gemm(GemmCall<T>{.tb = true,
                                          .M = Cog,
                                          .N = nc,
                                          .K = j1 - j0,
                                          .A = dy.p,
                                          .lda = dy.ld,
                                          .B = x.p,
                                          .ldb = x.ld,
                                          .beta = T(1),
                                          .C = dst,
                                          .ldc = Cig,
                                          .pack = pack_scratch(p, b, o)});
                         if constexpr (std::is_same_v<T, float>)
                           if (sums)
                             for (int64_t oc = 0; oc < Cog; ++oc)
                               sums[oc] += sum_run_f32(dy.p + oc * dy.ld, j1 - j0);
                       }
                   });
  if constexpr (std::is_same_v<T, float>) finish_bias_sums(p, b, o);
}

}  // namespace

// run_f32 reads the inputs as stored (reads_sources); run_f64 reads double copies.
const Algorithm kPointwiseForward{"pointwise_gemm",      Primitive::kForward,
                                  plan_forward,          forward<float>,
                                  forward<double>,       pointwise_bf16::forward,
                                  /*reads_sources=*/true};
const Algorithm kPointwiseData{
    "pointwise_gemm",      Primitive::kBackwardData, plan_data,
    backward_data<float>,  backward_data<double>,    pointwise_bf16::backward_data,
    /*reads_sources=*/true};
const Algorithm kPointwiseWeight{
    "pointwise_gemm",       Primitive::kBackwardWeight, plan_weight,
    backward_weight<float>, backward_weight<double>,    pointwise_bf16::backward_weight,
    /*reads_sources=*/true};

}  // namespace aclnn_cpu::conv
