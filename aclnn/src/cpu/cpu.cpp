#include "cpu/cpu.h"

#include <cstdlib>

namespace aclnn_cpu::cpu {

namespace {

constexpr const char* kTierNames[kTierCount] = {"none", "avx2", "avx512", "avx512_bf16", "amx"};
constexpr const char* kPolicyNames[kPolicyCount] = {"bf16_dot", "bf16_amx", "bcast_reg"};

// The features a cap lets through: its tier's, plus AVX512_FP16 from avx512_bf16 on (the two
// came together on Intel; no tier requires AVX512_FP16, since Zen 4/5 lack it).
FeatureSet allowed_by(Tier cap) {
  FeatureSet s = tier_features(cap);
  if (cap >= Tier::kAvx512Bf16) s = s | FeatureSet{Feature::kAvx512Fp16};
  return s;
}

Tier widest_tier(FeatureSet s) {
  for (int t = kTierCount - 1; t > 0; --t)
    if (s.contains(tier_features(static_cast<Tier>(t)))) return static_cast<Tier>(t);
  return Tier::kNone;
}

void apply_cap(Capabilities& c, const char* max, const char* no512) {
  c.cap = Tier::kAmx;
  if (max && *max) {
    Tier t = Tier::kAmx;
    if (tier_by_name(max, &t)) {
      c.cap = t;
      c.cap_note = std::string("ACLNN_CPU_MAX_ISA=") + max;
    } else {
      c.cap_note = std::string("ACLNN_CPU_MAX_ISA=") + max + " ignored (not a tier)";
    }
  }
  if (no512 && no512[0] == '1' && c.cap > Tier::kAvx2) {
    c.cap = Tier::kAvx2;
    c.cap_note = "ACLNN_CPU_NO_AVX512=1";
  }
  c.usable = c.cpu.features & allowed_by(c.cap);
  c.tier = widest_tier(c.usable);
  c.uncapped = widest_tier(c.cpu.features);
}

// Applies a policy's switch (NAME=0|1, value env): true when it forces the policy, false when
// unset or malformed (the default then stands).
bool forced(Capabilities& c, Policy p, const char* name, const char* env) {
  if (!env || (env[0] != '0' && env[0] != '1') || env[1] != '\0') return false;
  const int i = static_cast<int>(p);
  c.policy[i] = env[0] == '1';
  c.policy_reason[i] = std::string("forced by ") + name + "=" + env;
  return true;
}

void decide_bf16_dot(Capabilities& c, const char* env) {
  const int i = static_cast<int>(Policy::kBf16Dot);
  if (!c.usable.contains(kAvx512Bf16Features)) {
    c.policy[i] = false;
    c.policy_reason[i] = "no avx512_bf16 within the cap";
    return;
  }
  if (forced(c, Policy::kBf16Dot, "ACLNN_CPU_BF16_DOT", env)) return;
  // AMD Zen 4/5 issue vdpbf16ps (two bf16 products a lane) at the rate of an fp32 FMA, so the dot
  // kernels read half the bytes at the same arithmetic rate. Intel (Sapphire/Emerald Rapids)
  // issues it at half the FMA rate, and converting bf16 to fp32 while packing and running the
  // fp32 kernels is faster there.
  c.policy[i] = c.cpu.vendor == Vendor::kAmd;
  c.policy_reason[i] = c.policy[i] ? "AMD: vdpbf16ps at the fp32 FMA rate"
                                   : "not AMD: vdpbf16ps at half the fp32 FMA rate";
}

// AMX first wherever it is usable (the caps and Linux's tile-data permission included); the
// switch can only turn it off, or confirm it.
void decide_bf16_amx(Capabilities& c, const char* env) {
  const int i = static_cast<int>(Policy::kBf16Amx);
  if (!c.usable.contains(kAmxFeatures)) {
    c.policy[i] = false;
    c.policy_reason[i] = c.cpu.amx_refused ? "AMX refused by the OS (arch_prctl XTILEDATA)"
                                           : "no amx_bf16 within the cap";
    return;
  }
  if (forced(c, Policy::kBf16Amx, "ACLNN_CPU_BF16_AMX", env)) return;
  c.policy[i] = true;
  c.policy_reason[i] = "AMX tiles usable: 16x the bf16 products of an AVX-512 FMA";
}

// Register broadcasts wherever the AVX-512 row kernels run except on Zen 4 (AMD family 25; Zen 3,
// the same family, has no AVX-512). Its FMAs issue as two halves, so the load ports keep up with
// a broadcast folded into each FMA, and the folded form's fewer instructions win there.
void decide_bcast_reg(Capabilities& c, const char* env) {
  const int i = static_cast<int>(Policy::kBcastReg);
  if (!c.usable.contains(kAvx512Features)) {
    c.policy[i] = false;
    c.policy_reason[i] = "no avx512 within the cap";
    return;
  }
  if (forced(c, Policy::kBcastReg, "ACLNN_CPU_BCAST_REG", env)) return;
  const bool zen4 = c.cpu.vendor == Vendor::kAmd && c.cpu.family == 25;
  c.policy[i] = !zen4;
  c.policy_reason[i] = zen4 ? "Zen 4: half-width FMAs, broadcasts folded into them"
                            : "full-width FMAs: a column broadcast once for all its taps";
}

}  // namespace

std::string describe(const Capabilities& c) {
  const char* vendor = c.cpu.vendor == Vendor::kIntel ? "intel"
                       : c.cpu.vendor == Vendor::kAmd ? "amd"
                                                      : "other";
  std::string s = std::string("isa=") + tier_name(c.tier);
  s += ";cap=" + (c.cap_note.empty() ? std::string("none") : c.cap_note);
  s += std::string(";cpu=") + vendor + " family " + std::to_string(c.cpu.family) + " model " +
       std::to_string(c.cpu.model);
  s += ";features=" + c.usable.names();
  if (c.cpu.amx_refused) s += ";amx=refused by the OS (arch_prctl XTILEDATA)";
  s += ";policies=";
  for (int i = 0; i < kPolicyCount; ++i) {
    if (i) s += ',';
    s += std::string(kPolicyNames[i]) + ":" + (c.policy[i] ? "on" : "off") + "(" +
         c.policy_reason[i] + ")";
  }
  return s;
}

const char* tier_name(Tier t) {
  return name_at(kTierNames, kTierCount, static_cast<int>(t));
}

bool tier_by_name(const char* name, Tier* t) {
  const int i = name_index(kTierNames, kTierCount, name);
  if (i >= 0) *t = static_cast<Tier>(i);
  return i >= 0;
}

FeatureSet tier_features(Tier t) {
  switch (t) {
    case Tier::kNone:
      return {};
    case Tier::kAvx2:
      return kAvx2Features;
    case Tier::kAvx512:
      return kAvx512Features;
    case Tier::kAvx512Bf16:
      return kAvx512Bf16Features;
    case Tier::kAmx:
      return kAmxFeatures;
  }
  return {};
}

const char* policy_name(Policy p) {
  return name_at(kPolicyNames, kPolicyCount, static_cast<int>(p));
}

bool policy_by_name(const char* name, Policy* p) {
  const int i = name_index(kPolicyNames, kPolicyCount, name);
  if (i >= 0) *p = static_cast<Policy>(i);
  return i >= 0;
}

Capabilities decide(const CpuReading& cpu, const Switches& sw) {
  Capabilities c;
  c.cpu = cpu;
  apply_cap(c, sw.max_isa, sw.no_avx512);
  decide_bf16_dot(c, sw.bf16_dot);
  decide_bf16_amx(c, sw.bf16_amx);
  decide_bcast_reg(c, sw.bcast_reg);
  return c;
}

const Capabilities& capabilities() {
  static const Capabilities c = decide(
      read_cpu(), Switches{std::getenv("ACLNN_CPU_MAX_ISA"), std::getenv("ACLNN_CPU_NO_AVX512"),
                           std::getenv("ACLNN_CPU_BF16_DOT"), std::getenv("ACLNN_CPU_BF16_AMX"),
                           std::getenv("ACLNN_CPU_BCAST_REG")});
  return c;
}

const std::string& describe() {
  static const std::string s = describe(capabilities());
  return s;
}

}  // namespace aclnn_cpu::cpu
