// im2col_gemm: the general lowering, for every geometry and dtype. The column matrix of a
// (sample, group) is built in chunks of columns (output positions) into the task's scratch, about
// 2 MiB each, and multiplied:
//
//   forward          y[n, g][:, chunk]  (Cog x cols)  = w[g] (Cog x Cig*K) * col(x[n, g])[:, chunk]
//   backward_weight  dw[g][:, c-block] (Cog x cb*K) += dy[n, g][:, chunk] * col(x[n, g, c-block])^T
//
// fp32 GEMMs run on our AVX-512 kernel above ~4M multiply-adds (OpenBLAS below), fp64 on OpenBLAS.
// fp32 runs read the inputs as stored (reads_sources): fp16 / bf16 / rounded fp32 x is converted
// as the column chunk is gathered, dy a chunk of columns at a time into the task's scratch, the
// weights once into the shared scratch, so no whole-tensor fp32 copy is made.
#include <type_traits>

#include "conv/algorithms/algo_support.h"
#include "conv/engine/algorithms.h"
#include "conv/kernels/im2col/im2col.h"
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
  f.b.cols = chunk_columns(p, g.col_rows(), g.out_size(), elem_bytes(p), pieces_wanted(p));
  f.b.slot_elems = g.col_rows() * f.b.cols;
  f.b.shared_elems = weights_f32_elems(p);
  return f;
}

// Weight gradient with converting inputs: x[n, g, c-block] (cblock x S_in) converted once per
// sample into the task's scratch where that takes at most kPlanesBytes, then gathered as fp32.
// (Gathering from the source converts each element once per tap and W phase, which made the 7x7
// stride-2 first layer's fp16 weight gradient markedly slower than its fp32 one; measured:
// bench/RESULTS.md, design im2col_gemm.convert-planes.)
constexpr int64_t kPlanesBytes = int64_t{2} << 20;
int64_t planes_elems(const Problem& p, const Blocking& b) {
  const int64_t elems = b.cblock * p.g.in_size();
  return p.converts && elems * 4 <= kPlanesBytes ? round16(elems) : 0;
}

Fit plan_weight(const Problem& p) {
  Fit f;
  f.applies = f.preferred = true;
  f.reason = "general lowering (explicit column chunks)";
  const ConvGeometry& g = p.g;
  f.b.pack_elems = p.own_gemm() ? gemm::pack_elems() : 0;
  plan_weight_split(p, elem_bytes(p), gemm_weight_cblock(p), f.b);
  f.b.cols = chunk_columns(p, f.b.cblock * g.k_size(), g.out_size(), elem_bytes(p), 1);
  f.b.slot_elems = f.b.cblock * g.k_size() * f.b.cols;
  if (p.converts) f.b.slot_elems += g.cout_g() * f.b.cols;  // then the dy chunk, converted
  f.b.slot_elems += planes_elems(p, f.b);                   // then x's planes, converted
  return f;
}

// col [nchan*K, j1-j0] of channels from `c` of sample n: from the fp64 copy, or (fp32 runs) from
// x as stored, converted as it is gathered.
void gather(const Problem& p, const Operands<double>& o, int64_t c, int64_t nchan, int64_t j0,
            int64_t j1, double* col) {
  im2col(p.g, o.x + c * p.g.in_size(), nchan, j0, j1, col);
}
void gather(const Problem& p, const Operands<float>& o, int64_t c, int64_t nchan, int64_t j0,
            int64_t j1, float* col) {
  if (const float* x = f32_data(o.xsrc))
    return im2col(p.g, x + c * p.g.in_size(), nchan, j0, j1, col);
  im2col(p.g, o.xsrc.at(c * p.g.in_size()), nchan, j0, j1, col);
}

