// grid_gemm: the fp32 GEMM lowering of unit-stride convolutions on the padded grid
// (padded_grid.h; our packed GEMM, AVX2 or AVX-512, only). Each task copies the band of input rows
// its output rows reach into zero-padded rows of its scratch, and every im2col row becomes one
// contiguous run of the band, so a panel row is three vector copies (GridPanels) or, for the weight
// gradient, 16 runs per 16 x 16 transpose (GridPanelsT):
//
//   forward          block (Cog x rows*Wp) = w[g] * grid_col(band);  y rows = the block's valid
//                    columns (the grid's Wp - oW extra columns per row are computed and dropped)
//   backward_weight  dw[g][:, c-block] += dy_grid (Cog x rows*Wp) * grid_col(band)^T, dy placed on
//                    the grid (zeros in the extra columns) a chunk of rows at a time
//
// The inputs are read as stored (reads_sources): the bands and dy's grid rows are converted as
// they are copied, the weights once into the shared scratch.
//
// Cost rules: above ~4M multiply-adds, and only where the grid's extra columns are at most 25% of
// the work (28 x 28 with 3 x 3: 7%; 14 x 14 with 5 x 5: 22%; both gained over the walked gather,
// the first more; measured: bench/RESULTS.md, design grid_gemm.extra-columns).
#include "conv/algorithms/algo_support.h"
#include "conv/engine/algorithms.h"
#include "conv/kernels/im2col/im2col_panels.h"
#include "conv/kernels/grid/padded_grid.h"
#include "gemm/sgemm.h"

