// The registry lists and the planner of algorithm.h.
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <optional>
#include <string_view>

#include "conv/engine/algorithm.h"
#include "aclnn/aclnn_cpu_conv.h"
#include "conv/engine/algorithms.h"
#include "conv/kernels/grid/direct_grid.h"
#include "conv/algorithms/tbc_gemm.h"
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

}  // namespace aclnn_cpu::conv

// The diagnostics of aclnn/aclnn_cpu_conv.h: the registered algorithms, then the time-major forms
// (tbc_gemm.h; they serve all three primitives of ConvTbc).
namespace {
constexpr aclnn_cpu::conv::TbcMode kTbcForms[] = {aclnn_cpu::conv::TbcMode::kF32,
                                                  aclnn_cpu::conv::TbcMode::kBf16,
                                                  aclnn_cpu::conv::TbcMode::kConvert};
}  // namespace

extern "C" {

ACL_FUNC_VISIBILITY int aclnnCpuConvAlgorithmCount(void) {
  return static_cast<int>(aclnn_cpu::conv::all_algorithms().size() + std::size(kTbcForms));
}

ACL_FUNC_VISIBILITY const char* aclnnCpuConvAlgorithmName(int index) {
  const auto all = aclnn_cpu::conv::all_algorithms();
  if (index < 0 || index >= aclnnCpuConvAlgorithmCount()) return nullptr;
  const size_t i = static_cast<size_t>(index);
  return i < all.size() ? all[i]->name : aclnn_cpu::conv::tbc_name(kTbcForms[i - all.size()]);
}

ACL_FUNC_VISIBILITY int aclnnCpuConvAlgorithmRunsHere(int index) {
  using aclnn_cpu::conv::TbcMode;
  const auto all = aclnn_cpu::conv::all_algorithms();
  if (index < 0 || index >= aclnnCpuConvAlgorithmCount()) return 0;
  const size_t i = static_cast<size_t>(index);
  // An algorithm without run_f32 reads bf16 only, on its engine (the dot kernels or the tiles).
  if (i < all.size()) {
    const aclnn_cpu::conv::Algorithm& a = *all[i];
    const bool engine = a.bf16_engine == aclnn_cpu::conv::Bf16Engine::kAmx
                            ? aclnn_cpu::gemm::amx_tiles_run()
                            : aclnn_cpu::conv::bf16_dot_kernels();
    return aclnn_cpu::cpu::may_use(a.needs) && (a.run_f32 || engine);
  }
  switch (kTbcForms[i - all.size()]) {
    case TbcMode::kBf16:
      return aclnn_cpu::conv::bf16_dot_kernels();
    case TbcMode::kConvert:
      return aclnn_cpu::gemm::have_packed_gemm();
    default:
      return 1;
  }
}

ACL_FUNC_VISIBILITY int aclnnCpuConvAmxTiles(void) {
  return static_cast<int>(aclnn_cpu::gemm::amx_tiles());
}

ACL_FUNC_VISIBILITY const char* aclnnCpuConvAlgorithmPrimitive(int index) {
  const auto all = aclnn_cpu::conv::all_algorithms();
  if (index < 0 || index >= aclnnCpuConvAlgorithmCount()) return nullptr;
  const size_t i = static_cast<size_t>(index);
  return i < all.size() ? aclnn_cpu::conv::primitive_name(all[i]->primitive) : "all";
}

}  // extern "C"
