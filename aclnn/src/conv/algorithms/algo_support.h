// What the algorithm implementations (conv/algo_*.cpp) share: task running and per-thread
// scratch, the GEMM wrappers, work-split helpers and the weight-gradient batch ranges.
#pragma once

#include <algorithm>
#include <cstdint>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include "conv/engine/algorithm.h"
#include "conv/engine/strided.h"  // add_bias_block

namespace aclnn_cpu::conv {

// The scratch slot of the calling thread (tasks run only inside the plan's task arena).
int current_slot(int slots);

// Runs body(task) for task in [0, count) as oneTBB tasks.
template <typename Body>
void for_tasks(int64_t count, Body&& body) {
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, count, 1),
                    [&](const tbb::blocked_range<int64_t>& r) {
                      for (int64_t t = r.begin(); t != r.end(); ++t) body(t);
                    });
}

// The calling thread's GEMM packing scratch (null: the GEMMs run on OpenBLAS) and its other
// scratch (Blocking::slot_elems elements).
template <typename T>
T* pack_scratch(const Problem& p, const Blocking& b, const Operands<T>& o) {
  return b.pack_elems > 0 ? o.slots + current_slot(p.slots) * slot_stride<T>(b) : nullptr;
}
template <typename T>
T* slot_scratch(const Problem& p, const Blocking& b, const Operands<T>& o) {
  return o.slots + current_slot(p.slots) * slot_stride<T>(b) + b.pack_elems;
}

// Row-major C[M, N] = op(A)[M, K] * op(B)[K, N] + beta * C (beta 0 or 1); K == 0 means
// op(A)*op(B) is zero. fp32 runs our packed GEMM with `pack` (OpenBLAS when null); fp64 runs
// OpenBLAS. The transposes are strided views, never copies.
template <typename T>
struct GemmCall {
  bool ta = false;  // op(A) = Aᵀ: A stored [K][lda] (else [M][lda])
  bool tb = false;  // op(B) = Bᵀ: B stored [N][ldb] (else [K][ldb])
  int64_t M = 0, N = 0, K = 0;
  const T* A = nullptr;  // op(A) [M, K]
  int64_t lda = 0;       // row stride of A as stored
  const T* B = nullptr;  // op(B) [K, N]
  int64_t ldb = 0;       // row stride of B as stored
  T beta = 0;            // 0: C = op(A) op(B); 1: C += op(A) op(B)
  T* C = nullptr;        // [M][ldc]
  int64_t ldc = 0;
  T* pack = nullptr;  // the calling thread's packing scratch (pack_scratch), null: OpenBLAS
};
void gemm(const GemmCall<float>& c);
void gemm(const GemmCall<double>& c);

// Sets OpenBLAS to one thread, once per process: parallelism belongs to oneTBB, and OpenBLAS's
// own pool started from inside TBB tasks would oversubscribe the cores.
void init_blas_threads();

// An input as the GEMM lowerings read it (Operands::xsrc/wsrc/ysrc): its fp32 elements when it
// needs no conversion, else null (the caller converts the blocks it reads).
inline const float* f32_data(const Source& s) {
  return s.kind == SrcKind::kF32 ? static_cast<const float*>(s.data) : nullptr;
}
// dst[r * ld_dst + j] = element r * ld_src + j of `src` as fp32 (converted, rounded), for
// r < rows and j < cols: a block of a row-major matrix, converted as a GEMM step reads it.
void convert_block(const Source& src, int64_t rows, int64_t ld_src, int64_t cols, float* dst,
                   int64_t ld_dst);
// The weights [count] as fp32: in place, or converted into `scratch` (count floats) by the
// calling thread.
const float* weights_f32(const Source& w, int64_t count, float* scratch);
// Floats of shared scratch for weights_f32 (0 when the problem converts nothing), rounded up to
// a 64-byte multiple so what follows stays aligned.
inline int64_t weights_f32_elems(const Problem& p) {
  return p.converts ? ceil_div(p.g.C_out * p.g.col_rows(), 16) * 16 : 0;
}

