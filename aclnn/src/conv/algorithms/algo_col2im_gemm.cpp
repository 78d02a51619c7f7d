// col2im_gemm: the general data gradient, for every geometry and dtype, as the adjoint of the
// forward lowering. Tasks own (sample, group, input-channel block)s, so the scatter needs no
// locking:
//
//   dx[n, g, c-block] = col2im(w[g][:, c-block]^T (cb*K x Cog) * dy[n, g] (Cog x S_out))
//
// computed a chunk of columns at a time into the task's scratch. With our fp32 GEMM and one channel
// block per group, w[g]^T is packed once per call into the shared scratch (packing it from the
// transposed view per (sample, chunk) reads one cache line per element group; measured:
// bench/RESULTS.md, design col2im_gemm.pack-wT). fp32 runs read the inputs as stored
// (reads_sources): fp16 / bf16 / rounded fp32 dy is converted a chunk of columns at a time into the
// task's scratch, the weights once into the shared scratch (after the packed ones), so no
// whole-tensor fp32 copy; USE_FP16 dy on the packed path is not converted at all: the GEMM rounds
// it to fp16 as it packs it (gemm::Mat::fp16).
#include <cstring>
#include <type_traits>
#include <utility>

#include "conv/algorithms/algo_support.h"
#include "conv/engine/algorithms.h"
#include "conv/kernels/im2col/im2col.h"
#include "gemm/sgemm.h"

