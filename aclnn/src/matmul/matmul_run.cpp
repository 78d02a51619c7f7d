// aclnnMatmul's plan and execution (matmul_job.h).
#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include "conv/algorithms/algo_support.h"
#include "conv/engine/algorithm.h"
#include "conv/engine/half.h"
#include "cpu/cpu.h"
#include "error.h"
#include "matmul/matmul_job.h"
#include "meta.h"

namespace aclnn_cpu::matmul {
namespace {

// Tile bounds: a row tile of A stays at the GEMM's MC (one pass of its ic loop per K block, so B's
// panels are packed once per tile), a column tile is four of its 48-column panels (A's rows are
// packed once per column tile: 1/192 of the multiply-adds). Below 2^21 multiply-adds in all, one
// thread (waking a second costs more than the product, as for the convolutions).
constexpr int64_t kRowTile = 128;
constexpr int64_t kColTile = 192;
constexpr double kParallelMinMacs = double(1 << 21);
// K chunk per packing of A: 4 of the GEMM's K blocks (A's packed rows stay within L2); the
// portable tier's converted blocks are 256 deep.
constexpr int64_t kDepthBlocks = 4;
constexpr int64_t kPortableDepth = 256;
constexpr int64_t kAlignFloats = 16;  // 64 bytes

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}
int64_t round_up(int64_t a, int64_t b) {
  return ceil_div(a, b) * b;
}

struct Plan {
  MatmulJob job;
  bool packed = false;      // our packed GEMM (AVX2 / AVX-512), else OpenBLAS on converted blocks
  bool out_direct = false;  // the GEMM writes the fp32 output in place (no tile)
  int64_t batches = 1, row_tiles = 1, col_tiles = 1, mt = 0, nt = 0, depth = 0;
  int slots = 1;
  std::shared_ptr<tbb::task_arena> arena;  // null for one slot (run on the calling thread)
  // Per-slot scratch, in floats: the GEMM's packing buffers, A's packed rows (or the portable
  // tier's converted blocks of A and B), the fp32 tile.
  int64_t gemm_floats = 0, a_floats = 0, b_floats = 0, tile_floats = 0, slot_floats = 0;
  uint64_t bytes = 0;
};

// Tiles of the output, from the shape alone: rows cut at kRowTile, columns at kColTile, both
// evened out; a product with one tile and one matrix is cut in two rows so two threads share it.
void plan_tiles(Plan& p) {
  const MatmulJob& j = p.job;
  p.col_tiles = std::max<int64_t>(1, ceil_div(j.N, kColTile));
  p.row_tiles = std::max<int64_t>(1, ceil_div(j.M, kRowTile));
  if (p.batches == 1 && p.col_tiles == 1 && p.row_tiles == 1 && j.M >= 32) p.row_tiles = 2;
  p.nt = std::min(j.N, round_up(ceil_div(j.N, p.col_tiles), gemm::kPanelCols));
  p.mt = std::min(j.M, round_up(ceil_div(j.M, p.row_tiles), 8));
  p.col_tiles = j.N > 0 ? ceil_div(j.N, p.nt) : 0;
  p.row_tiles = j.M > 0 ? ceil_div(j.M, p.mt) : 0;
}

void plan_scratch(Plan& p) {
  const MatmulJob& j = p.job;
  auto aligned = [](int64_t floats) { return round_up(floats, kAlignFloats); };
  const int64_t k = std::min(j.K, p.depth);
  if (p.packed) {
    p.gemm_floats = aligned(gemm::pack_elems());
    p.a_floats = aligned(gemm::packed_a_elems(p.mt, k));
  } else {
    p.a_floats = aligned(p.mt * k);
    p.b_floats = aligned(k * p.nt);
  }
  p.tile_floats = p.out_direct ? 0 : aligned(p.mt * p.nt);
  p.slot_floats = p.gemm_floats + p.a_floats + p.b_floats + p.tile_floats;
  const int64_t tasks = p.batches * p.row_tiles * p.col_tiles;
  p.bytes = tasks == 0 ? 0 : uint64_t(p.slots) * uint64_t(p.slot_floats) * sizeof(float) + 64;
}

// Element offsets of batch matrix `b` in A, B and out.
struct Offsets {
  int64_t a = 0, b = 0, out = 0;
};
Offsets batch_offsets(const MatmulJob& j, int64_t b) {
  Offsets o;
  for (int64_t d = static_cast<int64_t>(j.batch.size()) - 1; d >= 0; --d) {
    const int64_t i = b % j.batch[d];
    b /= j.batch[d];
    o.a += i * j.a.batch_strides[d];
    o.b += i * j.b.batch_strides[d];
    o.out += i * j.out_batch_strides[d];
  }
  return o;
}

SrcMat shifted(const SrcMat& m, int64_t elems) {
  return {static_cast<const char*>(m.data) + elems * m.elem_bytes(), m.kind, m.rs, m.cs};
}

// A block of a source matrix (rows x cols from `m`) converted into a dense fp32 matrix for
// OpenBLAS, in the orientation that reads `m` along its unit stride.
gemm::Mat convert_block(const SrcMat& m, int64_t rows, int64_t cols, float* dst) {
  if (m.rs == 1 && m.cs != 1) {  // columns contiguous: column-major copy
    for (int64_t c = 0; c < cols; ++c)
      conv::Source{m.at(0, c).data, m.kind}.convert(rows, 1, dst + c * rows);
    return gemm::Mat{dst, 1, rows};
  }
  for (int64_t r = 0; r < rows; ++r)
    conv::Source{m.at(r, 0).data, m.kind}.convert(cols, m.cs, dst + r * cols);
  return gemm::Mat{dst, cols, 1};
}

// The fp32 tile (rows x cols, dense) rounded once into out at `dst` (element (0, 0) of the tile).
void store_tile(const MatmulJob& j, const float* tile, int64_t rows, int64_t cols, char* dst) {
  const int64_t bytes = j.out_dtype == ACL_FLOAT ? 4 : 2;
  const bool bf16 = j.out_dtype == ACL_BF16;
  for (int64_t r = 0; r < rows; ++r) {
    const float* src = tile + r * cols;
    char* row = dst + r * j.out_rs * bytes;
    if (bytes == 4) {
      for (int64_t c = 0; c < cols; ++c) std::memcpy(row + c * j.out_cs * 4, src + c, 4);
    } else if (j.out_cs == 1) {
      conv::narrow16(bf16, src, cols, reinterpret_cast<uint16_t*>(row));
    } else {
      for (int64_t c = 0; c < cols; ++c) {
        const uint16_t h = bf16 ? conv::float_to_bf16(src[c]) : conv::float_to_half(src[c]);
        std::memcpy(row + c * j.out_cs * 2, &h, 2);
      }
    }
  }
}

// One output tile: rows [i0, i0 + mi) and columns [j0, j0 + nj) of batch matrix `b`.
void run_tile(const Plan& p, int64_t task, float* scratch) {
  const MatmulJob& j = p.job;
  const int64_t per_batch = p.row_tiles * p.col_tiles, b = task / per_batch;
  const int64_t i0 = (task % per_batch) / p.col_tiles * p.mt, j0 = task % p.col_tiles * p.nt;
  const int64_t mi = std::min(p.mt, j.M - i0), nj = std::min(p.nt, j.N - j0);
  const Offsets o = batch_offsets(j, b);
  const SrcMat A = shifted(j.a.m, o.a + i0 * j.a.m.rs), B = shifted(j.b.m, o.b + j0 * j.b.m.cs);
  const int64_t out_bytes = j.out_dtype == ACL_FLOAT ? 4 : 2;
  char* out = static_cast<char*>(j.out) + (o.out + i0 * j.out_rs + j0 * j.out_cs) * out_bytes;
  float* gemm_scratch = scratch;
  float* a_scratch = gemm_scratch + p.gemm_floats;
  float* b_scratch = a_scratch + p.a_floats;
  float* C = p.out_direct ? reinterpret_cast<float*>(out) : b_scratch + p.b_floats;
  // ldc: the output's row stride, or the tile's; any value >= nj serves a single row (OpenBLAS
  // checks it).
  const int64_t ldc = !p.out_direct ? nj : mi == 1 ? std::max<int64_t>(nj, 1) : j.out_rs;
  gemm::sgemm_empty(mi, nj, j.K, false, C, ldc);  // K = 0: zeros
  for (int64_t k0 = 0; k0 < j.K; k0 += p.depth) {
    const int64_t kc = std::min(p.depth, j.K - k0);
    // Later K chunks add onto the first: each element's K blocks are summed in order, as one
    // GEMM over all of K would.
    const bool accumulate = k0 > 0;
    if (p.packed) {
      pack_a(A.at(0, k0), mi, kc, a_scratch);
      const MatPanels panels(B.at(k0, 0));
      gemm::sgemm_packed(mi, nj, kc, a_scratch, nullptr, nullptr, &panels, accumulate, C, ldc,
                         gemm_scratch);
    } else {
      const gemm::Mat a = convert_block(A.at(0, k0), mi, kc, a_scratch);
      const gemm::Mat bm = convert_block(B.at(k0, 0), kc, nj, b_scratch);
      gemm::sgemm(mi, nj, kc, a, bm, accumulate, C, ldc, nullptr);
    }
  }
  if (!p.out_direct) store_tile(j, C, mi, nj, out);
}

int current_slot(int slots) {
  const int slot = tbb::this_task_arena::current_thread_index();
  if (slot < 0 || slot >= slots)
    throw std::logic_error("aclnnMatmul ran outside its task arena (thread slot out of range)");
  return slot;
}

void execute(const Plan& p, void* workspace) {
  const int64_t tasks = p.batches * p.row_tiles * p.col_tiles;
  if (tasks == 0) return;
  char* ws = static_cast<char*>(workspace);
  ws += (64 - reinterpret_cast<uintptr_t>(ws) % 64) % 64;
  float* base = reinterpret_cast<float*>(ws);
  if (p.slots == 1) {  // small: on the calling thread, without entering an arena
    for (int64_t t = 0; t < tasks; ++t) run_tile(p, t, base);
    return;
  }
  p.arena->execute([&] {
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, tasks, 1),
                      [&](const tbb::blocked_range<int64_t>& r) {
                        float* scratch = base + current_slot(p.slots) * p.slot_floats;
                        for (int64_t t = r.begin(); t < r.end(); ++t) run_tile(p, t, scratch);
                      });
  });
}

