#include "conv/kernels.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <type_traits>

#include <cblas.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include "conv/depthwise.h"
#include "conv/im2col.h"
#include "conv/im2col_panels.h"
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

// Row-major C[M, N] = op(A)[M, K] * op(B)[K, N] + beta * C (beta 0 or 1); K == 0 means
// op(A)*op(B) is zero. fp32 runs our packed AVX-512 GEMM (gemm/sgemm.h; OpenBLAS on older CPUs)
// with the task's packing scratch; the transposes are strided views, never copies.
inline void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda,
                 const float* B, int64_t ldb, float beta, float* C, int64_t ldc, float* pack) {
  const aclnn_cpu::gemm::Mat a =
      ta ? aclnn_cpu::gemm::Mat{A, 1, lda} : aclnn_cpu::gemm::Mat{A, lda, 1};
  const aclnn_cpu::gemm::Mat b =
      tb ? aclnn_cpu::gemm::Mat{B, 1, ldb} : aclnn_cpu::gemm::Mat{B, ldb, 1};
  aclnn_cpu::gemm::sgemm(M, N, K, a, b, beta != 0.0f, C, ldc, pack);
}

// fp64 (gradcheck-grade exactness, not speed): OpenBLAS.
inline void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const double* A, int64_t lda,
                 const double* B, int64_t ldb, double beta, double* C, int64_t ldc, double*) {
  if (M == 0 || N == 0) return;
  if (K == 0) {
    if (beta == 0.0)
      for (int64_t i = 0; i < M; ++i) std::fill(C + i * ldc, C + i * ldc + N, 0.0);
    return;
  }
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
              static_cast<blasint>(M), static_cast<blasint>(N), static_cast<blasint>(K), 1.0, A,
              static_cast<blasint>(lda), B, static_cast<blasint>(ldb), beta, C,
              static_cast<blasint>(ldc));
}

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

// The scratch slot of the calling thread (tasks only run inside the plan's task_arena).
int current_slot(int slots) {
  const int slot = tbb::this_task_arena::current_thread_index();
  if (slot < 0 || slot >= slots)
    throw std::logic_error("conv kernel ran outside its task arena (thread slot out of range)");
  return slot;
}

// The GEMM packing scratch of the calling thread (null for double, which uses OpenBLAS).
template <typename T>
T* pack_slot(const KernelPlan& p, const Scratch<T>& s) {
  return s.pack ? s.pack + current_slot(p.slots) * p.pack_elems : nullptr;
}

// Runs body(task) for task in [0, count) in parallel.
template <typename Body>
void for_tasks(int64_t count, Body&& body) {
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, count, 1),
                    [&](const tbb::blocked_range<int64_t>& r) {
                      for (int64_t t = r.begin(); t != r.end(); ++t) body(t);
                    });
}

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

}  // namespace