// (sample, group) pairs, and how many pieces each should be cut into so that every thread gets
// several tasks.
inline int64_t pieces_wanted(const Problem& p) {
  const int64_t items = std::max<int64_t>(1, p.g.N * p.g.groups);
  return ceil_div(4 * p.slots, items);
}
// v rounded up to a multiple of 16 (a zmm of floats).
inline int64_t round16(int64_t v) {
  return ceil_div(v, 16) * 16;
}
// Splits `total` items into at most `want` equal blocks (rounded up); returns the block size.
inline int64_t block_size(int64_t total, int64_t want) {
  if (total <= 0) return 1;
  return ceil_div(total, std::clamp<int64_t>(want, 1, total));
}
// A blocking budget of `bytes`, or 1 under the test switch ACLNN_CPU_SMALL_BLOCKS=1: every loop
// over blocks sized by a budget then runs its smallest blocks, so their boundaries (a row block
// starting past row 0, a 3d plane between blocks) are reached by the small shapes of the sweeps.
int64_t block_budget(int64_t bytes);
// The test switch itself, for blockings not sized in bytes (cl_direct: one row per task).
bool small_blocks();
// Columns per chunk of a column matrix with `rows` rows: about 2 MiB per thread, at least 16
// (unless the matrix is narrower), at most total / want (rounded up).
int64_t chunk_columns(int64_t rows, int64_t total, int64_t elem_bytes, int64_t want);
// The same for the column chunks of problem `p`, whose slots together hold no more than its
// largest tensor (x, w or dy; as 16-bit where inputs are converted) where that is under 2 MiB a
// slot: a small problem's chunks (the
// weight gradient's of ct2d_decoder on OpenBLAS: 1 MiB a slot for a 512 KiB tensor) would
// otherwise take the workspace past twice its largest tensor, the bound phase 1 keeps.
int64_t chunk_columns(const Problem& p, int64_t rows, int64_t total, int64_t elem_bytes,
                      int64_t want);

// backward_weight with GEMMs: input channels per task, enough blocks for 2 tasks per thread; in
// fp32 among the sizes that still do that, the one wasting the least of the GEMM's last 48-column
// panel (its N is channels x K: 3x3x3 kernels, 16 channels = 432 = 9 x 48 columns, not 8).
int64_t gemm_weight_cblock(const Problem& p);
// backward_weight: sets b.cblock and the batch ranges that then give every thread work
// (b.ranges, b.partial_elems).
void plan_weight_split(const Problem& p, int64_t elem_bytes, int64_t cblock, Blocking& b);
// Input channels per weight-gradient task: the fewest equal blocks of at most `cap` (128 under a
// cap of 96 are 64 + 64, not 96 + 32), and where the tasks are fewer than 4 per thread and do not
// divide among the threads, more blocks until they do (c2d_stride2's 128 channels as 96 + 32 at 2
// threads left one thread idle part of the time; measured: bench/RESULTS.md, design
// algo_support.even-cblock).
inline int64_t even_cblock(const Problem& p, int64_t cap) {
  const int64_t c = std::max<int64_t>(p.g.cin_g(), 1), groups = std::max<int64_t>(p.g.groups, 1);
  int64_t blocks = ceil_div(c, std::clamp<int64_t>(cap, 1, c));
  if (groups * blocks > p.slots && groups * blocks < 4 * p.slots)
    while ((groups * blocks) % p.slots != 0 && blocks < c) ++blocks;
  return ceil_div(c, blocks);
}

// dw (o.out, C_out x Cig*K) += the b.ranges - 1 partials, in range order (each element's partials
// added in the same order whatever the threads: deterministic).
template <typename T>
void add_weight_partials(const Problem& p, const Blocking& b, const Operands<T>& o) {
  const int64_t R = b.ranges;
  if (R <= 1) return;
  const int64_t total = p.g.C_out * p.g.col_rows();
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, total, 4096),
                    [&](const tbb::blocked_range<int64_t>& r) {
                      for (int64_t e = r.begin(); e != r.end(); ++e) {
                        T acc = o.out[e];
                        for (int64_t k = 0; k + 1 < R; ++k)
                          acc += o.partials[k * b.partial_elems + e];
                        o.out[e] = acc;
                      }
                    });
}