namespace aclnn_cpu::conv {
namespace {

Fit plan(const Problem& p) {
  Fit f;
  f.applies = f.preferred = true;
  f.reason = "general lowering (GEMM into column chunks, scattered back)";
  const ConvGeometry& g = p.g;
  const int64_t K = g.k_size(), Cig = g.cin_g();
  f.b.pack_elems = p.own_gemm() ? gemm::pack_elems() : 0;
  f.b.cblock = block_size(Cig, pieces_wanted(p));
  // Converting: the dy chunk [Cog, cols] shares the column chunk's budget.
  const int64_t chunk_rows = f.b.cblock * K + (p.converts ? g.cout_g() : 0);
  f.b.cols = chunk_columns(p, chunk_rows, g.out_size(), p.fp64 ? 8 : 4, 1);
  f.b.slot_elems = chunk_rows * f.b.cols;
  if (f.b.pack_elems > 0 && f.b.cblock == Cig) {  // w^T of every group packed once
    f.b.shared_elems = g.groups * gemm::packed_a_elems(g.col_rows(), g.cout_g());
    // converted first, a group at a time, in the slot of the thread that packs it
    if (p.converts) f.b.slot_elems = std::max(f.b.slot_elems, g.cout_g() * g.col_rows());
  } else {
    f.b.shared_elems = weights_f32_elems(p);  // the weights converted to fp32
  }
  return f;
}

// The chunk dy[n, g][:, j0 .. j0 + cols) (Cog rows from element `at`, row stride S_out): in place
// (fp64, fp32 as is), or converted into `scratch` [Cog, cols]. Returns it and its row stride.
std::pair<const double*, int64_t> dy_chunk(const Problem& p, const Operands<double>& o, int64_t at,
                                           int64_t, double*) {
  return {o.y + at, p.g.out_size()};
}
std::pair<const float*, int64_t> dy_chunk(const Problem& p, const Operands<float>& o, int64_t at,
                                          int64_t cols, float* scratch) {
  if (const float* y = f32_data(o.ysrc)) return {y + at, p.g.out_size()};
  convert_block(o.ysrc.at(at), p.g.cout_g(), p.g.out_size(), cols, scratch, cols);
  return {scratch, cols};
}

// The same chunk as the packed GEMM's B operand: USE_FP16 dy read in place and rounded to fp16 as
// the GEMM packs it, no converted chunk written and read again, which brings USE_FP16 close to fp32
// (measured: bench/RESULTS.md, design col2im_gemm.usefp16-in-place); else dy_chunk's.
gemm::Mat packed_dy_chunk(const Problem& p, const Operands<float>& o, int64_t at, int64_t cols,
                          float* scratch) {
  if (o.ysrc.kind == SrcKind::kF32Fp16 && gemm::packs_fp16())
    return {static_cast<const float*>(o.ysrc.data) + at, p.g.out_size(), 1, true};
  const auto [dy, ld] = dy_chunk(p, o, at, cols, scratch);
  return {dy, ld, 1};
}

template <typename T>
void run(const Problem& p, const Blocking& b, const Operands<T>& o) {
  const ConvGeometry& g = p.g;
  const int64_t Cig = g.cin_g(), Cog = g.cout_g(), rows = g.col_rows(), K = g.k_size();
  const int64_t S_in = g.in_size(), S_out = g.out_size(), blocks = ceil_div(Cig, b.cblock);
  const bool packed_w = std::is_same_v<T, float> && b.pack_elems > 0 && b.cblock == Cig;
  const int64_t wpack_g = packed_w ? gemm::packed_a_elems(rows, Cog) : 0;
  const T* w = o.w;
  if constexpr (std::is_same_v<T, float>) {
    if (packed_w) {
      for_tasks(g.groups, [&](int64_t grp) {
        const Source wg = o.wsrc.at(grp * Cog * rows);
        const float* w32 = weights_f32(wg, Cog * rows, slot_scratch(p, b, o));
        gemm::pack_a_once(rows, Cog, gemm::Mat{w32, 1, rows}, o.shared + grp * wpack_g);
      });
    } else {
      w = weights_f32(o.wsrc, g.C_out * rows, o.shared);
    }
  }
  for_tasks(g.N * g.groups * blocks, [&](int64_t t) {
    const int64_t blk = t % blocks, ng = t / blocks, grp = ng % g.groups, n = ng / g.groups;
    const int64_t c0 = blk * b.cblock, nc = std::min(Cig, c0 + b.cblock) - c0;
    const int64_t dy0 = (n * g.C_out + grp * Cog) * S_out;
    T* dxg = o.out + (n * g.C_in + grp * Cig + c0) * S_in;
    T* col = slot_scratch(p, b, o);  // [nc*K, cols]
    T* pk = pack_scratch(p, b, o);
    T* dy_scratch = col + nc * K * b.cols;  // a converted dy chunk [Cog, cols]
    std::memset(dxg, 0, static_cast<size_t>(nc * S_in) * sizeof(T));
    for (int64_t j0 = 0; j0 < S_out; j0 += b.cols) {
      const int64_t j1 = std::min(S_out, j0 + b.cols);
      if constexpr (std::is_same_v<T, float>) {
        if (packed_w) {  // the whole group's w^T, packed above (nc == Cig)
          const gemm::Mat bm = packed_dy_chunk(p, o, dy0 + j0, j1 - j0, dy_scratch);
          gemm::sgemm_packed(rows, j1 - j0, Cog, o.shared + grp * wpack_g, nullptr, &bm, nullptr,
                             false, col, j1 - j0, pk);
          col2im(g, col, nc, j0, j1, dxg);
          continue;
        }
      }
      const auto [dy, ld] = dy_chunk(p, o, dy0 + j0, j1 - j0, dy_scratch);
      const T* wg = w + grp * Cog * rows + c0 * K;  // columns c0*K.. of w[g] (ld rows)
      // col[nc * K][j1 - j0] = w[g]ᵀ (its columns c0 * K ..) * dy[g][Cog][j0 .. j1)
      gemm(GemmCall<T>{.ta = true,
                       .M = nc * K,
                       .N = j1 - j0,
                       .K = Cog,
                       .A = wg,
                       .lda = rows,
                       .B = dy,
                       .ldb = ld,
                       .C = col,
                       .ldc = j1 - j0,
                       .pack = pk});
      col2im(g, col, nc, j0, j1, dxg);
    }
  });
}

}  // namespace

const Algorithm kCol2imGemmData{"col2im_gemm",         Primitive::kBackwardData, plan, run<float>,
                                run<double>,           /*run_bf16=*/nullptr,
                                /*reads_sources=*/true};

}  // namespace aclnn_cpu::conv