template <typename T>
void forward(const Problem& p, const Blocking& b, const Operands<T>& o) {
  const ConvGeometry& g = p.g;
  const int64_t Cig = g.cin_g(), Cog = g.cout_g(), rows = g.col_rows();
  const int64_t S_out = g.out_size(), chunks = ceil_div(S_out, b.cols);
  const T* w = o.w;
  if constexpr (std::is_same_v<T, float>) w = weights_f32(o.wsrc, g.C_out * rows, o.shared);
  for_tasks(g.N * g.groups * chunks, [&](int64_t t) {
    const int64_t chunk = t % chunks, ng = t / chunks, grp = ng % g.groups, n = ng / g.groups;
    const int64_t j0 = chunk * b.cols, j1 = std::min(S_out, j0 + b.cols);
    T* col = slot_scratch(p, b, o);  // [Cig*K, j1 - j0]
    gather(p, o, n * g.C_in + grp * Cig, Cig, j0, j1, col);
    // out[g][Cog][j0 .. j1) = w[g][Cog][rows] * col[rows][j1 - j0]
    gemm(GemmCall<T>{.M = Cog,
                     .N = j1 - j0,
                     .K = rows,
                     .A = w + grp * Cog * rows,
                     .lda = rows,
                     .B = col,
                     .ldb = j1 - j0,
                     .C = o.out + (n * g.C_out + grp * Cog) * S_out + j0,
                     .ldc = S_out,
                     .pack = pack_scratch(p, b, o)});
  });
}

template <typename T>
void backward_weight(const Problem& p, const Blocking& b, const Operands<T>& o) {
  const ConvGeometry& g = p.g;
  const int64_t Cig = g.cin_g(), Cog = g.cout_g(), rows = g.col_rows(), K = g.k_size();
  const int64_t S_out = g.out_size();
  for_weight_tasks(
      p, b, o, [&](int64_t n0, int64_t n1, int64_t grp, int64_t c0, int64_t nc, T* dst) {
        T* col = slot_scratch(p, b, o);       // [nc*K, cols]
        T* dy_chunk = col + nc * K * b.cols;  // [Cog, cols]: dy converted (fp32 runs, other dtypes)
        T* planes = planes_elems(p, b) > 0 ? dy_chunk + Cog * b.cols : nullptr;  // [nc, S_in]
        T* pk = pack_scratch(p, b, o);
        for (int64_t n = n0; n < n1; ++n) {
          const int64_t dy0 = (n * g.C_out + grp * Cog) * S_out, x0 = n * g.C_in + grp * Cig + c0;
          bool converted = false;  // x's planes converted into `planes`
          if constexpr (std::is_same_v<T, float>) {
            if (planes && !f32_data(o.xsrc)) {
              o.xsrc.at(x0 * g.in_size()).convert(nc * g.in_size(), 1, planes);
              converted = true;
            }
          }
          for (int64_t j0 = 0; j0 < S_out; j0 += b.cols) {
            const int64_t j1 = std::min(S_out, j0 + b.cols);
            if (converted) {
              im2col(g, planes, nc, j0, j1, col);
            } else {
              gather(p, o, x0, nc, j0, j1, col);
            }
            const T* dy = nullptr;  // [Cog, j1 - j0] at row stride ld
            int64_t ld = S_out;
            if constexpr (std::is_same_v<T, float>) {
              dy = f32_data(o.ysrc) ? f32_data(o.ysrc) + dy0 + j0 : nullptr;
              if (!dy) {
                convert_block(o.ysrc.at(dy0 + j0), Cog, S_out, j1 - j0, dy_chunk, j1 - j0);
                dy = dy_chunk, ld = j1 - j0;
              }
            } else {
              dy = o.y + dy0 + j0;
            }
            // dst[Cog][nc * K] += dy[Cog][j1 - j0] * col[nc * K][j1 - j0]ᵀ
            gemm(GemmCall<T>{.tb = true,
                             .M = Cog,
                             .N = nc * K,
                             .K = j1 - j0,
                             .A = dy,
                             .lda = ld,
                             .B = col,
                             .ldb = j1 - j0,
                             .beta = T(1),
                             .C = dst,
                             .ldc = rows,
                             .pack = pk});
          }
        }
      });
}

}  // namespace

const Algorithm kIm2colGemmForward{"im2col_gemm",        Primitive::kForward,   plan_forward,
                                   forward<float>,       forward<double>,
                                   /*run_bf16=*/nullptr, /*reads_sources=*/true};
const Algorithm kIm2colGemmWeight{
    "im2col_gemm",          Primitive::kBackwardWeight, plan_weight,
    backward_weight<float>, backward_weight<double>,    /*run_bf16=*/nullptr,
    /*reads_sources=*/true};

}  // namespace aclnn_cpu::conv
