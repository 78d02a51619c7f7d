// Phase 1 of the convolution engine (engine.h): the plan of one call, that is the algorithm chosen
// for each requested primitive (algorithm.h), or a JobAlgorithm for several of them
// (job_algorithm.h), and the workspace carved into dense input copies,
// output buffers and the algorithms' scratch. Phase 2 (engine.cpp) executes it. Internal to the
// engine.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include <tbb/task_arena.h>

#include "conv/engine/algorithm.h"
#include "conv/engine/engine.h"
#include "conv/engine/job_algorithm.h"

namespace aclnn_cpu::conv {

inline constexpr uint64_t kAlign = 64;
// The offset of an operand that is used in place, empty or not needed.
inline constexpr uint64_t kNotInWorkspace = ~uint64_t{0};

struct Plan {
  ConvJob job;
  std::shared_ptr<tbb::task_arena> arena;  // concurrency <= problem.slots
  Problem problem;
  std::optional<Choice> choice[kPrimitiveCount];  // forward, backward_data, backward_weight
  // A JobAlgorithm that computes several of them: scope kAll (the whole call on its own views: no
  // choice[] then, only its scratch and gradBias in the workspace) or kBackward (both gradients
  // in one pass, in place of the runs of choice[1] and choice[2]).
  std::optional<JobChoice> combined;
  // Workspace offsets of the dense compute copies / results, and of the algorithms' scratch
  // (one region: the primitives run one after another).
  uint64_t x = kNotInWorkspace, w = kNotInWorkspace, y = kNotInWorkspace, bias = kNotInWorkspace;
  // Dense copies in the inputs' own dtype, for algorithms that read them as stored (bf16 dot
  // kernels, reads_sources), where the views are not dense already.
  uint64_t x_raw = kNotInWorkspace, w_raw = kNotInWorkspace, y_raw = kNotInWorkspace;
  uint64_t out_y = kNotInWorkspace, out_x = kNotInWorkspace, out_w = kNotInWorkspace;
  uint64_t out_bias = kNotInWorkspace, scratch = kNotInWorkspace;
  uint64_t bytes = 0;
  // Samples per run of forward / backward_data (0: all): an output computed in the workspace
  // (another dtype or layout) is computed and unpacked a few samples at a time.
  int64_t chunk[kPrimitiveCount] = {};
  // Forward / backward_data: the bf16 kernel stores y / dx into its dense bf16 view itself.
  bool out16[2] = {};
};

// Whether `j` asks for the result of primitive `prim` (y, dx or dw).
bool requested(const ConvJob& j, int prim);

// The problem one run of `prim` computes: N cut to the plan's chunk.
Problem run_problem(const Plan& p, Primitive prim);

// Whether a choice reads its inputs as stored (bf16 bits or Sources) rather than as T copies
// (fp64 runs read double copies: Sources are fp32 reads).
bool reads_raw(const Plan& p, const Choice& c);

// Which inputs the chosen algorithms read as T copies (t) and as stored (raw): x, w, y.
struct InputUse {
  bool t[3] = {}, raw[3] = {};
};
InputUse input_use(const Plan& p);

// Whether primitive `prim` is computed by the plan's JobAlgorithm (Plan::combined).
bool combined_covers(const Plan& p, int prim);

// Whether the chosen weight algorithm sums gradBias as it reads dy (Blocking::sums_bias), so the
// engine hands it the gradBias buffer (Operands::bias) and skips channel_sum: fp32 arithmetic,
// gradBias the sum of dy, and dy read exactly as stored (fp32, fp16 or bf16, no operand rounding:
// gradBias is not Cube work).
bool weight_sums_bias(const Plan& p);

// Phase 1 after the geometry checks: the algorithm of each requested primitive and the workspace
// layout (T = float or double, the arithmetic).
template <typename T>
void plan_workspace(Plan& p);

// ACLNN_CPU_VERBOSE's plan lines: per requested primitive, the algorithm and why, the geometry,
// the arithmetic, threads, workspace, ISA and blocking.
void print_plan(const char* api, const Plan& p);

}  // namespace aclnn_cpu::conv
