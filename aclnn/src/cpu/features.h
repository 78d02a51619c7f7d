// What the CPU and the operating system offer libaclnn's kernels: the instruction-set features
// (read from CPUID, with the register state the OS enables read from XGETBV) and the vendor.
// This header and cpu/features.cpp are the only code of the library that asks the CPU anything;
// cpu/cpu.h applies the caps and the policies on top (oneDNN's cpu_isa_traits and XNNPACK's
// hardware-config are the models).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>

namespace aclnn_cpu::cpu {

// The features our kernels are compiled for. A feature counts only where the OS also saves its
// registers (XCR0: YMM for AVX2, ZMM and opmasks for AVX-512, tile data for AMX) and, for AMX,
// where Linux grants the process the tile-data permission (arch_prctl ARCH_REQ_XCOMP_PERM).
enum class Feature : int {
  kAvx2 = 0,
  kFma,
  kF16c,
  kAvx512f,
  kAvx512bw,
  kAvx512vl,
  kAvx512dq,
  kAvx512Bf16,  // vdpbf16ps, vcvtne2ps2bf16
  kAvx512Fp16,
  kAmxTile,  // ldtilecfg, tileloadd, tilestored (with the OS permission)
  kAmxBf16,  // tdpbf16ps
  kCount
};
inline constexpr int kFeatureCount = static_cast<int>(Feature::kCount);

// The index of `name` among `names` (enum order), or -1 (also for a null name): the by-name
// lookups of features, tiers and policies.
int name_index(const char* const* names, int count, const char* name);
// names[i], or "unknown" when i is out of [0, count): the enum-to-name lookups.
const char* name_at(const char* const* names, int count, int i);

// Lower-case names, as Linux's /proc/cpuinfo spells them ("avx512_bf16", "amx_tile", ...).
const char* feature_name(Feature f);
// The feature of that name; false where no feature has it.
bool feature_by_name(const char* name, Feature* f);

class FeatureSet {
 public:
  constexpr FeatureSet() = default;
  constexpr FeatureSet(std::initializer_list<Feature> fs) {
    for (Feature f : fs) bits_ |= bit(f);
  }
  constexpr bool has(Feature f) const { return (bits_ & bit(f)) != 0; }
  constexpr bool contains(FeatureSet o) const { return (bits_ & o.bits_) == o.bits_; }
  constexpr bool empty() const { return bits_ == 0; }
  constexpr FeatureSet operator|(FeatureSet o) const { return from_bits(bits_ | o.bits_); }
  constexpr FeatureSet operator&(FeatureSet o) const { return from_bits(bits_ & o.bits_); }
  constexpr bool operator==(const FeatureSet&) const = default;
  std::string names() const;  // "avx2,fma,f16c" in Feature order; "" when empty

 private:
  static constexpr uint32_t bit(Feature f) { return 1u << static_cast<int>(f); }
  static constexpr FeatureSet from_bits(uint32_t b) {
    FeatureSet s;
    s.bits_ = b;
    return s;
  }
  uint32_t bits_ = 0;
};

enum class Vendor { kOther, kIntel, kAmd };

// One reading of the CPU (cpu/features.cpp).
struct CpuReading {
  FeatureSet features;  // usable: the CPU has them and the OS enables their state
  Vendor vendor = Vendor::kOther;
  int family = 0;  // as lscpu prints them (base + extended family and model)
  int model = 0;
  // AMX on the CPU, but the OS refused the tile-data permission (features then lack AMX).
  bool amx_refused = false;
};

// Reads CPUID and XCR0 and, where the CPU has AMX, asks Linux once for the tile-data permission.
CpuReading read_cpu();

}  // namespace aclnn_cpu::cpu
