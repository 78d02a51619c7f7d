// im2col_gemm: the general lowering, for every geometry and dtype. The column matrix of a
// (sample, group) is built in chunks of columns (output positions) into the task's scratch, about
// 2 MiB each, and multiplied:
//
//   forward          y[n, g][:, chunk]  (Cog x cols)  = w[g] (Cog x Cig*K) * col(x[n, g])[:, chunk]
//   backward_weight  dw[g][:, c-block] (Cog x cb*K) += dy[n, g][:, chunk] * col(x[n, g, c-block])^T
//
// fp32 GEMMs run on our AVX-512 kernel above ~4M multiply-adds (OpenBLAS below), fp64 on OpenBLAS.
#include "conv/algo_support.h"
#include "conv/algorithms.h"
#include "conv/im2col.h"
#include "gemm/sgemm.h"

namespace aclnn_cpu::conv {
namespace {

int64_t elem_bytes(const Problem& p) {
  return p.fp64 ? 8 : 4;
}

Fit plan_forward(const Problem& p) {
  Fit f;
  f.applies = f.preferred = true;
  f.reason = "general lowering (explicit column chunks)";
  const ConvGeometry& g = p.g;
  f.b.pack_elems = p.own_gemm() ? gemm::pack_elems() : 0;
  f.b.cols = chunk_columns(g.col_rows(), g.out_size(), elem_bytes(p), pieces_wanted(p));
  f.b.slot_elems = g.col_rows() * f.b.cols;
  return f;
}

Fit plan_weight(const Problem& p) {
  Fit f;
  f.applies = f.preferred = true;
  f.reason = "general lowering (explicit column chunks)";
  const ConvGeometry& g = p.g;
  f.b.pack_elems = p.own_gemm() ? gemm::pack_elems() : 0;
  plan_weight_split(p, elem_bytes(p), gemm_weight_cblock(p), f.b);
  f.b.cols = chunk_columns(f.b.cblock * g.k_size(), g.out_size(), elem_bytes(p), 1);
  f.b.slot_elems = f.b.cblock * g.k_size() * f.b.cols;
  return f;
}

template <typename T>
void forward(const Problem& p, const Blocking& b, const Operands<T>& o) {
  const ConvGeometry& g = p.g;
  const int64_t Cig = g.cin_g(), Cog = g.cout_g(), rows = g.col_rows();
  const int64_t S_in = g.in_size(), S_out = g.out_size(), chunks = ceil_div(S_out, b.cols);
  for_tasks(g.N * g.groups * chunks, [&](int64_t t) {
    const int64_t chunk = t % chunks, ng = t / chunks, grp = ng % g.groups, n = ng / g.groups;
    const int64_t j0 = chunk * b.cols, j1 = std::min(S_out, j0 + b.cols);
    T* col = slot_scratch(p, b, o);  // [Cig*K, j1 - j0]
    im2col(g, o.x + (n * g.C_in + grp * Cig) * S_in, Cig, j0, j1, col);
    gemm(false, false, Cog, j1 - j0, rows, o.w + grp * Cog * rows, rows, col, j1 - j0, T(0),
         o.out + (n * g.C_out + grp * Cog) * S_out + j0, S_out, pack_scratch(p, b, o));
  });
}

template <typename T>
void backward_weight(const Problem& p, const Blocking& b, const Operands<T>& o) {
  const ConvGeometry& g = p.g;
  const int64_t Cig = g.cin_g(), Cog = g.cout_g(), rows = g.col_rows(), K = g.k_size();
  const int64_t S_in = g.in_size(), S_out = g.out_size();
  for_weight_tasks(p, b, o,
                   [&](int64_t n0, int64_t n1, int64_t grp, int64_t c0, int64_t nc, T* dst) {
                     T* col = slot_scratch(p, b, o);  // [nc*K, cols]
                     T* pk = pack_scratch(p, b, o);
                     for (int64_t n = n0; n < n1; ++n) {
                       const T* dyg = o.y + (n * g.C_out + grp * Cog) * S_out;
                       const T* xg = o.x + (n * g.C_in + grp * Cig + c0) * S_in;
                       for (int64_t j0 = 0; j0 < S_out; j0 += b.cols) {
                         const int64_t j1 = std::min(S_out, j0 + b.cols);
                         im2col(g, xg, nc, j0, j1, col);
                         gemm(false, true, Cog, nc * K, j1 - j0, dyg + j0, S_out, col, j1 - j0,
                              T(1), dst, rows, pk);
                       }
                     }
                   });
}

}  // namespace

const Algorithm kIm2colGemmForward{"im2col_gemm", Primitive::kForward, plan_forward, forward<float>,
                                   forward<double>};
const Algorithm kIm2colGemmWeight{"im2col_gemm", Primitive::kBackwardWeight, plan_weight,
                                  backward_weight<float>, backward_weight<double>};

}  // namespace aclnn_cpu::conv