const char* dtype_short(aclDataType d) {
  return d == ACL_FLOAT ? "f32" : d == ACL_FLOAT16 ? "f16" : d == ACL_BF16 ? "bf16" : "?";
}

void print_plan(const char* api, const Plan& p) {
  const MatmulJob& j = p.job;
  std::fprintf(stderr,
               "aclnn_cpu_verbose,plan,%s,matmul,%s,batch=%lld m=%lld n=%lld k=%lld out=%s,"
               "threads=%d,workspace=%llu,isa=%s,tiles=%lldx%lld depth=%lld,%s\n",
               api, p.packed ? "packed_convert" : "blas_convert", (long long)p.batches,
               (long long)j.M, (long long)j.N, (long long)j.K, dtype_short(j.out_dtype), p.slots,
               (unsigned long long)p.bytes, cpu::tier_name(cpu::tier()), (long long)p.mt,
               (long long)p.nt, (long long)p.depth,
               p.out_direct ? "fp32 sums stored in place" : "fp32 tile rounded into out");
}

}  // namespace

void fold_batch_into_rows(MatmulJob& j) {
  if (j.batch.empty()) return;
  for (size_t d = 0; d < j.batch.size(); ++d)
    if (j.batch[d] > 1 && j.b.batch_strides[d] != 0) return;  // B changes along the batch
  // Rows of A and out as one dim of `rows` with strides (a_rs, out_rs), growing outwards.
  int64_t rows = j.M, a_rs = j.a.m.rs, out_rs = j.out_rs;
  for (int64_t d = static_cast<int64_t>(j.batch.size()) - 1; d >= 0; --d) {
    const int64_t s = j.batch[d], as = j.a.batch_strides[d], os = j.out_batch_strides[d];
    if (s == 1) continue;
    if (rows == 1) {  // a single row has no stride of its own yet
      a_rs = as, out_rs = os, rows = s;
      continue;
    }
    if (as != a_rs * rows || os != out_rs * rows) return;
    rows *= s;
  }
  j.M = rows;
  j.a.m.rs = a_rs;
  j.out_rs = out_rs;
  j.batch.clear();
  j.a.batch_strides.clear();
  j.b.batch_strides.clear();
  j.out_batch_strides.clear();
}