void init_blas_threads() {
  // OpenBLAS (pthreads build) would otherwise start its own pool on every core from inside each
  // TBB task: 2 x cores threads fighting over the cores. Parallelism belongs to TBB; every GEMM
  // runs single-threaded on the task's thread. Process-wide and idempotent.
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
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
      if (p.fwd_grid_rows > 0) {
        const PaddedGrid pg = padded_grid(g);
        p.grid_elems = std::max(p.grid_elems, grid_elems(pg, g.N * g.C_in));
        col = std::max(col, g.cout_g() * p.fwd_grid_rows * pg.Wp);
      }
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
        if (p.bd_grid_rows > 0) {
          const PaddedGrid pg = padded_grid(f);
          p.grid_elems = std::max(p.grid_elems, grid_elems(pg, f.N * f.C_in));
          col = std::max(col, Cig * p.bd_grid_rows * pg.Wp);
        }
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
      if (p.bw_grid_rows > 0) {
        const PaddedGrid pg = padded_grid(g);
        p.grid_elems = std::max(p.grid_elems, grid_elems(pg, g.N * g.C_in));
        col = std::max(col, g.cout_g() * p.bw_grid_rows * pg.Wp);
      }
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

template <typename T>
void forward(const ConvGeometry& g, const KernelPlan& p, const T* x, const T* w, T* y,
             const Scratch<T>& s) {
  if constexpr (std::is_same_v<T, float>) {
    if (p.depthwise) return depthwise_forward(g, x, w, y);
  }
  // y[n, g] (Cog x S_out) = w[g] (Cog x Cig*K) * col(x[n, g]) (Cig*K x S_out), by column chunks.
  const int64_t Cig = g.cin_g(), Cog = g.cout_g(), rows = g.col_rows();
  const int64_t S_in = g.in_size(), S_out = g.out_size();
  const int64_t chunks = ceil_div(S_out, p.fwd_cols);
  if constexpr (std::is_same_v<T, float>) {
    if (p.implicit) {
      const int64_t wpack_g = gemm::packed_a_elems(Cog, rows);
      for_tasks(g.groups, [&](int64_t grp) {
        gemm::pack_a_once(Cog, rows, gemm::Mat{w + grp * Cog * rows, rows, 1},
                          s.wpack + grp * wpack_g);
      });
      if (p.fwd_grid_rows > 0) {  // padded grid: pad x once, GEMM per (sample, group, rows)
        const PaddedGrid pg = padded_grid(g);
        pad_into_grid(g, pg, x, g.N * g.C_in, s.grid);
        const int64_t blocks = ceil_div(pg.rows, p.fwd_grid_rows);
        for_tasks(g.N * g.groups * blocks, [&](int64_t t) {
          const int64_t b = t % blocks, ng = t / blocks, grp = ng % g.groups, n = ng / g.groups;
          const int64_t r0 = b * p.fwd_grid_rows, r1 = std::min(pg.rows, r0 + p.fwd_grid_rows);
          const int64_t cols = (r1 - r0) * pg.Wp;
          float* block = s.col + current_slot(p.slots) * p.col_elems;
          const GridPanels panels(g, pg, s.grid + (n * g.C_in + grp * Cig) * pg.plane, r0 * pg.Wp);
          gemm::sgemm_avx512_packed(Cog, cols, rows, s.wpack + grp * wpack_g, nullptr, nullptr,
                                    &panels, false, block, cols, pack_slot(p, s));
          grid_to_output(g, pg, block, Cog, r0, r1, y + (n * g.C_out + grp * Cog) * S_out);
        });
        return;
      }
      for_tasks(g.N * g.groups * chunks, [&](int64_t t) {
        const int64_t chunk = t % chunks, ng = t / chunks, grp = ng % g.groups, n = ng / g.groups;
        const int64_t j0 = chunk * p.fwd_cols, j1 = std::min(S_out, j0 + p.fwd_cols);
        const Im2colPanels panels(g, x + (n * g.C_in + grp * Cig) * S_in, j0);
        gemm::sgemm_avx512_packed(Cog, j1 - j0, rows, s.wpack + grp * wpack_g, nullptr, nullptr,
                                  &panels, false, y + (n * g.C_out + grp * Cog) * S_out + j0, S_out,
                                  pack_slot(p, s));
      });
      return;
    }
  }
  for_tasks(g.N * g.groups * chunks, [&](int64_t t) {
    const int64_t chunk = t % chunks, ng = t / chunks, grp = ng % g.groups, n = ng / g.groups;
    const int64_t j0 = chunk * p.fwd_cols, j1 = std::min(S_out, j0 + p.fwd_cols);
    const T* xg = x + (n * g.C_in + grp * Cig) * S_in;
    const T* wg = w + grp * Cog * rows;
    T* yg = y + (n * g.C_out + grp * Cog) * S_out + j0;
    T* pk = pack_slot(p, s);
    if (p.pointwise) {
      gemm(false, false, Cog, j1 - j0, Cig, wg, rows, xg + j0, S_in, T(0), yg, S_out, pk);
      return;
    }
    T* col = s.col + current_slot(p.slots) * p.col_elems;
    im2col(g, xg, Cig, j0, j1, col);
    gemm(false, false, Cog, j1 - j0, rows, wg, rows, col, j1 - j0, T(0), yg, S_out, pk);
  });
}

template <typename T>
void backward_data(const ConvGeometry& g, const KernelPlan& p, const T* dy, const T* w, T* dx,
                   const Scratch<T>& s) {
  if (p.bd_flip) {
    // w' [C_in, Cog, K] per group from w [C_out, Cig, K], taps reversed; then dx = forward.
    const int64_t Cig = g.cin_g(), Cog = g.cout_g(), K = g.k_size();
    T* wf = s.wflip;
    tbb::parallel_for(int64_t{0}, g.C_in, [&](int64_t ci) {
      const int64_t grp = ci / Cig, c = ci % Cig;
      for (int64_t o = 0; o < Cog; ++o) {
        const T* src = w + ((grp * Cog + o) * Cig + c) * K;
        T* dst = wf + (ci * Cog + o) * K;
        for (int64_t q = 0; q < K; ++q) dst[q] = src[K - 1 - q];
      }
    });
    KernelPlan q = p;
    q.pointwise = false;
    q.fwd_cols = p.bd_fwd_cols;
    q.fwd_grid_rows = p.bd_grid_rows;
    return forward(flipped_for_data(g), q, dy, static_cast<const T*>(wf), dx, s);
  }
  if constexpr (std::is_same_v<T, float>) {
    if (p.depthwise) return depthwise_backward_data(g, dy, w, dx);
  }
  // dx[n, g, c-block] = col2im(w[g][:, c-block]^T (cb*K x Cog) * dy[n, g] (Cog x S_out)): the
  // adjoint of forward. Tasks own disjoint input-channel blocks, so col2im needs no locking.
  const int64_t Cig = g.cin_g(), Cog = g.cout_g(), rows = g.col_rows(), K = g.k_size();
  const int64_t S_in = g.in_size(), S_out = g.out_size();
  const int64_t blocks = ceil_div(Cig, p.bd_cblock);
  const int64_t wpack_g = p.bd_packed_w ? gemm::packed_a_elems(rows, Cog) : 0;
  if constexpr (std::is_same_v<T, float>) {
    if (p.bd_packed_w)
      for_tasks(g.groups, [&](int64_t grp) {
        gemm::pack_a_once(rows, Cog, gemm::Mat{w + grp * Cog * rows, 1, rows},
                          s.wpack + grp * wpack_g);
      });
  }
  for_tasks(g.N * g.groups * blocks, [&](int64_t t) {
    const int64_t b = t % blocks, ng = t / blocks, grp = ng % g.groups, n = ng / g.groups;
    const int64_t c0 = b * p.bd_cblock, nc = std::min(Cig, c0 + p.bd_cblock) - c0;
    const T* dyg = dy + (n * g.C_out + grp * Cog) * S_out;
    const T* wg = w + grp * Cog * rows + c0 * K;  // columns c0*K.. of w[g] (ld rows)
    T* dxg = dx + (n * g.C_in + grp * Cig + c0) * S_in;
    T* pk = pack_slot(p, s);
    if (p.pointwise) {
      gemm(true, false, nc, S_in, Cog, wg, rows, dyg, S_out, T(0), dxg, S_in, pk);
      return;
    }
    T* col = s.col + current_slot(p.slots) * p.col_elems;
    std::memset(dxg, 0, static_cast<size_t>(nc * S_in) * sizeof(T));
    for (int64_t j0 = 0; j0 < S_out; j0 += p.bd_cols) {
      const int64_t j1 = std::min(S_out, j0 + p.bd_cols);
      bool done = false;
      if constexpr (std::is_same_v<T, float>) {
        if (p.bd_packed_w) {  // the whole group's w^T, packed above (nc == Cig)
          const gemm::Mat b{dyg + j0, S_out, 1};
          gemm::sgemm_avx512_packed(rows, j1 - j0, Cog, s.wpack + grp * wpack_g, nullptr, &b,
                                    nullptr, false, col, j1 - j0, pk);
          done = true;
        }
      }
      if (!done)
        gemm(true, false, nc * K, j1 - j0, Cog, wg, rows, dyg + j0, S_out, T(0), col, j1 - j0, pk);
      col2im(g, col, nc, j0, j1, dxg);
    }
  });
}

template <typename T>
void backward_weight(const ConvGeometry& g, const KernelPlan& p, const T* x, const T* dy, T* dw,
                     const Scratch<T>& s) {
  if constexpr (std::is_same_v<T, float>) {
    if (p.depthwise) return depthwise_backward_weight(g, x, dy, dw);
  }
  // dw[g][:, c-block] = sum_n dy[n, g] (Cog x S_out) * col(x[n, g, c-block])^T (S_out x cb*K).
  // Task (range r, group, channel block) sums its batch range into dw (r = 0) or partial r;
  // the partials are then added to dw in range order.
  const int64_t Cig = g.cin_g(), Cog = g.cout_g(), rows = g.col_rows(), K = g.k_size();
  const int64_t S_in = g.in_size(), S_out = g.out_size();
  const int64_t blocks = ceil_div(std::max<int64_t>(Cig, 1), p.bw_cblock);
  const int64_t R = p.bw_ranges;
  PaddedGrid grid;
  if constexpr (std::is_same_v<T, float>) {
    if (p.bw_grid_rows > 0) {
      grid = padded_grid(g);
      pad_into_grid(g, grid, x, g.N * g.C_in, s.grid);
    }
  }
  for_tasks(R * g.groups * blocks, [&](int64_t t) {
    const int64_t b = t % blocks, rg = t / blocks, grp = rg % g.groups, r = rg / g.groups;
    const int64_t c0 = b * p.bw_cblock,
                  nc = std::max<int64_t>(0, std::min(Cig, c0 + p.bw_cblock) - c0);
    const int64_t n0 = g.N * r / R, n1 = g.N * (r + 1) / R;
    T* dst = (r == 0 ? dw : s.partials + (r - 1) * p.partial_elems) + grp * Cog * rows + c0 * K;
    for (int64_t o = 0; o < Cog; ++o) std::fill(dst + o * rows, dst + o * rows + nc * K, T(0));
    if (nc == 0) return;
    T* pk = pack_slot(p, s);
    if constexpr (std::is_same_v<T, float>) {
      if (p.bw_grid_rows > 0) {  // dw block += dy_grid * grid_col(x)^T, chunk by chunk
        float* dy_grid = s.col + current_slot(p.slots) * p.col_elems;
        for (int64_t n = n0; n < n1; ++n) {
          const float* xp = s.grid + (n * g.C_in + grp * Cig + c0) * grid.plane;
          for (int64_t r0 = 0; r0 < grid.rows; r0 += p.bw_grid_rows) {
            const int64_t r1 = std::min(grid.rows, r0 + p.bw_grid_rows), cols = (r1 - r0) * grid.Wp;
            output_to_grid(g, grid, dy + (n * g.C_out + grp * Cog) * S_out, Cog, r0, r1, dy_grid);
            const gemm::Mat a{dy_grid, cols, 1};
            const GridPanelsT panels(g, grid, xp, r0 * grid.Wp);
            gemm::sgemm_avx512_packed(Cog, nc * K, cols, nullptr, &a, nullptr, &panels, true, dst,
                                      rows, pk);
          }
        }
        return;
      }
      if (p.bw_implicit) {  // dw block += dy[n, g] * col(x[n, g, c-block])^T, K = all positions
        float* tile = pk + gemm::pack_elems();
        for (int64_t n = n0; n < n1; ++n) {
          const gemm::Mat a{dy + (n * g.C_out + grp * Cog) * S_out, S_out, 1};
          const Im2colPanelsT panels(g, x + (n * g.C_in + grp * Cig + c0) * S_in, 0, tile);
          gemm::sgemm_avx512_packed(Cog, nc * K, S_out, nullptr, &a, nullptr, &panels, true, dst,
                                    rows, pk);
        }
        return;
      }
    }
    T* col = p.pointwise ? nullptr : s.col + current_slot(p.slots) * p.col_elems;
    for (int64_t n = n0; n < n1; ++n) {
      const T* dyg = dy + (n * g.C_out + grp * Cog) * S_out;
      const T* xg = x + (n * g.C_in + grp * Cig + c0) * S_in;
      if (p.pointwise) {
        gemm(false, true, Cog, nc, S_out, dyg, S_out, xg, S_in, T(1), dst, rows, pk);
        continue;
      }
      for (int64_t j0 = 0; j0 < S_out; j0 += p.bw_cols) {
        const int64_t j1 = std::min(S_out, j0 + p.bw_cols);
        im2col(g, xg, nc, j0, j1, col);
        gemm(false, true, Cog, nc * K, j1 - j0, dyg + j0, S_out, col, j1 - j0, T(1), dst, rows, pk);
      }
    }
  });
  if (R <= 1) return;
  const int64_t total = g.C_out * rows;
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, total, 4096),
                    [&](const tbb::blocked_range<int64_t>& r) {
                      for (int64_t e = r.begin(); e != r.end(); ++e) {
                        T acc = dw[e];
                        for (int64_t k = 0; k + 1 < R; ++k)
                          acc += s.partials[k * p.partial_elems + e];
                        dw[e] = acc;
                      }
                    });
}

template void forward<float>(const ConvGeometry&, const KernelPlan&, const float*, const float*,
                             float*, const Scratch<float>&);
template void forward<double>(const ConvGeometry&, const KernelPlan&, const double*, const double*,
                              double*, const Scratch<double>&);
template void backward_data<float>(const ConvGeometry&, const KernelPlan&, const float*,
                                   const float*, float*, const Scratch<float>&);
template void backward_data<double>(const ConvGeometry&, const KernelPlan&, const double*,
                                    const double*, double*, const Scratch<double>&);
template void backward_weight<float>(const ConvGeometry&, const KernelPlan&, const float*,
                                     const float*, float*, const Scratch<float>&);
template void backward_weight<double>(const ConvGeometry&, const KernelPlan&, const double*,
                                      const double*, double*, const Scratch<double>&);

}  // namespace aclnn_cpu::conv