namespace aclnn_cpu::conv {
namespace {

constexpr double kOwnGemmMinMacs = double(1 << 22);
constexpr double kMaxGridWaste = 0.25;

Fit common(const Problem& p) {
  Fit f;
  const ConvGeometry& g = p.g;
  if (p.fp64 || !p.packed_gemm()) {
    f.reason = "needs fp32 and AVX2 or AVX-512";
  } else if (!g.unit_stride()) {
    f.reason = "needs unit stride";
  } else if (g.out_size() <= 0 || g.cout_g() <= 0 || g.cin_g() <= 0) {
    f.reason = "empty";
  } else {
    f.applies = true;
    const double waste = grid_waste(g, padded_grid(g));
    f.preferred = p.macs() >= kOwnGemmMinMacs && waste <= kMaxGridWaste;
    f.reason = p.macs() < kOwnGemmMinMacs ? "below 4M multiply-adds"
               : f.preferred ? "unit stride, grid waste " + std::to_string(int(waste * 100)) + "%"
                             : "grid waste " + std::to_string(int(waste * 100)) + "% > 25%";
    f.b.pack_elems = gemm::pack_elems();
  }
  return f;
}

Fit plan_forward(const Problem& p) {
  Fit f = common(p);
  if (!f.applies) return f;
  // Few GEMM rows per column (input channels x taps) cost the grid's panel copies more than the
  // walked gather: MNIST's first layer (1 channel, 3x3) runs slower here than on implicit_gemm
  // (measured: bench/RESULTS.md, design grid_gemm.short-reduction).
  if (f.preferred && p.g.col_rows() < 32) {
    f.preferred = false;
    f.reason = "reduction (C_in/g x taps) below 32";
  }
  const ConvGeometry& g = p.g;
  f.b.rows = grid_rows_per_task(g, g.cout_g(), pieces_wanted(p));
  f.b.slot_elems = grid_scratch(g, g.cout_g(), g.cin_g(), f.b.rows);
  f.b.shared_elems =
      round16(g.groups * gemm::packed_a_elems(g.cout_g(), g.col_rows())) + weights_f32_elems(p);
  return f;
}

Fit plan_weight(const Problem& p) {
  Fit f = common(p);
  if (!f.applies) return f;
  const ConvGeometry& g = p.g;
  plan_weight_split(p, 4, gemm_weight_cblock(p), f.b);
  f.b.rows = grid_rows_per_task(g, g.cout_g(), 1);  // the reduction depth of one GEMM
  f.b.slot_elems = grid_scratch(g, g.cout_g(), f.b.cblock, f.b.rows);
  return f;
}

void forward(const Problem& p, const Blocking& b, const Operands<float>& o) {
  const ConvGeometry& g = p.g;
  const int64_t Cig = g.cin_g(), Cog = g.cout_g(), rows = g.col_rows();
  const int64_t S_in = g.in_size(), S_out = g.out_size();
  const int64_t wpack_g = gemm::packed_a_elems(Cog, rows);
  const float* w = weights_f32(o.wsrc, g.C_out * rows, o.shared + round16(g.groups * wpack_g));
  for_tasks(g.groups, [&](int64_t grp) {
    gemm::pack_a_once(Cog, rows, gemm::Mat{w + grp * Cog * rows, rows, 1},
                      o.shared + grp * wpack_g);
  });
  const PaddedGrid pg = padded_grid(g);
  const int64_t blocks = ceil_div(pg.rows, b.rows);
  for_tasks(g.N * g.groups * blocks, [&](int64_t t) {
    const int64_t blk = t % blocks, ng = t / blocks, grp = ng % g.groups, n = ng / g.groups;
    const int64_t r0 = blk * b.rows, r1 = std::min(pg.rows, r0 + b.rows);
    const int64_t cols = (r1 - r0) * pg.Wp;
    float* block = slot_scratch(p, b, o);        // [Cog, cols]
    float* band = block + Cog * b.rows * pg.Wp;  // then the band of x
    const PaddedGrid bp =
        pad_band(g, pg, o.xsrc.at((n * g.C_in + grp * Cig) * S_in), Cig, r0, r1 - r0, band);
    const GridPanels panels(GridSource{g, bp, band, 0});
    gemm::sgemm_packed(Cog, cols, rows, o.shared + grp * wpack_g, nullptr, nullptr, &panels, false,
                       block, cols, pack_scratch(p, b, o));
    grid_to_output(g, pg, block, Cog, r0, r1, o.out + (n * g.C_out + grp * Cog) * S_out);
  });
}

void backward_weight(const Problem& p, const Blocking& b, const Operands<float>& o) {
  const ConvGeometry& g = p.g;
  const int64_t Cig = g.cin_g(), Cog = g.cout_g(), rows = g.col_rows(), K = g.k_size();
  const int64_t S_in = g.in_size(), S_out = g.out_size();
  const PaddedGrid grid = padded_grid(g);
  for_weight_tasks(
      p, b, o, [&](int64_t n0, int64_t n1, int64_t grp, int64_t c0, int64_t nc, float* dst) {
        float* dy_grid = slot_scratch(p, b, o);          // [Cog, rows*Wp]
        float* band = dy_grid + Cog * b.rows * grid.Wp;  // then nc x band x Wp
        float* pk = pack_scratch(p, b, o);
        for (int64_t n = n0; n < n1; ++n) {
          for (int64_t r0 = 0; r0 < grid.rows; r0 += b.rows) {
            const int64_t r1 = std::min(grid.rows, r0 + b.rows), cols = (r1 - r0) * grid.Wp;
            output_to_grid(g, grid, o.ysrc.at((n * g.C_out + grp * Cog) * S_out), Cog, r0, r1,
                           dy_grid);
            const PaddedGrid bp = pad_band(g, grid, o.xsrc.at((n * g.C_in + grp * Cig + c0) * S_in),
                                           nc, r0, r1 - r0, band);
            const gemm::Mat a{dy_grid, cols, 1};
            const GridPanelsT panels(GridSource{g, bp, band, 0});
            gemm::sgemm_packed(Cog, nc * K, cols, nullptr, &a, nullptr, &panels, true, dst, rows,
                               pk);
          }
        }
      });
}

}  // namespace

const Algorithm kGridGemmForward{"grid_gemm",
                                 Primitive::kForward,
                                 plan_forward,
                                 forward,
                                 /*run_f64=*/nullptr,
                                 /*run_bf16=*/nullptr,
                                 /*reads_sources=*/true,
                                 /*needs=*/cpu::kAvx2Features};
const Algorithm kGridGemmWeight{"grid_gemm",
                                Primitive::kBackwardWeight,
                                plan_weight,
                                backward_weight,
                                /*run_f64=*/nullptr,
                                /*run_bf16=*/nullptr,
                                /*reads_sources=*/true,
                                /*needs=*/cpu::kAvx2Features};

}  // namespace aclnn_cpu::conv
