#include "cpu/features.h"

#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace aclnn_cpu::cpu {

namespace {

constexpr const char* kNames[kFeatureCount] = {"avx2",        "fma",      "f16c",     "avx512f",
                                               "avx512bw",    "avx512vl", "avx512dq", "avx512_bf16",
                                               "avx512_fp16", "amx_tile", "amx_bf16"};

#if defined(__x86_64__) || defined(__i386__)

struct Regs {
  unsigned a = 0, b = 0, c = 0, d = 0;
};

Regs cpuid(unsigned leaf, unsigned sub) {
  Regs r;
  if (__get_cpuid_max(0, nullptr) < leaf) return r;
  __cpuid_count(leaf, sub, r.a, r.b, r.c, r.d);
  return r;
}

bool bit(unsigned reg, int i) {
  return ((reg >> i) & 1u) != 0;
}

// XCR0: which register states the OS saves on a context switch (needs OSXSAVE).
uint64_t xcr0() {
  unsigned lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

// Linux keeps AMX tile data off until a process asks (ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA,
// arch/x86/include/uapi/asm/prctl.h); the first tile instruction without it raises SIGILL.
bool amx_permission_granted() {
#if defined(__linux__) && defined(__x86_64__)
  constexpr long kArchReqXcompPerm = 0x1023;
  constexpr long kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
}

Vendor vendor_of(const Regs& leaf0) {
  char id[13] = {};
  std::memcpy(id, &leaf0.b, 4);
  std::memcpy(id + 4, &leaf0.d, 4);
  std::memcpy(id + 8, &leaf0.c, 4);
  if (std::strcmp(id, "GenuineIntel") == 0) return Vendor::kIntel;
  if (std::strcmp(id, "AuthenticAMD") == 0) return Vendor::kAmd;
  return Vendor::kOther;
}

#endif

}  // namespace

const char* name_at(const char* const* names, int count, int i) {
  return i >= 0 && i < count ? names[i] : "unknown";
}

const char* feature_name(Feature f) {
  return name_at(kNames, kFeatureCount, static_cast<int>(f));
}

int name_index(const char* const* names, int count, const char* name) {
  if (name == nullptr) return -1;
  for (int i = 0; i < count; ++i)
    if (std::strcmp(name, names[i]) == 0) return i;
  return -1;
}

bool feature_by_name(const char* name, Feature* f) {
  const int i = name_index(kNames, kFeatureCount, name);
  if (i >= 0) *f = static_cast<Feature>(i);
  return i >= 0;
}

std::string FeatureSet::names() const {
  std::string out;
  for (int i = 0; i < kFeatureCount; ++i)
    if (has(static_cast<Feature>(i))) {
      if (!out.empty()) out += ',';
      out += kNames[i];
    }
  return out;
}

CpuReading read_cpu() {
  CpuReading r;
#if defined(__x86_64__) || defined(__i386__)
  const Regs leaf0 = cpuid(0, 0), leaf1 = cpuid(1, 0), leaf7 = cpuid(7, 0), leaf7_1 = cpuid(7, 1);
  r.vendor = vendor_of(leaf0);
  const unsigned base_family = (leaf1.a >> 8) & 0xf, base_model = (leaf1.a >> 4) & 0xf;
  r.family =
      static_cast<int>(base_family == 0xf ? base_family + ((leaf1.a >> 20) & 0xff) : base_family);
  r.model = static_cast<int>(base_family == 0x6 || base_family == 0xf
                                 ? base_model + (((leaf1.a >> 16) & 0xf) << 4)
                                 : base_model);
  if (!bit(leaf1.c, 27)) return r;  // no OSXSAVE: XCR0 unreadable, no AVX state
  const uint64_t xcr = xcr0();
  const bool ymm = (xcr & 0x6) == 0x6;            // SSE + AVX state
  const bool zmm = ymm && (xcr & 0xe0) == 0xe0;   // opmask + ZMM_Hi256 + Hi16_ZMM
  const bool tiles = (xcr & 0x60000) == 0x60000;  // XTILECFG + XTILEDATA
  FeatureSet& s = r.features;
  if (ymm && bit(leaf1.c, 28)) {  // AVX
    if (bit(leaf7.b, 5)) s = s | FeatureSet{Feature::kAvx2};
    if (bit(leaf1.c, 12)) s = s | FeatureSet{Feature::kFma};
    if (bit(leaf1.c, 29)) s = s | FeatureSet{Feature::kF16c};
  }
  if (zmm) {
    if (bit(leaf7.b, 16)) s = s | FeatureSet{Feature::kAvx512f};
    if (bit(leaf7.b, 30)) s = s | FeatureSet{Feature::kAvx512bw};
    if (bit(leaf7.b, 31)) s = s | FeatureSet{Feature::kAvx512vl};
    if (bit(leaf7.b, 17)) s = s | FeatureSet{Feature::kAvx512dq};
    if (bit(leaf7_1.a, 5)) s = s | FeatureSet{Feature::kAvx512Bf16};
    if (bit(leaf7.d, 23)) s = s | FeatureSet{Feature::kAvx512Fp16};
  }
  if (tiles && bit(leaf7.d, 24)) {
    if (amx_permission_granted()) {
      s = s | FeatureSet{Feature::kAmxTile};
      if (bit(leaf7.d, 22)) s = s | FeatureSet{Feature::kAmxBf16};
    } else {
      r.amx_refused = true;
    }
  }
#endif
  return r;
}

}  // namespace aclnn_cpu::cpu