aclOpExecutor* make_executor(const char* api, MatmulJob job, uint64_t* workspace_size) {
  conv::init_blas_threads();
  auto plan = std::make_shared<Plan>();
  plan->job = std::move(job);
  Plan& p = *plan;
  const MatmulJob& j = p.job;
  for (int64_t s : j.batch) p.batches *= s;
  p.packed = gemm::have_packed_gemm() && packs_kind(j.a.m.kind) && packs_kind(j.b.m.kind);
  p.depth = p.packed ? kDepthBlocks * gemm::panel_depth() : kPortableDepth;
  // OpenBLAS takes the output's row stride as an int.
  p.out_direct = j.out_dtype == ACL_FLOAT && j.out_cs == 1 && (p.packed || j.out_rs <= INT_MAX);
  plan_tiles(p);
  const double macs = double(p.batches) * double(j.M) * double(j.N) * double(j.K);
  p.slots = macs < kParallelMinMacs ? 1 : std::max(1, tbb::this_task_arena::max_concurrency());
  if (p.slots > 1) p.arena = std::make_shared<tbb::task_arena>(p.slots);
  plan_scratch(p);
  if (conv::verbose()) print_plan(api, p);

  auto executor = std::make_unique<aclOpExecutor>();
  executor->api = api;
  executor->workspace_bytes = p.bytes;
  std::shared_ptr<const Plan> shared = std::move(plan);
  executor->run = [shared](void* workspace) { execute(*shared, workspace); };
  *workspace_size = executor->workspace_bytes;
  return register_executor(executor.release());
}

}  // namespace aclnn_cpu::matmul
