// The CPU as libaclnn's kernels may use it: the features the CPU and OS offer (cpu/features.h),
// narrowed once per process by the caps, the instruction-set tier that results, and the named
// policies that choose between kernels both of which could run. Everything in the library that
// depends on the CPU asks here; tests and benchmarks ask through the public introspection calls
// (aclnn/aclnn_cpu_isa.h) or read the verbose plan line, and never repeat this logic.
//
// The caps (environment, read once):
//   ACLNN_CPU_MAX_ISA=none|avx2|avx512|avx512_bf16|amx  the widest tier the kernels may use
//                                                       (oneDNN's DNNL_MAX_CPU_ISA); any other
//                                                       value is ignored (cpu::describe says so)
//   ACLNN_CPU_NO_AVX512=1                               the same as ACLNN_CPU_MAX_ISA=avx2
//   ACLNN_CPU_BF16_DOT=0|1                              forces the bf16_dot policy off or on
//                                                       (on only where avx512_bf16 is usable)
//   ACLNN_CPU_BF16_AMX=0|1                              forces the bf16_amx policy off or on
//                                                       (on only where AMX is usable)
//   ACLNN_CPU_BCAST_REG=0|1                             forces the bcast_reg policy off or on
//                                                       (on only where AVX-512 is usable)
#pragma once

#include <string>

#include "cpu/features.h"

namespace aclnn_cpu::cpu {

// Instruction-set tiers, each including the ones before it:
//   kAvx2        AVX2 + FMA + F16C                 (Haswell, Zen 1-3)
//   kAvx512      + AVX-512 F, BW, VL, DQ           (Skylake-SP, Ice Lake)
//   kAvx512Bf16  + AVX512_BF16 (+ AVX512_FP16 where present: Zen 4/5, Sapphire Rapids on)
//   kAmx         + AMX tiles with bf16 products    (Sapphire Rapids on, with Linux's permission)
enum class Tier : int { kNone = 0, kAvx2, kAvx512, kAvx512Bf16, kAmx };
inline constexpr int kTierCount = 5;
const char* tier_name(Tier t);
bool tier_by_name(const char* name, Tier* t);
// The features each tier requires (cumulative); an algorithm or kernel declares one of these, or
// its own set, as what it needs.
inline constexpr FeatureSet kAvx2Features{Feature::kAvx2, Feature::kFma, Feature::kF16c};
inline constexpr FeatureSet kAvx512Features =
    kAvx2Features |
    FeatureSet{Feature::kAvx512f, Feature::kAvx512bw, Feature::kAvx512vl, Feature::kAvx512dq};
inline constexpr FeatureSet kAvx512Bf16Features =
    kAvx512Features | FeatureSet{Feature::kAvx512Bf16};
inline constexpr FeatureSet kAmxFeatures =
    kAvx512Bf16Features | FeatureSet{Feature::kAmxTile, Feature::kAmxBf16};
FeatureSet tier_features(Tier t);

// Policies: choices between kernels that can both run here, decided from the features and the
// vendor, each forceable for tests and comparisons.
enum class Policy : int {
  // bf16 inputs are read by the AVX512_BF16 dot kernels (vdpbf16ps) instead of being converted
  // to fp32 for the FMA kernels. On where vdpbf16ps issues at the fp32 FMA rate (AMD Zen 4/5);
  // off on Intel, which issues it at half that rate (measured: bench/RESULTS.md).
  kBf16Dot = 0,
  // bf16 inputs of the matrix-product convolutions run on the AMX tiles (TDPBF16PS: a 16 x 16 x 32
  // tile product a cycle, 16x an AVX-512 FMA core) where AMX is usable; first in the bf16 order
  // AMX, dot kernels, conversion.
  kBf16Amx,
  // The fp32 channel-lane row kernels (cl_direct, AVX-512) broadcast each source column into a
  // register once and issue all its taps' FMAs from it, rather than folding the broadcast into
  // every FMA's memory operand. On where AVX-512 FMAs issue at full width (Intel: cl_direct's
  // passes 0.98-1.6x as fast, the data gradients of 3x3 kernels 1.1-1.5x), off on AMD family 25
  // (Zen 4 issues a 512-bit FMA as two halves, and the folded form measured 2.5% faster there;
  // measured: bench/RESULTS.md, design cl_direct_avx512.fold-broadcast).
  kBcastReg,
  kCount
};
inline constexpr int kPolicyCount = static_cast<int>(Policy::kCount);
const char* policy_name(Policy p);
bool policy_by_name(const char* name, Policy* p);

// What this process runs, decided once (thread-safe) on first use.
struct Capabilities {
  CpuReading cpu;               // what the CPU and OS offer
  Tier cap = Tier::kAmx;        // the cap in force (kAmx: none)
  std::string cap_note;         // why the cap is what it is ("" when unset)
  FeatureSet usable;            // cpu.features within the cap
  Tier tier = Tier::kNone;      // the widest tier whose features are all usable
  Tier uncapped = Tier::kNone;  // the same without the cap
  bool policy[kPolicyCount] = {};
  std::string policy_reason[kPolicyCount];
};
const Capabilities& capabilities();

// The switches capabilities() reads from the environment (null: unset).
struct Switches {
  const char* max_isa = nullptr;    // ACLNN_CPU_MAX_ISA
  const char* no_avx512 = nullptr;  // ACLNN_CPU_NO_AVX512
  const char* bf16_dot = nullptr;   // ACLNN_CPU_BF16_DOT
  const char* bf16_amx = nullptr;   // ACLNN_CPU_BF16_AMX
  const char* bcast_reg = nullptr;  // ACLNN_CPU_BCAST_REG
};
// The decision itself, a pure function of a reading and the switches (tests feed it the readings
// of every machine kind: capabilities() is decide(read_cpu(), <the environment>)).
Capabilities decide(const CpuReading& cpu, const Switches& sw);

// Whether every feature of `needs` may be used here.
inline bool may_use(FeatureSet needs) {
  return capabilities().usable.contains(needs);
}
inline bool may_use(Feature f) {
  return capabilities().usable.has(f);
}
inline Tier tier() {
  return capabilities().tier;
}
inline bool policy(Policy p) {
  return capabilities().policy[static_cast<int>(p)];
}

// One line for logs and the verbose switch:
// "isa=avx512_bf16;cap=none;cpu=intel family 6 model 207;features=avx2,...;
//  policies=bf16_dot:off(reason)".
const std::string& describe();
std::string describe(const Capabilities& c);

// A function compiled for three targets (AVX-512F, AVX2, baseline x86-64), picked by the tier in
// force, caps included (GCC's target_clones would pick by the CPU alone). See cpu/simd_variants.h.
template <typename Fn>
Fn pick_variant(Fn avx512, Fn avx2, Fn baseline) {
  if (may_use(Feature::kAvx512f)) return avx512;
  if (may_use(Feature::kAvx2)) return avx2;
  return baseline;
}

}  // namespace aclnn_cpu::cpu
