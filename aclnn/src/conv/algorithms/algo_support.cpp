#include "conv/algorithms/algo_support.h"

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <string_view>

#include <cblas.h>
#include <tbb/task_arena.h>

#include "gemm/sgemm.h"

namespace aclnn_cpu::conv {
namespace {

// Column-buffer budget per thread: the im2col chunk of one task stays around L2 size.
constexpr int64_t kColumnBudgetBytes = int64_t{2} << 20;
// Fewest columns per chunk (below this GEMM efficiency collapses), unless the row is shorter.
constexpr int64_t kMinColumns = 16;
// Cap on the memory spent on grad-weight partials when splitting the batch for parallelism.
constexpr int64_t kPartialBudgetBytes = int64_t{256} << 20;

}  // namespace

int current_slot(int slots) {
  const int slot = tbb::this_task_arena::current_thread_index();
  if (slot < 0 || slot >= slots)
    throw std::logic_error("conv kernel ran outside its task arena (thread slot out of range)");
  return slot;
}

void gemm(const GemmCall<float>& c) {
  const gemm::Mat a = c.ta ? gemm::Mat{c.A, 1, c.lda} : gemm::Mat{c.A, c.lda, 1};
  const gemm::Mat b = c.tb ? gemm::Mat{c.B, 1, c.ldb} : gemm::Mat{c.B, c.ldb, 1};
  gemm::sgemm(c.M, c.N, c.K, a, b, c.beta != 0.0f, c.C, c.ldc, c.pack);
}

void gemm(const GemmCall<double>& c) {
  const bool ta = c.ta, tb = c.tb;
  const int64_t M = c.M, N = c.N, K = c.K, lda = c.lda, ldb = c.ldb, ldc = c.ldc;
  const double *A = c.A, *B = c.B, beta = c.beta;
  double* C = c.C;
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

void init_blas_threads() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}

void convert_block(const Source& src, int64_t rows, int64_t ld_src, int64_t cols, float* dst,
                   int64_t ld_dst) {
  for (int64_t r = 0; r < rows; ++r) src.at(r * ld_src).convert(cols, 1, dst + r * ld_dst);
}

const float* weights_f32(const Source& w, int64_t count, float* scratch) {
  if (const float* f = f32_data(w)) return f;
  w.convert(count, 1, scratch);
  return scratch;
}

bool small_blocks() {
  static const bool small = [] {
    const char* env = std::getenv("ACLNN_CPU_SMALL_BLOCKS");
    return env != nullptr && std::string_view(env) == "1";
  }();
  return small;
}

int64_t block_budget(int64_t bytes) {
  return small_blocks() ? 1 : bytes;
}

namespace {

// Columns of `rows` rows that fit `budget_bytes` a slot, within [16, total / want].
int64_t columns_within(int64_t budget_bytes, int64_t rows, int64_t total, int64_t elem_bytes,
                       int64_t want) {
  if (total <= 0) return 1;
  int64_t cols = rows > 0 ? block_budget(budget_bytes) / (rows * elem_bytes) : total;
  cols = std::min(cols, ceil_div(total, std::max<int64_t>(1, want)));
  return std::clamp<int64_t>(cols, std::min(kMinColumns, total), total);
}

}  // namespace

int64_t chunk_columns(int64_t rows, int64_t total, int64_t elem_bytes, int64_t want) {
  return columns_within(kColumnBudgetBytes, rows, total, elem_bytes, want);
}

int64_t chunk_columns(const Problem& p, int64_t rows, int64_t total, int64_t elem_bytes,
                      int64_t want) {
  const ConvGeometry& g = p.g;
  // Converted inputs may be 16-bit as stored (the bound is on the tensors' own bytes).
  const int64_t stored_bytes = p.converts ? 2 : elem_bytes;
  const int64_t largest = std::max({g.N * g.C_in * g.in_size(), g.N * g.C_out * g.out_size(),
                                    g.C_out * g.cin_g() * g.k_size()}) *
                          stored_bytes;
  const int64_t slot_bytes = std::min(kColumnBudgetBytes, largest / std::max(1, p.slots));
  return columns_within(slot_bytes, rows, total, elem_bytes, want);
}

int64_t gemm_weight_cblock(const Problem& p) {
  const ConvGeometry& g = p.g;
  const int64_t Cig = g.cin_g(), K = g.k_size(), kPanel = gemm::kPanelCols;
  const int64_t base = block_size(Cig, ceil_div(2 * p.slots, std::max<int64_t>(1, g.groups)));
  if (p.fp64) return base;
  int64_t best = base;
  double best_waste = 1.0;
  for (int64_t cb = base; cb <= Cig; ++cb) {
    if (Cig % cb != 0 || (Cig / cb) * g.groups < p.slots) continue;
    const int64_t n = cb * K, padded = ceil_div(n, kPanel) * kPanel;
    const double waste = static_cast<double>(padded - n) / static_cast<double>(padded);
    if (waste < best_waste - 1e-9) best = cb, best_waste = waste;
  }
  // Whole groups' channels with batch ranges filling the threads (plan_weight_split), where that
  // keeps more of the panel columns and of the threads busy than the blocks above. first7x7 (3
  // channels x 49 taps) at 2 threads: blocks of 1 channel fill 49 of 96 panel columns and make 3
  // tasks for 2 threads; 3 channels and 2 batch ranges fill 147 of 192 and both threads.
  auto busy = [&](int64_t cb) {  // useful panel columns x busy threads
    const int64_t n = cb * K, padded = ceil_div(n, kPanel) * kPanel;
    const int64_t tasks = g.groups * ceil_div(Cig, cb);
    const int64_t ranges =
        tasks >= p.slots ? 1
                         : std::min<int64_t>(ceil_div(p.slots, tasks), std::max<int64_t>(g.N, 1));
    const int64_t units = tasks * ranges, rounds = ceil_div(units, p.slots);
    return static_cast<double>(n) / static_cast<double>(padded) * static_cast<double>(units) /
           static_cast<double>(rounds * p.slots);
  };
  if (g.groups < p.slots && Cig > 0 && busy(Cig) > busy(best) + 1e-9) best = Cig;
  return best;
}

void plan_weight_split(const Problem& p, int64_t elem_bytes, int64_t cblock, Blocking& b) {
  const ConvGeometry& g = p.g;
  const int64_t Cig = g.cin_g();
  b.cblock = std::max<int64_t>(1, cblock);
  // Channel blocks first (no reduction needed), then batch ranges with partial buffers.
  const int64_t tasks = g.groups * ceil_div(std::max<int64_t>(Cig, 1), b.cblock);
  b.partial_elems = g.C_out * Cig * g.k_size();
  const int64_t max_by_memory =
      1 + kPartialBudgetBytes / std::max<int64_t>(1, b.partial_elems * elem_bytes);
  b.ranges = tasks >= p.slots
                 ? 1
                 : std::clamp<int64_t>(ceil_div(p.slots, tasks), 1, std::max<int64_t>(1, g.N));
  b.ranges = std::min(b.ranges, max_by_memory);
}

}  // namespace aclnn_cpu::conv
