// pointwise_gemm: 1x1(x1) kernels with unit stride and no padding. The input of a (sample, group)
// already is its im2col matrix [Cig, S], so every primitive is one GEMM per task on the tensors:
//
//   forward          y[n, g]  (Cog x S)  = w[g] (Cog x Cig) * x[n, g] (Cig x S)
//   backward_data    dx[n, g] (Cig x S)  = w[g]^T * dy[n, g]
//   backward_weight  dw[g]    (Cog x Cig) = sum_n dy[n, g] * x[n, g]^T
//
// bf16 inputs (where bf16_dot_kernels()) run the same GEMMs with the AVX512_BF16 dot kernels
// (algo_pointwise_bf16.cpp).
#include "conv/algo_support.h"
#include "conv/algorithms.h"
#include "conv/pointwise_bf16.h"
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

Fit plan_forward(const Problem& p) {
  Fit f = applies(p);
  if (p.bf16) {
    f.b.pack_elems = 0;
    if (f.applies) pointwise_bf16::plan_forward(p, f.b);
    return f;
  }
  f.b.cols = chunk_columns(0, p.g.out_size(), elem_bytes(p), pieces_wanted(p));
  return f;
}

Fit plan_data(const Problem& p) {
  Fit f = applies(p);
  if (p.bf16) {
    f.b.pack_elems = 0;
    if (f.applies) pointwise_bf16::plan_data(p, f.b);
    return f;
  }
  f.b.cblock = block_size(p.g.cin_g(), pieces_wanted(p));
  return f;
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
  return f;
}

template <typename T>
void forward(const Problem& p, const Blocking& b, const Operands<T>& o) {
  const ConvGeometry& g = p.g;
  const int64_t Cig = g.cin_g(), Cog = g.cout_g(), S = g.out_size();
  const int64_t chunks = ceil_div(S, b.cols);
  for_tasks(g.N * g.groups * chunks, [&](int64_t t) {
    const int64_t chunk = t % chunks, ng = t / chunks, grp = ng % g.groups, n = ng / g.groups;
    const int64_t j0 = chunk * b.cols, j1 = std::min(S, j0 + b.cols);
    gemm(false, false, Cog, j1 - j0, Cig, o.w + grp * Cog * Cig, Cig,
         o.x + (n * g.C_in + grp * Cig) * S + j0, S, T(0),
         o.out + (n * g.C_out + grp * Cog) * S + j0, S, pack_scratch(p, b, o));
  });
}

template <typename T>
void backward_data(const Problem& p, const Blocking& b, const Operands<T>& o) {
  const ConvGeometry& g = p.g;
  const int64_t Cig = g.cin_g(), Cog = g.cout_g(), S = g.in_size();
  const int64_t blocks = ceil_div(Cig, b.cblock);
  for_tasks(g.N * g.groups * blocks, [&](int64_t t) {
    const int64_t blk = t % blocks, ng = t / blocks, grp = ng % g.groups, n = ng / g.groups;
    const int64_t c0 = blk * b.cblock, nc = std::min(Cig, c0 + b.cblock) - c0;
    gemm(true, false, nc, S, Cog, o.w + grp * Cog * Cig + c0, Cig,
         o.y + (n * g.C_out + grp * Cog) * S, S, T(0), o.out + (n * g.C_in + grp * Cig + c0) * S, S,
         pack_scratch(p, b, o));
  });
}

template <typename T>
void backward_weight(const Problem& p, const Blocking& b, const Operands<T>& o) {
  const ConvGeometry& g = p.g;
  const int64_t Cig = g.cin_g(), Cog = g.cout_g(), S = g.in_size();
  for_weight_tasks(
      p, b, o, [&](int64_t n0, int64_t n1, int64_t grp, int64_t c0, int64_t nc, T* dst) {
        for (int64_t n = n0; n < n1; ++n)
          gemm(false, true, Cog, nc, S, o.y + (n * g.C_out + grp * Cog) * S, S,
               o.x + (n * g.C_in + grp * Cig + c0) * S, S, T(1), dst, Cig, pack_scratch(p, b, o));
      });
}

}  // namespace

const Algorithm kPointwiseForward{"pointwise_gemm", Primitive::kForward, plan_forward,
                                  forward<float>,   forward<double>,     pointwise_bf16::forward};
const Algorithm kPointwiseData{
    "pointwise_gemm",     Primitive::kBackwardData, plan_data,
    backward_data<float>, backward_data<double>,    pointwise_bf16::backward_data};
const Algorithm kPointwiseWeight{
    "pointwise_gemm",       Primitive::kBackwardWeight, plan_weight,
    backward_weight<float>, backward_weight<double>,    pointwise_bf16::backward_weight};

}  // namespace aclnn_cpu::conv
