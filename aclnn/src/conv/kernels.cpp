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

}  // namespace

void init_blas_threads() {
  // OpenBLAS (pthreads build) would otherwise start its own pool on every core from inside each
  // TBB task: 2 x cores threads fighting over the cores. Parallelism belongs to TBB; every GEMM
  // runs single-threaded on the task's thread. Process-wide and idempotent.
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
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
      if (p.fwd_grid_rows > 0) {  // padded grid: per task a band of x, GEMM, copy to y
        const PaddedGrid pg = padded_grid(g);
        const int64_t blocks = ceil_div(pg.rows, p.fwd_grid_rows);
        for_tasks(g.N * g.groups * blocks, [&](int64_t t) {
          const int64_t b = t % blocks, ng = t / blocks, grp = ng % g.groups, n = ng / g.groups;
          const int64_t r0 = b * p.fwd_grid_rows, r1 = std::min(pg.rows, r0 + p.fwd_grid_rows);
          const int64_t cols = (r1 - r0) * pg.Wp;
          float* block = s.col + current_slot(p.slots) * p.col_elems;
          float* band = block + Cog * p.fwd_grid_rows * pg.Wp;  // then the band of x
          const PaddedGrid bp =
              pad_band(g, pg, x + (n * g.C_in + grp * Cig) * S_in, Cig, r0, r1 - r0, band);
          const GridPanels panels(GridSource{g, bp, band, 0});
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
  const PaddedGrid grid = p.bw_grid_rows > 0 ? padded_grid(g) : PaddedGrid{};
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
        float* band = dy_grid + Cog * p.bw_grid_rows * grid.Wp;  // then cb x band x Wp
        for (int64_t n = n0; n < n1; ++n) {
          for (int64_t r0 = 0; r0 < grid.rows; r0 += p.bw_grid_rows) {
            const int64_t r1 = std::min(grid.rows, r0 + p.bw_grid_rows), cols = (r1 - r0) * grid.Wp;
            output_to_grid(g, grid, dy + (n * g.C_out + grp * Cog) * S_out, Cog, r0, r1, dy_grid);
            const PaddedGrid bp =
                pad_band(g, grid, x + (n * g.C_in + grp * Cig + c0) * S_in, nc, r0, r1 - r0, band);
            const gemm::Mat a{dy_grid, cols, 1};
            const GridPanelsT panels(GridSource{g, bp, band, 0});
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
