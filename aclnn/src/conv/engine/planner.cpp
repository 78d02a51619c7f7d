// The registry lists and the planners of algorithm.h and job_algorithm.h, and the diagnostics of
// aclnn/aclnn_cpu_conv.h, derived from the lists.
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "conv/engine/algorithm.h"
#include "aclnn/aclnn_cpu_conv.h"
#include "conv/engine/algorithms.h"
#include "conv/engine/job_algorithm.h"
#include "conv/kernels/grid/direct_grid.h"
#include "gemm/amx_gemm.h"
#include "gemm/sgemm.h"

namespace aclnn_cpu::conv {
namespace {

// In order of preference: the specialised direct kernels first, the general lowerings last (the
// last of each list applies to every geometry and dtype).
constexpr const Algorithm* kForward[] = {
    &kAmxGemmForward,       &kDepthwiseForward,    &kPointwiseForward,
    &kStridedDirectForward, &kClDirectForward,     &kGridDirectForward,
    &kGridGemmForward,      &kImplicitGemmForward, &kIm2colGemmForward};
constexpr const Algorithm* kData[] = {
    &kAmxGemmData,        &kDepthwiseData,  &kPointwiseData,    &kClDirectData,
    &kClDirectBf16Data,   &kGridDirectData, &kFlipGridGemmData, &kFlipImplicitGemmData,
    &kFlipIm2colGemmData, &kCol2imGemmData};
constexpr const Algorithm* kWeight[] = {
    &kAmxGemmWeight,    &kDepthwiseWeight, &kPointwiseWeight,    &kStridedDirectWeight,
    &kGridDirectWeight, &kGridGemmWeight,  &kImplicitGemmWeight, &kIm2colGemmWeight};
// Every registered algorithm, derived from the three lists (forward, data, weight).
template <size_t F, size_t D, size_t W>
constexpr std::array<const Algorithm*, F + D + W> concat(const Algorithm* const (&f)[F],
                                                         const Algorithm* const (&d)[D],
                                                         const Algorithm* const (&w)[W]) {
  std::array<const Algorithm*, F + D + W> all{};
  size_t i = 0;
  for (const Algorithm* a : f) all[i++] = a;
  for (const Algorithm* a : d) all[i++] = a;
  for (const Algorithm* a : w) all[i++] = a;
  return all;
}
constexpr auto kAll = concat(kForward, kData, kWeight);

// The JobAlgorithms (job_algorithm.h): the time-major forms, consulted before the lists above,
// and the fused backward passes, consulted after them; every one of them, derived from the two.
constexpr const JobAlgorithm* kWholeJob[] = {&kTbcGemm, &kTbcAmx, &kTbcBf16, &kTbcConvert};
constexpr const JobAlgorithm* kFusedBackward[] = {&kDepthwiseFused};
template <size_t A, size_t B>
constexpr std::array<const JobAlgorithm*, A + B> concat_jobs(const JobAlgorithm* const (&a)[A],
                                                             const JobAlgorithm* const (&b)[B]) {
  std::array<const JobAlgorithm*, A + B> all{};
  size_t i = 0;
  for (const JobAlgorithm* x : a) all[i++] = x;
  for (const JobAlgorithm* x : b) all[i++] = x;
  return all;
}
constexpr auto kAllJobs = concat_jobs(kWholeJob, kFusedBackward);

// The comma-separated names of ACLNN_CPU_CONV_ALGO, or empty.
std::string_view forced_list() {
  const char* env = std::getenv("ACLNN_CPU_CONV_ALGO");
  return env ? std::string_view(env) : std::string_view();
}

}  // namespace

const char* primitive_name(Primitive p) {
  switch (p) {
    case Primitive::kForward:
      return "forward";
    case Primitive::kBackwardData:
      return "backward_data";
    case Primitive::kBackwardWeight:
      return "backward_weight";
  }
  return "?";
}

std::span<const Algorithm* const> algorithms(Primitive p) {
  switch (p) {
    case Primitive::kForward:
      return kForward;
    case Primitive::kBackwardData:
      return kData;
    case Primitive::kBackwardWeight:
      return kWeight;
  }
  return {};
}

std::span<const Algorithm* const> all_algorithms() {
  return kAll;
}

const char* job_scope_name(JobScope s) {
  return s == JobScope::kAll ? "all" : "backward";
}

std::span<const JobAlgorithm* const> job_algorithms(JobScope scope) {
  if (scope == JobScope::kAll) return kWholeJob;
  return kFusedBackward;
}

std::span<const JobAlgorithm* const> all_job_algorithms() {
  return kAllJobs;
}

bool algorithm_forced(const char* name) {
  std::string_view list = forced_list();
  while (!list.empty()) {
    const size_t comma = list.find(',');
    if (list.substr(0, comma) == name) return true;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return false;
}

bool any_algorithm_forced() {
  return !forced_list().empty();
}

bool verbose() {
  const char* env = std::getenv("ACLNN_CPU_VERBOSE");
  return env && env[0] != '\0' && std::strcmp(env, "0") != 0;
}

namespace {

// The forced algorithm of `list` that applies to `problem`, if any (bf16: one with run_bf16).
std::optional<Choice> forced_choice(std::span<const Algorithm* const> list, Problem problem) {
  problem.forced = true;
  for (const Algorithm* a : list) {
    if (!algorithm_forced(a->name) || (problem.bf16 && !reads_bf16(*a, problem))) continue;
    Fit fit = a->plan(problem);
    if (fit.applies && (!problem.fp64 || a->run_f64))
      return Choice{a, fit.b, "forced by ACLNN_CPU_CONV_ALGO", problem.bf16};
  }
  return std::nullopt;
}

// The first applicable and preferred algorithm of `list` (bf16: one with run_bf16), and the
// reasons the ones before it were passed over.
std::optional<Choice> preferred_choice(std::span<const Algorithm* const> list,
                                       const Problem& problem, std::string& skipped) {
  for (const Algorithm* a : list) {
    if (problem.bf16 && !reads_bf16(*a, problem)) continue;
    Fit fit = a->plan(problem);
    if (fit.applies && fit.preferred && (!problem.fp64 || a->run_f64))
      return Choice{a, fit.b, fit.reason + (skipped.empty() ? "" : " (not: " + skipped + ")"),
                    problem.bf16};
    skipped += (skipped.empty() ? "" : "; ") + std::string(a->name) + ": " + fit.reason;
  }
  return std::nullopt;
}

}  // namespace

Choice choose_algorithm(Primitive prim, Problem problem) {
  const auto list = algorithms(prim);
  std::string skipped;
  if (problem.bf16) {  // bf16 read natively where an algorithm can, else converted to fp32
    if (auto c = forced_choice(list, problem)) return *c;
    if (!any_algorithm_forced())
      if (auto c = preferred_choice(list, problem, skipped)) return *c;
    problem.bf16 = false;
    skipped = "bf16 converted to fp32";
  }
  if (auto c = forced_choice(list, problem)) return *c;
  if (auto c = preferred_choice(list, problem, skipped)) return *c;
  // Unreachable: the last algorithm of every list applies to everything.
  const Algorithm* last = list.back();
  return Choice{last, last->plan(problem).b, "fallback"};
}

std::optional<JobChoice> choose_job_algorithm(JobScope scope, const JobProblem& jp) {
  const auto list = job_algorithms(scope);
  // Forced: the first named one that can run here and applies.
  if (any_algorithm_forced()) {
    for (const JobAlgorithm* a : list) {
      if (!algorithm_forced(a->name) || !cpu::may_use(a->needs)) continue;
      JobFit fit = a->plan(jp);
      if (fit.applies) return JobChoice{a, fit, "forced by ACLNN_CPU_CONV_ALGO"};
    }
    // The whole-call forms yield to the forced per-primitive algorithms, which then run on the
    // call's views; a fused pass follows the choices those made (its preference).
    if (scope == JobScope::kAll) return std::nullopt;
  }
  std::string skipped;
  for (const JobAlgorithm* a : list) {
    if (!cpu::may_use(a->needs)) {
      skipped += (skipped.empty() ? "" : "; ") + std::string(a->name) + ": not on this CPU";
      continue;
    }
    JobFit fit = a->plan(jp);
    if (fit.applies && fit.preferred) {
      std::string why = fit.reason + (skipped.empty() ? "" : " (not: " + skipped + ")");
      return JobChoice{a, std::move(fit), std::move(why)};
    }
    skipped += (skipped.empty() ? "" : "; ") + std::string(a->name) + ": " + fit.reason;
  }
  return std::nullopt;
}

}  // namespace aclnn_cpu::conv

// The diagnostics of aclnn/aclnn_cpu_conv.h: the registered Algorithms, then the JobAlgorithms.
namespace aclnn_cpu::conv {
namespace {

// Entry `index` of the list of all algorithms: an Algorithm or a JobAlgorithm (both null: out of
// range).
struct Entry {
  const Algorithm* algo = nullptr;
  const JobAlgorithm* job = nullptr;
};
Entry entry(int index) {
  const auto all = all_algorithms();
  const auto jobs = all_job_algorithms();
  if (index < 0) return {};
  const size_t i = static_cast<size_t>(index);
  if (i < all.size()) return {all[i], nullptr};
  if (i - all.size() < jobs.size()) return {nullptr, jobs[i - all.size()]};
  return {};
}

// Whether the bf16 engine `e` runs here (the bf16_dot and bf16_amx policies).
bool bf16_engine_runs(Bf16Engine e) {
  return e == Bf16Engine::kAmx ? gemm::amx_tiles_run() : bf16_dot_kernels();
}

}  // namespace
}  // namespace aclnn_cpu::conv

extern "C" {

ACL_FUNC_VISIBILITY int aclnnCpuConvAlgorithmCount(void) {
  return static_cast<int>(aclnn_cpu::conv::all_algorithms().size() +
                          aclnn_cpu::conv::all_job_algorithms().size());
}

ACL_FUNC_VISIBILITY const char* aclnnCpuConvAlgorithmName(int index) {
  const auto e = aclnn_cpu::conv::entry(index);
  return e.algo ? e.algo->name : e.job ? e.job->name : nullptr;
}

ACL_FUNC_VISIBILITY int aclnnCpuConvAlgorithmRunsHere(int index) {
  const auto e = aclnn_cpu::conv::entry(index);
  // An algorithm without run_f32 (or bf16_only) reads bf16 only, on its engine (the dot kernels
  // or the tiles).
  if (e.algo)
    return aclnn_cpu::cpu::may_use(e.algo->needs) &&
           (e.algo->run_f32 || aclnn_cpu::conv::bf16_engine_runs(e.algo->bf16_engine));
  if (e.job)
    return aclnn_cpu::cpu::may_use(e.job->needs) &&
           (!e.job->bf16_only || aclnn_cpu::conv::bf16_engine_runs(e.job->bf16_engine));
  return 0;
}

ACL_FUNC_VISIBILITY int aclnnCpuConvAmxTiles(void) {
  return static_cast<int>(aclnn_cpu::gemm::amx_tiles());
}

ACL_FUNC_VISIBILITY const char* aclnnCpuConvAlgorithmPrimitive(int index) {
  const auto e = aclnn_cpu::conv::entry(index);
  if (e.algo) return aclnn_cpu::conv::primitive_name(e.algo->primitive);
  return e.job ? aclnn_cpu::conv::job_scope_name(e.job->scope) : nullptr;
}

}  // extern "C"
