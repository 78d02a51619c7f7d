// plan_kernels: how the convolution primitives of kernels.h split their work and which paths
// they take, decided in phase 1 (the plan sizes the workspace).
#include <algorithm>

#include "conv/depthwise.h"
#include "conv/im2col_panels.h"
#include "conv/kernels.h"
#include "conv/padded_grid.h"
#include "gemm/sgemm.h"

namespace aclnn_cpu::conv {
namespace {

// Column-buffer budget per thread: the im2col chunk of one task stays around L2 size.
constexpr int64_t kColumnBudgetBytes = int64_t{2} << 20;
// Fewest columns per chunk (below this GEMM efficiency collapses), unless the row is shorter.
constexpr int64_t kMinColumns = 16;
// Smallest convolution (multiply-adds of one pass) worth the GEMM packing workspace.
constexpr double kOwnGemmMinMacs = double(1 << 22);
// Padded grid (padded_grid.h): largest fraction of dropped grid columns, result block per task.
constexpr double kMaxGridWaste = 0.25;  // 14 x 14 with a 5 x 5 kernel: 22%
constexpr int64_t kGridBlockBytes = int64_t{512} << 10;
// Cap on the memory spent on grad-weight partials when splitting the batch for parallelism.
constexpr int64_t kPartialBudgetBytes = int64_t{256} << 20;

// Columns per chunk for a column matrix of `rows` rows: within the budget, at least kMinColumns,
// at most `total`, and no more than total / want_chunks (rounded up) so there are enough tasks.
int64_t chunk_columns(int64_t rows, int64_t total, size_t elem_bytes, int64_t want_chunks) {
  if (total <= 0) return 1;
  int64_t cols = rows > 0 ? kColumnBudgetBytes / (rows * static_cast<int64_t>(elem_bytes)) : total;
  cols = std::min(cols, ceil_div(total, std::max<int64_t>(1, want_chunks)));
  return std::clamp<int64_t>(cols, std::min(kMinColumns, total), total);
}

bool unit_stride(const ConvGeometry& g) {
  return g.stride[0] == 1 && g.stride[1] == 1 && g.stride[2] == 1;
}

// The weight-gradient GEMM's N is (channel block) x K, computed in panels of 48 columns. Among
// the block sizes >= `base` that divide C_in/g and still give every thread a task, pick the one
// wasting the least of its last panel (e.g. 3x3x3 kernels: 16 channels = 432 = 9 x 48 columns
// rather than 8 = 216 in 5 panels).
int64_t panel_friendly_block(const ConvGeometry& g, int slots, int64_t base) {
  const int64_t Cig = g.cin_g(), K = g.k_size(), kPanel = 48;
  int64_t best = base;
  double best_waste = 1.0;
  for (int64_t cb = base; cb <= Cig; ++cb) {
    if (Cig % cb != 0 || (Cig / cb) * g.groups < slots) continue;
    const int64_t n = cb * K, padded = ceil_div(n, kPanel) * kPanel;
    const double waste = static_cast<double>(padded - n) / static_cast<double>(padded);
    if (waste < best_waste - 1e-9) best = cb, best_waste = waste;
  }
  return best;
}

// Splits `count` items into `want` blocks of equal size (rounded up); returns the block size.
int64_t block_size(int64_t count, int64_t want) {
  if (count <= 0) return 1;
  return ceil_div(count, std::clamp<int64_t>(want, 1, count));
}

// Grid rows per task for running the forward-form GEMM of `f` (a unit-stride conv with `m`
// output channels per group) on the padded grid, or 0 where it does not apply: the grid needs
// every stride 1, and it computes its extra columns for nothing, so it is used only where they
// are few enough (a 28 x 28, 3 x 3 layer wastes 7% and gained ~25% over the walked gather;
// 14 x 14 with 5 x 5 wastes 22% and still gains ~10%).
int64_t grid_rows_per_task(const ConvGeometry& f, int64_t m, int64_t want) {
  if (!unit_stride(f) || f.out_size() <= 0 || m <= 0) return 0;
  const PaddedGrid pg = padded_grid(f);
  if (grid_waste(f, pg) > kMaxGridWaste) return 0;
  // The task's result block (m x rows x Wp) stays around half of L2.
  const int64_t by_budget = std::max<int64_t>(1, kGridBlockBytes / (m * pg.Wp * 4));
  return std::clamp<int64_t>(std::min(by_budget, ceil_div(pg.rows, std::max<int64_t>(want, 1))), 1,
                             pg.rows);
}

// Per-slot scratch of a task on the padded grid: its m x rows x Wp result (or dy) block and the
// band of `channels` padded input channels it reads.
int64_t grid_scratch(const ConvGeometry& f, int64_t m, int64_t channels, int64_t rows) {
  const PaddedGrid pg = padded_grid(f);
  return (m * rows + channels * band_rows(f, pg, rows)) * pg.Wp;
}

}  // namespace

ConvGeometry flipped_for_data(const ConvGeometry& g) {
  // With unit stride, dx[c, i] = sum_{o, q} w[o, c, q] * dy[o, i + pb - q*dil]. Substituting
  // q' = K-1-q (every kernel dim reversed) gives a regular conv of dy with weight
  // w'[c, o, q'] = w[o, c, K-1-q'], padding pb' = dil*(k-1) - pb (may be negative: im2col's
  // bounds handle any offset) and output size = the input size.
  ConvGeometry f = g;
  f.C_in = g.C_out;
  f.C_out = g.C_in;
  f.in = g.out;
  f.out = g.in;
  for (int d = 0; d < 3; ++d) {
    f.pad_before[d] = g.dil[d] * (g.k[d] - 1) - g.pad_before[d];
    f.pad_after[d] = g.dil[d] * (g.k[d] - 1) - g.pad_after[d];
  }
  return f;
}

KernelPlan plan_kernels(const ConvGeometry& g, int slots, size_t elem_bytes, KernelUse use) {
  KernelPlan p;
  p.slots = std::max(1, slots);
  p.pointwise = g.pointwise();
  if (elem_bytes == sizeof(float) && use_depthwise(g)) {
    p.depthwise = true;  // direct kernels (depthwise.h): no scratch at all
    return p;
  }
  const int64_t K = g.k_size(), Cig = g.cin_g(), S_out = g.out_size();
  const int64_t items = std::max<int64_t>(1, g.N * g.groups);  // (sample, group) pairs
  const int64_t want = ceil_div(4 * p.slots, items);           // extra splits per pair wanted
  // Our fp32 GEMM packs into per-slot workspace; problems too small for it to matter run on
  // OpenBLAS instead, so they keep needing no workspace at all (e.g. a tiny pointwise conv).
  const double macs = static_cast<double>(g.N) * g.C_out * S_out * Cig * K;
  if (elem_bytes == sizeof(float) && macs >= kOwnGemmMinMacs) p.pack_elems = gemm::pack_elems();
  // With our AVX-512 GEMM, the forward-form GEMMs (forward, flipped data gradient) and the weight
  // gradient gather their column panels straight from the input (im2col_panels.h): no column
  // buffer, so their column ranges only need to give every thread work; the forward-form
  // weights are packed once per call.
  p.implicit = p.pack_elems > 0 && gemm::have_avx512() && !p.pointwise;
  auto task_columns = [&](int64_t total) {
    return total <= 0 ? 1 : ceil_div(total, std::clamp<int64_t>(want, 1, total));
  };
  int64_t col = 0;
  if (use.forward) {
    if (p.implicit) {
      p.fwd_cols = task_columns(S_out);
      p.wpack_elems = g.groups * gemm::packed_a_elems(g.cout_g(), Cig * K);
      p.fwd_grid_rows = grid_rows_per_task(g, g.cout_g(), want);
      if (p.fwd_grid_rows > 0)
        col = std::max(col, grid_scratch(g, g.cout_g(), Cig, p.fwd_grid_rows));
    } else {
      p.fwd_cols = chunk_columns(p.pointwise ? 0 : Cig * K, S_out, elem_bytes, want);
      if (!p.pointwise) col = std::max(col, Cig * K * p.fwd_cols);
    }
  }
  if (use.backward_data) {
    // fp32, unit stride: the data gradient is itself a forward conv (flipped_for_data), which
    // needs no col2im scatter and no zeroing of dx; the GEMM writes dx directly. Its per-column
    // overhead (gathering and packing Cog*K rows) is amortised over M = Cig output rows, while
    // the col2im form's (Cig*K rows stored and scattered back) is amortised over its reduction
    // depth Cog. On the padded grid the gather is a plain copy and the flip wins even for
    // Cig < Cog (2 threads, medians of 5: mnist2 103 -> 116, c3d 137 -> 154 GFLOP/s); with a
    // walked or explicit im2col flip only when Cig >= Cog (32 -> 64 channels measured slower).
    const bool flip_ok = elem_bytes == sizeof(float) && !p.pointwise && unit_stride(g);
    const ConvGeometry f = flipped_for_data(g);
    const int64_t flip_grid_rows = flip_ok && p.implicit ? grid_rows_per_task(f, Cig, want) : 0;
    if (flip_ok && (flip_grid_rows > 0 || Cig >= g.cout_g())) {
      p.bd_flip = true;
      p.wflip_elems = g.C_in * g.cout_g() * K;
      if (p.implicit) {
        p.bd_fwd_cols = task_columns(g.in_size());
        p.wpack_elems =
            std::max(p.wpack_elems, g.groups * gemm::packed_a_elems(Cig, g.cout_g() * K));
        p.bd_grid_rows = flip_grid_rows;
        if (p.bd_grid_rows > 0)
          col = std::max(col, grid_scratch(f, Cig, g.cout_g(), p.bd_grid_rows));
      } else {
        p.bd_fwd_cols = chunk_columns(g.cout_g() * K, g.in_size(), elem_bytes, want);
        col = std::max(col, g.cout_g() * K * p.bd_fwd_cols);
      }
    } else {
      p.bd_cblock = block_size(Cig, want);
      p.bd_cols = chunk_columns(p.bd_cblock * K, S_out, elem_bytes, 1);
      if (!p.pointwise) col = std::max(col, p.bd_cblock * K * p.bd_cols);
      // With one channel block per group, w[g]^T is packed once per call instead of once per
      // (sample, chunk): packing it from the transposed view reads one cache line per element
      // group, ~7% of a stride-2 layer's time when repeated per sample.
      p.bd_packed_w = p.implicit && p.bd_cblock == Cig;
      if (p.bd_packed_w)
        p.wpack_elems =
            std::max(p.wpack_elems, g.groups * gemm::packed_a_elems(Cig * K, g.cout_g()));
    }
  }
  if (use.backward_weight) {
    // Split input channels first (no reduction needed), then batch ranges with partials.
    p.bw_cblock = block_size(Cig, ceil_div(2 * p.slots, std::max<int64_t>(1, g.groups)));
    if (elem_bytes == sizeof(float)) p.bw_cblock = panel_friendly_block(g, p.slots, p.bw_cblock);
    // The transposed implicit panels only pay off where rows are gathered with vector loads
    // (unit stride along W); strided ones keep explicit im2col chunks (measured: stride2 80 vs
    // 68 GFLOP/s on one thread).
    p.bw_implicit = p.implicit && g.stride[2] == 1;
    if (p.bw_implicit) {
      p.pack_elems += Im2colPanelsT::tile_elems();
      // On the padded grid when it applies: dy is placed on the grid a chunk of rows at a time
      // (the reduction depth of one GEMM, about kGridBlockBytes of it).
      p.bw_grid_rows = grid_rows_per_task(g, g.cout_g(), 1);
      if (p.bw_grid_rows > 0)
        col = std::max(col, grid_scratch(g, g.cout_g(), p.bw_cblock, p.bw_grid_rows));
    } else {
      p.bw_cols = chunk_columns(p.bw_cblock * K, S_out, elem_bytes, 1);
      if (!p.pointwise) col = std::max(col, p.bw_cblock * K * p.bw_cols);
    }
    const int64_t tasks = g.groups * ceil_div(std::max<int64_t>(Cig, 1), p.bw_cblock);
    p.partial_elems = g.C_out * Cig * K;
    const int64_t max_by_memory =
        1 + kPartialBudgetBytes /
                std::max<int64_t>(1, p.partial_elems * static_cast<int64_t>(elem_bytes));
    p.bw_ranges = tasks >= p.slots
                      ? 1
                      : std::clamp<int64_t>(ceil_div(p.slots, tasks), 1, std::max<int64_t>(1, g.N));
    p.bw_ranges = std::min(p.bw_ranges, max_by_memory);
  }
  p.col_elems = col;
  return p;
}

}  // namespace aclnn_cpu::conv
