// The second kind of registered algorithm: one that computes several primitives of a call together,
// planned on the call's own views (its ConvJob) instead of a dense Problem. algorithm.h's
// Algorithm cannot say either of the two there are:
//
//   scope kAll       every requested primitive of the call, on the caller's buffers as they lie
//                    (the time-major forms of ConvTbc: tbc_gemm, tbc_amx, tbc_bf16, tbc_convert;
//                    algo_tbc.cpp). Applicability depends on the views' strides and dtypes, which
//                    a Problem does not have, and nothing is copied into the workspace.
//   scope kBackward  backward_data and backward_weight in one pass over dy (depthwise_fused,
//                    algo_depthwise_fused.cpp: dx, dw and gradBias per (sample, channel)). One
//                    run computes two primitives' outputs.
//
// The planner (planner.cpp) consults the kAll list before the per-primitive lists: a form taken
// there computes the whole call and the per-primitive lists are not consulted. It consults the
// kBackward list after them, where both gradients are asked: a pass taken there replaces the runs
// of the backward_data and backward_weight choices (which it may base its preference on). Forcing
// (ACLNN_CPU_CONV_ALGO) takes a named one wherever it applies; a kAll form not named is not taken
// while any algorithm is forced (the forced per-primitive ones then run on the call's views), a
// kBackward pass not named follows its preference, i.e. the choices the forced lists made.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "conv/engine/algorithm.h"
#include "conv/engine/engine.h"
#include "conv/engine/source.h"
#include "cpu/cpu.h"

namespace aclnn_cpu::conv {

enum class JobScope { kAll, kBackward };
// "all" or "backward": what aclnnCpuConvAlgorithmPrimitive reports for a JobAlgorithm.
const char* job_scope_name(JobScope s);

// What a JobAlgorithm is asked to compute.
struct JobProblem {
  const ConvJob* job = nullptr;
  Problem problem;  // the whole call's (N not cut into runs)
  // kBackward: the per-primitive choices its run would replace (null for kAll).
  const Choice* data = nullptr;
  const Choice* weight = nullptr;
};

// Scratch of one run: `shared` bytes for all tasks and `slot` bytes per thread slot (64-byte
// multiples); `pack_elems`: floats of GEMM packing scratch at the start of each slot (0: none).
struct JobScratch {
  int64_t shared = 0, slot = 0;
  int64_t pack_elems = 0;
};

// A JobAlgorithm's answer in phase 1 (as Fit for an Algorithm).
struct JobFit {
  bool applies = false;
  bool preferred = false;  // its cost rules choose it (ignored when forced)
  std::string reason;      // why it does not apply, or why it is (not) preferred
  JobScratch scratch;
};

// The operands of one run, besides the job's views.
struct JobOperands {
  char* scratch = nullptr;  // scratch.shared + slots * scratch.slot bytes, 64-byte aligned
  // gradBias [C_out], to be summed from dy as the run reads it where the run can (null: not
  // asked, or not in this run); the run returns whether it wrote it.
  float* bias = nullptr;
  // kBackward: the inputs as stored (dense; Execution packs them where the views are not) and
  // dw [C_out, Cig*K] as dense fp32; dx goes into the job's out_x view.
  Source x, w, y;
  float* dw = nullptr;
};

struct JobAlgorithm {
  const char* name;
  JobScope scope;
  JobFit (*plan)(const JobProblem&);
  // kAll: called once per requested primitive `prim`, inside the executor's arena; kBackward:
  // once (prim = kBackwardData) for both gradients. fp32 only (plan refuses fp64). Returns
  // whether it wrote JobOperands::bias.
  bool (*run)(const ConvJob&, const Problem&, const JobFit&, Primitive prim, const JobOperands&);
  const char* blocking;  // how it splits the work, for the verbose plan line
  // The CPU features its kernels need: the planner offers it nothing where cpu::may_use says no,
  // and aclnnCpuConvAlgorithmRunsHere reports it.
  cpu::FeatureSet needs = {};
  // Reads bf16 inputs only, on `bf16_engine`: the AVX512_BF16 dot kernels (the bf16_dot
  // policy) or the AMX tiles (bf16_amx); aclnnCpuConvAlgorithmRunsHere asks that policy.
  bool bf16_only = false;
  // kBackward: reads x, w and y as stored (Sources) rather than as fp32 copies.
  bool reads_sources = false;
  Bf16Engine bf16_engine = Bf16Engine::kDot;
};

// The planner's pick of a JobAlgorithm.
struct JobChoice {
  const JobAlgorithm* algo = nullptr;
  JobFit fit;
  std::string why;  // for ACLNN_CPU_VERBOSE
};

// Every registered JobAlgorithm of `scope`, in order of preference; all of them (kAll first).
std::span<const JobAlgorithm* const> job_algorithms(JobScope scope);
std::span<const JobAlgorithm* const> all_job_algorithms();

// The planner's pick in `scope` for `jp`, if any (see the top of this file).
std::optional<JobChoice> choose_job_algorithm(JobScope scope, const JobProblem& jp);

// The registered JobAlgorithms (algo_tbc.cpp, algo_depthwise_fused.cpp).
extern const JobAlgorithm kTbcGemm;         // kAll: fp32 views, our sgemm on the caller's rows
extern const JobAlgorithm kTbcAmx;          // kAll: bf16 views, tile GEMMs on AMX
extern const JobAlgorithm kTbcBf16;         // kAll: bf16 views, the AVX512_BF16 pair kernels
extern const JobAlgorithm kTbcConvert;      // kAll: any float dtype, rows converted per task
extern const JobAlgorithm kDepthwiseFused;  // kBackward: dx, dw, gradBias in one pass over dy

}  // namespace aclnn_cpu::conv
