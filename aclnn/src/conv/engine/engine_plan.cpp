#include "conv/engine/engine_plan.h"

#include <algorithm>
#include <initializer_list>
#include <sstream>
#include <string>
#include <utility>

#include "conv/algorithms/algo_support.h"
#include "conv/kernels/grid/direct_grid.h"
#include "cpu/cpu.h"
#include "error.h"
#include "gemm/amx_gemm.h"
#include "gemm/sgemm.h"
#include "meta.h"
#include "runtime_options.h"

namespace aclnn_cpu::conv {
namespace {

// Workspace carving: byte offsets of 64-byte-aligned segments, overflow-checked in 128 bits.
struct Layout {
  unsigned __int128 total = 0;

  uint64_t add(unsigned __int128 bytes) {
    const uint64_t off = static_cast<uint64_t>(total);
    total += (bytes + kAlign - 1) / kAlign * kAlign;
    check(total <= kMaxWorkspaceBytes, ACLNN_ERR_PARAM_INVALID, "the computation needs more than ",
          kMaxWorkspaceBytes, " bytes (2^46) of workspace; the tensors are too large");
    return off;
  }
};

// Reserves a dense compute copy of `v` unless it is absent, empty or usable in place.
template <typename T>
uint64_t reserve(Layout& layout, bool needed, const std::optional<View5>& v, Round round) {
  if (!needed || !v || v->numel() == 0 || usable_in_place<T>(*v, round)) return kNotInWorkspace;
  return layout.add(static_cast<unsigned __int128>(v->numel()) * sizeof(T));
}

// Bytes of an algorithm's scratch: slots x (packing + other), shared, partials.
template <typename T>
unsigned __int128 scratch_bytes(const Choice& c, int slots) {
  const Blocking& b = c.b;
  const unsigned __int128 elems = static_cast<unsigned __int128>(slot_stride<T>(b)) * slots +
                                  ceil_div(b.shared_elems, 16) * 16 +
                                  static_cast<unsigned __int128>(b.partial_elems) *
                                      static_cast<unsigned __int128>(b.ranges - 1);
  return elems * sizeof(T);
}

std::string describe(const ConvGeometry& g) {
  std::ostringstream os;
  os << "N" << g.N << " C" << g.C_in << "->" << g.C_out << " g" << g.groups << " in" << g.in[0]
     << "x" << g.in[1] << "x" << g.in[2] << " k" << g.k[0] << "x" << g.k[1] << "x" << g.k[2] << " s"
     << g.stride[0] << "x" << g.stride[1] << "x" << g.stride[2] << " d" << g.dil[0] << "x"
     << g.dil[1] << "x" << g.dil[2] << " p" << g.pad_before[0] << "," << g.pad_before[1] << ","
     << g.pad_before[2] << "/" << g.pad_after[0] << "," << g.pad_after[1] << "," << g.pad_after[2];
  return os.str();
}

// A JobAlgorithm for the whole call (scope kAll: the time-major forms), if one is taken: it needs
// only its scratch (and the gradBias buffer if not in place).
bool plan_whole_job(Plan& p) {
  const ConvJob& j = p.job;
  p.combined = choose_job_algorithm(JobScope::kAll, JobProblem{&j, p.problem});
  if (!p.combined) return false;
  Layout layout;
  p.out_bias = reserve<float>(layout, true, j.out_bias, Round::kNone);
  const JobScratch& s = p.combined->fit.scratch;
  const unsigned __int128 bytes =
      static_cast<unsigned __int128>(s.slot) * p.problem.slots + static_cast<uint64_t>(s.shared);
  if (bytes > 0) p.scratch = layout.add(bytes);
  p.bytes = layout.total == 0 ? 0 : static_cast<uint64_t>(layout.total) + kAlign;
  return true;
}

// Reserves a dense copy of `v` in its own dtype unless it is dense already.
uint64_t reserve_raw(Layout& layout, bool needed, const std::optional<View5>& v) {
  if (!needed || !v || v->numel() == 0 || v->contiguous()) return kNotInWorkspace;
  return layout.add(static_cast<unsigned __int128>(v->numel()) * dtype_size(v->dtype));
}

// Whether the run of forward (prim 0) or backward_data (1) can store its output's 16-bit view
// itself: a bf16 kernel's bf16 view (Algorithm::writes_bf16), or a converting fp32 run's fp16 or
// bf16 view (Blocking::stores16); a dense view, and no bias to add to it.
bool stores16(const Plan& p, int prim) {
  const ConvJob& j = p.job;
  const std::optional<Choice>& c = p.choice[prim];
  const std::optional<View5>& out = prim == 0 ? j.out_y : j.out_x;
  if (p.problem.fp64 || !c || !out || !out->contiguous() || (j.bias && j.bias->numel() > 0))
    return false;
  if (c->bf16) return c->algo->writes_bf16 && out->dtype == ACL_BF16;
  return c->b.stores16 && reads_raw(p, *c) && (out->dtype == ACL_BF16 || out->dtype == ACL_FLOAT16);
}

// Samples per run of a per-sample primitive whose output `v` is computed in the workspace: at most
// kOutputChunkBytes of T per run, and no more than the output's own bytes where that still leaves
// runs of kMinRunSamples (a 16-bit output's fp32 runs then take at most its size, keeping the
// workspace within twice the largest tensor; ct3d's 2 samples cut into 1-sample runs were slower at
// 2 threads; measured: bench/RESULTS.md, design engine_plan.min-run-samples), at least one sample,
// N split into equal runs; 0 when the output is used in place (or is small).
constexpr int64_t kOutputChunkBytes = int64_t{8} << 20;
constexpr int64_t kMinRunSamples = 4;
template <typename T>
int64_t output_chunk(const std::optional<View5>& v, int64_t N) {
  if (!v || v->numel() == 0 || N <= 1 || usable_in_place<T>(*v, Round::kNone)) return 0;
  const int64_t sample = v->numel() / N * static_cast<int64_t>(sizeof(T));
  const int64_t own = v->numel() * static_cast<int64_t>(dtype_size(v->dtype));
  const int64_t budget =
      own / sample >= kMinRunSamples ? std::min(kOutputChunkBytes, own) : kOutputChunkBytes;
  if (sample * N <= budget) return 0;
  int64_t runs = std::min(N, ceil_div(sample * N, budget));
  while (N % runs != 0) ++runs;  // every run plans and computes the same N (runs <= N)
  return N / runs;
}

// Reserves the T buffer of an output computed `chunk` samples at a time (0: whole).
template <typename T>
uint64_t reserve_output(Layout& layout, const std::optional<View5>& v, int64_t chunk) {
  if (chunk == 0) return reserve<T>(layout, true, v, Round::kNone);
  return layout.add(static_cast<unsigned __int128>(v->numel() / v->dims[0] * chunk) * sizeof(T));
}

// How a choice splits its work (Blocking's fields; chunk: samples per run, 0 = all), e.g.
// "cblock:64 rows:16 cols:1 ranges:2 chunk:0".
std::string describe_blocking(const Blocking& b, int64_t chunk) {
  return "cblock:" + std::to_string(b.cblock) + " rows:" + std::to_string(b.rows) +
         " cols:" + std::to_string(b.cols) + " ranges:" + std::to_string(b.ranges) +
         " chunk:" + std::to_string(chunk);
}

}  // namespace

bool requested(const ConvJob& j, int prim) {
  return (prim == 0 ? j.out_y : prim == 1 ? j.out_x : j.out_w).has_value();
}

Problem run_problem(const Plan& p, Primitive prim) {
  Problem q = p.problem;
  if (p.chunk[static_cast<int>(prim)] > 0) q.g.N = p.chunk[static_cast<int>(prim)];
  return q;
}

bool reads_raw(const Plan& p, const Choice& c) {
  return c.bf16 || (c.algo->reads_sources && !p.problem.fp64);
}

InputUse input_use(const Plan& p) {
  // forward reads x and w, backward_data y and w, backward_weight x and y.
  static constexpr bool kReads[kPrimitiveCount][3] = {
      {true, true, false}, {false, true, true}, {true, false, true}};
  InputUse u;
  for (int i = 0; i < kPrimitiveCount; ++i) {
    if (!p.choice[i] || combined_covers(p, i)) continue;
    for (int k = 0; k < 3; ++k) (reads_raw(p, *p.choice[i]) ? u.raw[k] : u.t[k]) |= kReads[i][k];
  }
  if (p.combined && p.combined->algo->scope == JobScope::kBackward)  // x, w and y
    for (int k = 0; k < 3; ++k) (p.combined->algo->reads_sources ? u.raw[k] : u.t[k]) = true;
  return u;
}

bool combined_covers(const Plan& p, int prim) {
  if (!p.combined) return false;
  return p.combined->algo->scope == JobScope::kAll || prim != static_cast<int>(Primitive::kForward);
}

bool weight_sums_bias(const Plan& p) {
  const ConvJob& j = p.job;
  const std::optional<Choice>& c = p.choice[static_cast<int>(Primitive::kBackwardWeight)];
  // (An empty batch or no input channels: no weight task would run to zero the sums.)
  if (p.problem.fp64 || p.combined || !c || !c->b.sums_bias || !j.out_bias || j.g.N <= 0 ||
      j.g.cin_g() <= 0 || j.out_bias->numel() == 0 || j.bias_sum_of != ConvJob::BiasOf::kY || !j.y)
    return false;
  SrcKind kind = SrcKind::kF32;
  if (c->bf16) return true;  // the dot kernels read the bf16 bits as stored
  if (!reads_raw(p, *c) || !src_kind_of(j.y->dtype, j.round, &kind)) return false;
  // Rounded operands (USE_FP16, HF32): gradBias is the sum of dy as stored, so only a run that
  // sums dy before rounding it (Blocking::sums_unrounded) may make it.
  const bool rounded =
      kind == SrcKind::kF32Hf32 || kind == SrcKind::kF32Fp16 || kind == SrcKind::kBF16Fp16;
  return kind == SrcKind::kF32 || kind == SrcKind::kF16 || kind == SrcKind::kBF16 ||
         (rounded && c->b.sums_unrounded);
}

namespace {

// The choices for the plan's chunks (samples per run of forward / backward_data) and the
// workspace layout: everything after the chunks, on a plan that has none of it yet.
template <typename T>
void plan_choices_and_layout(Plan& p) {
  const ConvJob& j = p.job;
  for (int i = 0; i < kPrimitiveCount; ++i)
    if (requested(j, i))
      p.choice[i] = choose_algorithm(static_cast<Primitive>(i), run_problem(p, Primitive(i)));
  // A bf16 y or dx stored by its kernel needs no fp32 buffer, so no runs of a few samples either:
  // planned again for the whole batch (and kept only if the kernel is chosen again).
  for (int i = 0; i < 2; ++i) {
    if (p.chunk[i] > 0 && stores16(p, i)) {
      const int64_t chunk = std::exchange(p.chunk[i], 0);
      p.choice[i] = choose_algorithm(Primitive(i), run_problem(p, Primitive(i)));
      if (!stores16(p, i)) {
        p.chunk[i] = chunk;
        p.choice[i] = choose_algorithm(Primitive(i), run_problem(p, Primitive(i)));
      }
    }
    p.out16[i] = stores16(p, i);
  }
  // Both gradients in one pass (a JobAlgorithm of scope kBackward), consulted after their
  // choices. It writes dx into its view: no dx buffer, no runs of a few samples, no bf16 store.
  if (p.choice[1] && p.choice[2])
    p.combined = choose_job_algorithm(JobScope::kBackward,
                                      JobProblem{&j, p.problem, &*p.choice[1], &*p.choice[2]});
  const bool fused = p.combined.has_value();
  if (fused) p.chunk[1] = 0, p.out16[1] = false;
  // One scratch region for the final choices (the primitives run one after another; those a
  // fused pass replaces are counted too, as they are planned).
  unsigned __int128 scratch = 0;
  for (const std::optional<Choice>& c : p.choice)
    if (c) scratch = std::max(scratch, scratch_bytes<T>(*c, p.problem.slots));
  if (fused) {
    const JobScratch& s = p.combined->fit.scratch;
    scratch = std::max(scratch, static_cast<unsigned __int128>(s.slot) * p.problem.slots +
                                    static_cast<uint64_t>(s.shared));
  }
  const InputUse use = input_use(p);
  Layout layout;
  p.x = reserve<T>(layout, use.t[0], j.x, j.round);
  p.w = reserve<T>(layout, use.t[1], j.w, j.round);
  p.y = reserve<T>(layout, use.t[2], j.y, j.round);
  p.x_raw = reserve_raw(layout, use.raw[0], j.x);
  p.w_raw = reserve_raw(layout, use.raw[1], j.w);
  p.y_raw = reserve_raw(layout, use.raw[2], j.y);
  p.bias = reserve<T>(layout, requested(j, 0) || requested(j, 1), j.bias, Round::kNone);
  p.out_y = p.out16[0] ? kNotInWorkspace : reserve_output<T>(layout, j.out_y, p.chunk[0]);
  p.out_x = fused || p.out16[1] ? kNotInWorkspace : reserve_output<T>(layout, j.out_x, p.chunk[1]);
  p.out_w = reserve<T>(layout, true, j.out_w, Round::kNone);
  p.out_bias = reserve<T>(layout, true, j.out_bias, Round::kNone);
  if (scratch > 0) p.scratch = layout.add(scratch);
  // + kAlign of slack so a workspace that is not 64-byte aligned can be aligned in place.
  p.bytes = layout.total == 0 ? 0 : static_cast<uint64_t>(layout.total) + kAlign;
}

// Bytes of the call's largest tensor, in its own dtype (inputs and outputs).
uint64_t largest_tensor_bytes(const ConvJob& j) {
  uint64_t largest = 0;
  for (const std::optional<View5>* v : {&j.x, &j.w, &j.y, &j.out_y, &j.out_x, &j.out_w})
    if (*v)
      largest = std::max(largest, static_cast<uint64_t>((*v)->numel()) * dtype_size((*v)->dtype));
  return largest;
}

// The next smaller run length that splits N into equal runs (run > 1).
int64_t shorter_run(int64_t run, int64_t N) {
  for (int64_t r = run - 1; r >= 1; --r)
    if (N % r == 0) return r;
  return 0;
}

// The workspace contract (the performance issue): at most twice the bytes of the call's largest
// tensor. output_chunk sizes a 16-bit output's fp32 runs to its own bytes, which leaves the other
// half to the scratch; where the chosen algorithms' scratch takes more than that (ct2d_decoder's
// fp16 / bf16 at tier none: im2col_gemm's weight pass with x's planes converted per slot, 2,228,416
// bytes against 2,097,152), the runs of the outputs computed in the workspace are cut shorter, the
// longest runs that fit kept (planned again: the choices may differ for fewer samples), below
// kMinRunSamples if need be (that is a speed preference, the bound the contract). A plan that fits
// already is left as it is, so is one that no cut brings under the bound (shorter runs would only
// be slower). fp64 runs (double copies of fp32 tensors) are not held to the contract.
// `chunks`: the runs planned before the choices (output_chunk).
template <typename T>
void fit_output_runs_to_bound(Plan& p, const int64_t (&chunks)[2]) {
  const int64_t N = p.job.g.N;
  const uint64_t bound = 2 * largest_tensor_bytes(p.job);
  if (p.problem.fp64 || p.bytes <= bound || N <= 1) return;
  // Samples per run of y and dx where they are computed in the workspace (0: not cut), and the
  // bytes one-sample runs would save: where that is short of the excess (a scratch that alone
  // takes more, e.g. small tensors), no cut is tried.
  const std::optional<View5>* outs[2] = {&p.job.out_y, &p.job.out_x};
  const uint64_t buffers[2] = {p.out_y, p.out_x};
  int64_t run[2] = {};
  uint64_t saving = 0;
  for (int i = 0; i < 2; ++i) {
    if (buffers[i] == kNotInWorkspace) continue;
    run[i] = p.chunk[i] > 0 ? p.chunk[i] : N;
    saving += static_cast<uint64_t>((*outs[i])->numel() / N * (run[i] - 1)) * sizeof(T);
  }
  if (saving < p.bytes - bound) return;
  for (;;) {
    bool cut = false;
    for (int64_t& r : run)
      if (r > 1) r = shorter_run(r, N), cut = true;
    if (!cut) return;
    Plan q;
    q.job = p.job;
    q.arena = p.arena;
    q.problem = p.problem;
    for (int i = 0; i < 2; ++i) q.chunk[i] = run[i] > 0 ? run[i] : chunks[i];
    plan_choices_and_layout<T>(q);
    if (q.bytes <= bound) {
      p = std::move(q);
      return;
    }
  }
}

}  // namespace

template <typename T>
void plan_workspace(Plan& p) {
  if (plan_whole_job(p)) return;
  const ConvJob& j = p.job;
  p.chunk[0] = output_chunk<T>(j.out_y, j.g.N);
  p.chunk[1] = output_chunk<T>(j.out_x, j.g.N);
  const int64_t chunks[2] = {p.chunk[0], p.chunk[1]};
  plan_choices_and_layout<T>(p);
  fit_output_runs_to_bound<T>(p, chunks);
}

void print_plan(const char* api, const Plan& p) {
  const std::string geo = describe(p.job.g);
  for (int i = 0; i < kPrimitiveCount; ++i) {
    if (!requested(p.job, i)) continue;
    const bool combined = combined_covers(p, i);
    const char* name = combined ? p.combined->algo->name : p.choice[i]->algo->name;
    std::string why = combined ? p.combined->why : p.choice[i]->why;
    if (i == static_cast<int>(Primitive::kBackwardWeight) && weight_sums_bias(p))
      why += "; gradBias summed in this pass";
    // A JobAlgorithm splits its work by its own rule (e.g. ConvTbc's per-tap GEMMs).
    const std::string blocking =
        combined ? p.combined->algo->blocking : describe_blocking(p.choice[i]->b, p.chunk[i]);
    // What the products are computed on: double, bf16 pairs (the dot kernels or the AMX tiles),
    // or fp32.
    const bool bf16 = combined ? p.combined->algo->bf16_only : p.choice[i]->bf16;
    const char* math = p.problem.fp64 ? "f64" : bf16 ? "bf16" : "f32";
    std::fprintf(stderr,
                 "aclnn_cpu_verbose,plan,%s,%s,%s,%s %s,threads=%d,workspace=%llu,isa=%s,"
                 "bf16_dot=%s,amx=%s,blocking=%s,%s\n",
                 api, primitive_name(static_cast<Primitive>(i)), name, geo.c_str(), math,
                 p.problem.slots, static_cast<unsigned long long>(p.bytes),
                 cpu::tier_name(cpu::tier()), bf16_dot_kernels() ? "on" : "off",
                 gemm::amx_tiles_name(gemm::amx_tiles()), blocking.c_str(), why.c_str());
  }
}

template void plan_workspace<float>(Plan&);
template void plan_workspace<double>(Plan&);

}  // namespace aclnn_cpu::conv
