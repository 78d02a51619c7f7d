// implicit_gemm: the fp32 GEMM lowering with the column matrix never stored (our packed GEMM,
// AVX2 or AVX-512, only):
// its B panels are gathered straight from the input by im2col.h's row walker
// (im2col_panels.h), and the forward's weights are packed once per call into the shared scratch.
//
//   forward          y[n, g][:, cols] = w[g] * col(x[n, g])[:, cols]       (Im2colPanels)
//   backward_weight  dw[g][:, c-block] += dy[n, g] * col(x[n, g, c-block])^T (Im2colPanelsT: rows
//                    gathered 16 at a time into an L1 tile, then 16 x 16 transposes)
//
// Cost rules: above ~4M multiply-adds (the packing scratch pays off); the weight gradient only with
// unit W stride, where rows are gathered with vector loads (strided: explicit chunks were
// faster; measured: bench/RESULTS.md, design implicit_gemm.strided-weight).
#include "conv/algorithms/algo_support.h"
#include "conv/engine/algorithms.h"
#include "conv/kernels/im2col/im2col_panels.h"
#include "gemm/sgemm.h"

namespace aclnn_cpu::conv {
namespace {

constexpr double kOwnGemmMinMacs = double(1 << 22);

// A converting forward whose input is small beside its output (a first layer: one or three input
// channels, dozens of output channels): the fp32 copy of x (and of w) costs little time and
// workspace against the output it feeds, and the panels then gather it as fp32. The chunked
// lowering converted each element once per tap instead (the main job's first bf16 layer ran
// 1.6x its fp32 time on im2col_gemm). Its copy then takes at most a quarter of the output's
// elements' fp32 bytes: within the workspace bound of every output dtype.
bool small_input(const ConvGeometry& g) {
  return 4 * g.C_in * g.in_size() <= g.C_out * g.out_size();
}

// `copy_is_small`: converting inputs are copied whole into fp32 cheaply (small_input).
Fit common(const Problem& p, bool copy_is_small) {
  Fit f;
  if (p.fp64 || !p.packed_gemm()) {
    f.reason = "needs fp32 and AVX2 or AVX-512";
    return f;
  }
  f.applies = true;
  f.preferred = p.macs() >= kOwnGemmMinMacs;
  f.reason = f.preferred ? "column panels gathered from the input" : "below 4M multiply-adds";
  // Its panels gather fp32 only: other inputs need whole fp32 copies (in general workspace beyond
  // 2x the largest 16-bit tensor), where the chunked lowerings convert as they gather.
  if (f.preferred && p.converts) {
    f.preferred = copy_is_small;
    f.reason = copy_is_small ? "column panels gathered from the input's small fp32 copy"
                             : "reads fp32 only: converting inputs take the chunked lowerings";
  }
  f.b.pack_elems = gemm::pack_elems();
  return f;
}

Fit plan_forward(const Problem& p) {
  const ConvGeometry& g = p.g;
  Fit f = common(p, small_input(g));
  f.b.cols = block_size(g.out_size(), pieces_wanted(p));
  f.b.shared_elems = g.groups * gemm::packed_a_elems(g.cout_g(), g.col_rows());
  f.b.adds_bias = true;
  return f;
}

Fit plan_weight(const Problem& p) {
  Fit f = common(p, false);
  if (f.preferred && p.g.stride[2] != 1) {
    f.preferred = false;
    f.reason = "W stride != 1: rows are not vector runs";
  }
  plan_weight_split(p, 4, gemm_weight_cblock(p), f.b);
  f.b.slot_elems = Im2colPanelsT::tile_elems();
  return f;
}

void forward(const Problem& p, const Blocking& b, const Operands<float>& o) {
  const ConvGeometry& g = p.g;
  const int64_t Cig = g.cin_g(), Cog = g.cout_g(), rows = g.col_rows();
  const int64_t S_in = g.in_size(), S_out = g.out_size(), chunks = ceil_div(S_out, b.cols);
  const int64_t wpack_g = gemm::packed_a_elems(Cog, rows);
  for_tasks(g.groups, [&](int64_t grp) {
    gemm::pack_a_once(Cog, rows, gemm::Mat{o.w + grp * Cog * rows, rows, 1},
                      o.shared + grp * wpack_g);
  });
  for_tasks(g.N * g.groups * chunks, [&](int64_t t) {
    const int64_t chunk = t % chunks, ng = t / chunks, grp = ng % g.groups, n = ng / g.groups;
    const int64_t j0 = chunk * b.cols, j1 = std::min(S_out, j0 + b.cols);
    const Im2colPanels panels(g, o.x + (n * g.C_in + grp * Cig) * S_in, j0);
    float* y = o.out + (n * g.C_out + grp * Cog) * S_out + j0;  // [Cog, j1 - j0], ld S_out
    gemm::sgemm_packed(Cog, j1 - j0, rows, o.shared + grp * wpack_g, nullptr, nullptr, &panels,
                       false, y, S_out, pack_scratch(p, b, o));
    if (o.add_bias) add_bias_block(y, S_out, Cog, j1 - j0, o.add_bias + grp * Cog);
  });
}

void backward_weight(const Problem& p, const Blocking& b, const Operands<float>& o) {
  const ConvGeometry& g = p.g;
  const int64_t Cig = g.cin_g(), Cog = g.cout_g(), rows = g.col_rows(), K = g.k_size();
  const int64_t S_in = g.in_size(), S_out = g.out_size();
  for_weight_tasks(
      p, b, o, [&](int64_t n0, int64_t n1, int64_t grp, int64_t c0, int64_t nc, float* dst) {
        float* pk = pack_scratch(p, b, o);
        float* tile = slot_scratch(p, b, o);
        for (int64_t n = n0; n < n1; ++n) {  // dw block += dy[n, g] * col(x[n, g, c-block])^T
          const gemm::Mat a{o.y + (n * g.C_out + grp * Cog) * S_out, S_out, 1};
          const Im2colPanelsT panels(g, o.x + (n * g.C_in + grp * Cig + c0) * S_in, 0, tile);
          gemm::sgemm_packed(Cog, nc * K, S_out, nullptr, &a, nullptr, &panels, true, dst, rows,
                             pk);
        }
      });
}

}  // namespace

const Algorithm kImplicitGemmForward{
    "implicit_gemm",         Primitive::kForward,         plan_forward, forward,
    /*run_f64=*/nullptr,     /*run_bf16=*/nullptr,
    /*reads_sources=*/false, /*needs=*/cpu::kAvx2Features};
const Algorithm kImplicitGemmWeight{
    "implicit_gemm",         Primitive::kBackwardWeight,  plan_weight,
    backward_weight,         /*run_f64=*/nullptr,         /*run_bf16=*/nullptr,
    /*reads_sources=*/false, /*needs=*/cpu::kAvx2Features};

}  // namespace aclnn_cpu::conv