// Runs body(n0, n1, grp, c0, nc, dst) for every weight-gradient task (batch range, group, channel
// block): dst = the [Cog, nc*K] block (row stride Cig*K) of dw (first range) or of its partial,
// zeroed before the call; then adds the partials to dw in range order.
template <typename T, typename Body>
void for_weight_tasks(const Problem& p, const Blocking& b, const Operands<T>& o, Body&& body) {
  const ConvGeometry& g = p.g;
  const int64_t Cig = g.cin_g(), Cog = g.cout_g(), rows = g.col_rows(), K = g.k_size();
  const int64_t blocks = ceil_div(std::max<int64_t>(Cig, 1), b.cblock), R = b.ranges;
  for_tasks(R * g.groups * blocks, [&](int64_t t) {
    const int64_t blk = t % blocks, rg = t / blocks, grp = rg % g.groups, r = rg / g.groups;
    const int64_t c0 = blk * b.cblock, nc = std::max<int64_t>(0, std::min(Cig, c0 + b.cblock) - c0);
    T* dst = (r == 0 ? o.out : o.partials + (r - 1) * b.partial_elems) + grp * Cog * rows + c0 * K;
    for (int64_t i = 0; i < Cog; ++i) std::fill(dst + i * rows, dst + i * rows + nc * K, T(0));
    if (nc > 0) body(g.N * r / R, g.N * (r + 1) / R, grp, c0, nc, dst);
  });
  add_weight_partials(p, b, o);
}

// gradBias in a weight pass that sums it as it reads dy (Blocking::sums_bias): one double per
// batch range and output channel, sums[r * C_out + o], the last bias_sums_elems of the shared
// scratch (a plan adds them after parts that are whole multiples of 16 floats).
inline int64_t bias_sums_elems(const ConvGeometry& g, const Blocking& b) {
  return b.sums_bias ? round16(2 * b.ranges * g.C_out) : 0;
}
inline double* bias_sums(const ConvGeometry& g, const Blocking& b, const Operands<float>& o) {
  return reinterpret_cast<double*>(o.shared + b.shared_elems - bias_sums_elems(g, b));
}
// The sums a for_weight_tasks task adds its samples' dy into (zeroed here): those of its batch
// range and group where it is its range's first input-channel block (c0 == 0), else null (and
// null where gradBias is not asked for: Operands::bias null). The range is found from the first
// sample n0: range r starts at N r / R, and R <= N (plan_weight_split), so r = ceil(n0 R / N).
inline double* task_bias_sums(const Problem& p, const Blocking& b, const Operands<float>& o,
                              int64_t n0, int64_t grp, int64_t c0) {
  if (!o.bias || c0 != 0) return nullptr;
  const ConvGeometry& g = p.g;
  const int64_t r = ceil_div(n0 * b.ranges, g.N), Cog = g.cout_g();
  double* sums = bias_sums(g, b, o) + r * g.C_out + grp * Cog;
  std::fill(sums, sums + Cog, 0.0);
  return sums;
}
// After the tasks: gradBias[o] = the ranges' sums added in range order.
inline void finish_bias_sums(const Problem& p, const Blocking& b, const Operands<float>& o) {
  if (!o.bias) return;
  const ConvGeometry& g = p.g;
  const double* sums = bias_sums(g, b, o);
  for (int64_t c = 0; c < g.C_out; ++c) {
    double acc = 0;
    for (int64_t r = 0; r < b.ranges; ++r) acc += sums[r * g.C_out + c];
    o.bias[c] = static_cast<float>(acc);
  }
}

}  // namespace aclnn_cpu::conv
