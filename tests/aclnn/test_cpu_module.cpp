// The CPU module (aclnn/src/cpu): the decision from a reading and the switches, fed the readings
// of every machine kind the project runs on (so every tier's policy is checked on any machine),
// the reading of this machine against Linux's own (/proc/cpuinfo), and the public introspection
// calls (aclnn/aclnn_cpu_isa.h) against the module. The module's sources are compiled in.
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "aclnn/aclnn_cpu_isa.h"
#include "cpu/cpu.h"

namespace {

namespace cpu = aclnn_cpu::cpu;
using cpu::Feature;
using cpu::FeatureSet;
using cpu::Tier;

cpu::CpuReading Reading(FeatureSet f, cpu::Vendor v, bool amx_refused = false, int family = 0) {
  cpu::CpuReading r;
  r.features = f;
  r.vendor = v;
  r.amx_refused = amx_refused;
  r.family = family;
  return r;
}

const FeatureSet kZen3 = cpu::kAvx2Features;
const FeatureSet kZen4 = cpu::kAvx512Bf16Features;  // Zen 4/5: no AVX512_FP16, no AMX
const FeatureSet kSkylake = cpu::kAvx512Features;
const FeatureSet kSapphireRapids = cpu::kAmxFeatures | FeatureSet{Feature::kAvx512Fp16};
const FeatureSet kSapphireNoAmx = cpu::kAvx512Bf16Features | FeatureSet{Feature::kAvx512Fp16};

cpu::Switches Cap(const char* max_isa) {
  cpu::Switches s;
  s.max_isa = max_isa;
  return s;
}

cpu::Switches Dot(const char* value) {
  cpu::Switches s;
  s.bf16_dot = value;
  return s;
}

cpu::Switches Amx(const char* value) {
  cpu::Switches s;
  s.bf16_amx = value;
  return s;
}

bool Bf16Dot(const cpu::Capabilities& c) {
  return c.policy[static_cast<int>(cpu::Policy::kBf16Dot)];
}

bool Bf16Amx(const cpu::Capabilities& c) {
  return c.policy[static_cast<int>(cpu::Policy::kBf16Amx)];
}

bool BcastReg(const cpu::Capabilities& c) {
  return c.policy[static_cast<int>(cpu::Policy::kBcastReg)];
}

TEST(CpuDecide, EachMachineKindGetsItsTier) {
  EXPECT_EQ(cpu::decide(Reading(kZen3, cpu::Vendor::kAmd), {}).tier, Tier::kAvx2);
  EXPECT_EQ(cpu::decide(Reading(kZen4, cpu::Vendor::kAmd), {}).tier, Tier::kAvx512Bf16);
  EXPECT_EQ(cpu::decide(Reading(kSkylake, cpu::Vendor::kIntel), {}).tier, Tier::kAvx512);
  EXPECT_EQ(cpu::decide(Reading(kSapphireRapids, cpu::Vendor::kIntel), {}).tier, Tier::kAmx);
  EXPECT_EQ(cpu::decide(Reading(kSapphireNoAmx, cpu::Vendor::kIntel), {}).tier, Tier::kAvx512Bf16);
  EXPECT_EQ(cpu::decide(Reading({}, cpu::Vendor::kOther), {}).tier, Tier::kNone);
}

TEST(CpuDecide, PartialFeatureSetsFallToTheTierBelow) {
  // AVX-512F without BW/VL/DQ (Knights Landing): every AVX-512 kernel file targets all four.
  const FeatureSet knl = cpu::kAvx2Features | FeatureSet{Feature::kAvx512f};
  EXPECT_EQ(cpu::decide(Reading(knl, cpu::Vendor::kIntel), {}).tier, Tier::kAvx2);
  // AVX2 without F16C or FMA: the AVX2 kernels convert fp16 with F16C and multiply-add with FMA.
  EXPECT_EQ(cpu::decide(Reading({Feature::kAvx2, Feature::kFma}, cpu::Vendor::kOther), {}).tier,
            Tier::kNone);
  // AMX tiles without the bf16 products.
  const FeatureSet tile_only = cpu::kAvx512Bf16Features | FeatureSet{Feature::kAmxTile};
  EXPECT_EQ(cpu::decide(Reading(tile_only, cpu::Vendor::kIntel), {}).tier, Tier::kAvx512Bf16);
}

TEST(CpuDecide, CapsNarrowTheUsableFeatures) {
  const cpu::CpuReading spr = Reading(kSapphireRapids, cpu::Vendor::kIntel);
  const struct {
    const char* cap;
    Tier tier;
    FeatureSet usable;
  } cases[] = {
      {"none", Tier::kNone, {}},
      {"avx2", Tier::kAvx2, cpu::kAvx2Features},
      {"avx512", Tier::kAvx512, cpu::kAvx512Features},
      {"avx512_bf16", Tier::kAvx512Bf16, kSapphireNoAmx},  // AVX512_FP16 stays with bf16
      {"amx", Tier::kAmx, kSapphireRapids},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.cap);
    const cpu::Capabilities caps = cpu::decide(spr, Cap(c.cap));
    EXPECT_EQ(caps.tier, c.tier);
    EXPECT_EQ(caps.uncapped, Tier::kAmx);
    EXPECT_EQ(caps.usable, c.usable) << caps.usable.names();
    EXPECT_NE(cpu::describe(caps).find(std::string("cap=ACLNN_CPU_MAX_ISA=") + c.cap),
              std::string::npos);
  }
  // A cap above the CPU's tier changes nothing.
  EXPECT_EQ(cpu::decide(Reading(kZen3, cpu::Vendor::kAmd), Cap("amx")).usable, kZen3);
}

TEST(CpuDecide, NoAvx512AndUnknownCaps) {
  const cpu::CpuReading zen4 = Reading(kZen4, cpu::Vendor::kAmd);
  cpu::Switches no512;
  no512.no_avx512 = "1";
  EXPECT_EQ(cpu::decide(zen4, no512).tier, Tier::kAvx2);
  no512.max_isa = "none";  // the narrower of the two
  EXPECT_EQ(cpu::decide(zen4, no512).tier, Tier::kNone);
  const cpu::Capabilities bogus = cpu::decide(zen4, Cap("avx1024"));
  EXPECT_EQ(bogus.tier, Tier::kAvx512Bf16);
  EXPECT_NE(cpu::describe(bogus).find("ACLNN_CPU_MAX_ISA=avx1024 ignored"), std::string::npos)
      << cpu::describe(bogus);
}

TEST(CpuDecide, Bf16DotPolicyFollowsVendorAndSwitch) {
  const cpu::CpuReading zen4 = Reading(kZen4, cpu::Vendor::kAmd);
  const cpu::CpuReading spr = Reading(kSapphireRapids, cpu::Vendor::kIntel);
  EXPECT_TRUE(Bf16Dot(cpu::decide(zen4, {})));
  EXPECT_FALSE(Bf16Dot(cpu::decide(spr, {})));
  EXPECT_FALSE(Bf16Dot(cpu::decide(zen4, Dot("0"))));
  EXPECT_TRUE(Bf16Dot(cpu::decide(spr, Dot("1"))));
  // Never where the dot instructions cannot run, whatever the switch says.
  EXPECT_FALSE(Bf16Dot(cpu::decide(Reading(kZen3, cpu::Vendor::kAmd), Dot("1"))));
  EXPECT_FALSE(Bf16Dot(cpu::decide(Reading(kSkylake, cpu::Vendor::kIntel), Dot("1"))));
  cpu::Switches capped = Dot("1");
  capped.max_isa = "avx512";
  EXPECT_FALSE(Bf16Dot(cpu::decide(zen4, capped)));
  // A malformed value leaves the default.
  EXPECT_TRUE(Bf16Dot(cpu::decide(zen4, Dot("01"))));
  EXPECT_NE(cpu::describe(cpu::decide(spr, Dot("1"))).find("bf16_dot:on(forced"),
            std::string::npos);
}

TEST(CpuDecide, AmxRefusedByTheOsIsSaid) {
  const cpu::Capabilities c =
      cpu::decide(Reading(kSapphireNoAmx, cpu::Vendor::kIntel, /*amx_refused=*/true), {});
  EXPECT_EQ(c.tier, Tier::kAvx512Bf16);
  EXPECT_NE(cpu::describe(c).find("amx=refused"), std::string::npos) << cpu::describe(c);
  EXPECT_FALSE(Bf16Amx(c));
  EXPECT_NE(cpu::describe(c).find("bf16_amx:off(AMX refused by the OS"), std::string::npos)
      << cpu::describe(c);
}

// AMX first wherever it is usable; the switch turns it off, never on where it cannot run.
TEST(CpuDecide, Bf16AmxPolicyFollowsTheTilesAndSwitch) {
  const cpu::CpuReading spr = Reading(kSapphireRapids, cpu::Vendor::kIntel);
  EXPECT_TRUE(Bf16Amx(cpu::decide(spr, {})));
  EXPECT_FALSE(Bf16Amx(cpu::decide(spr, Amx("0"))));
  EXPECT_TRUE(Bf16Amx(cpu::decide(spr, Amx("1"))));
  EXPECT_FALSE(Bf16Amx(cpu::decide(spr, Cap("avx512_bf16"))));
  for (const FeatureSet f : {kZen3, kZen4, kSkylake, kSapphireNoAmx})
    EXPECT_FALSE(Bf16Amx(cpu::decide(Reading(f, cpu::Vendor::kIntel), Amx("1"))));
  EXPECT_NE(cpu::describe(cpu::decide(spr, Amx("0"))).find("bf16_amx:off(forced"),
            std::string::npos);
  // The two bf16 policies are independent: Intel with AMX keeps the dot kernels off.
  EXPECT_FALSE(Bf16Dot(cpu::decide(spr, {})));
}

// Register broadcasts wherever the AVX-512 row kernels run but on Zen 4 (AMD family 25); the
// switch forces it, never on without AVX-512.
TEST(CpuDecide, BcastRegPolicyFollowsTheCoreAndSwitch) {
  const cpu::CpuReading zen4 = Reading(kZen4, cpu::Vendor::kAmd, false, 25);
  const cpu::CpuReading zen5 = Reading(kZen4, cpu::Vendor::kAmd, false, 26);
  const cpu::CpuReading emr = Reading(kSapphireNoAmx, cpu::Vendor::kIntel, false, 6);
  EXPECT_FALSE(BcastReg(cpu::decide(zen4, {})));
  EXPECT_TRUE(BcastReg(cpu::decide(zen5, {})));
  EXPECT_TRUE(BcastReg(cpu::decide(emr, {})));
  EXPECT_TRUE(BcastReg(cpu::decide(Reading(kSkylake, cpu::Vendor::kIntel, false, 6), {})));
  cpu::Switches on, off;
  on.bcast_reg = "1", off.bcast_reg = "0";
  EXPECT_TRUE(BcastReg(cpu::decide(zen4, on)));
  EXPECT_FALSE(BcastReg(cpu::decide(emr, off)));
  EXPECT_NE(cpu::describe(cpu::decide(zen4, on)).find("bcast_reg:on(forced"), std::string::npos);
  // Zen 3 (family 25 too) and a cap below avx512: no AVX-512 row kernel, whatever the switch.
  EXPECT_FALSE(BcastReg(cpu::decide(Reading(kZen3, cpu::Vendor::kAmd, false, 25), on)));
  on.max_isa = "avx2";
  EXPECT_FALSE(BcastReg(cpu::decide(emr, on)));
  EXPECT_NE(cpu::describe(cpu::decide(emr, on)).find("bcast_reg:off(no avx512"), std::string::npos);
}

TEST(CpuNames, RoundTrip) {
  for (int i = 0; i < cpu::kFeatureCount; ++i) {
    Feature f = Feature::kAvx2;
    ASSERT_TRUE(cpu::feature_by_name(cpu::feature_name(static_cast<Feature>(i)), &f));
    EXPECT_EQ(static_cast<int>(f), i);
  }
  for (int i = 0; i < cpu::kTierCount; ++i) {
    Tier t = Tier::kNone;
    ASSERT_TRUE(cpu::tier_by_name(cpu::tier_name(static_cast<Tier>(i)), &t));
    EXPECT_EQ(static_cast<int>(t), i);
  }
  Feature f;
  EXPECT_FALSE(cpu::feature_by_name("avx512_bf17", &f));
  EXPECT_FALSE(cpu::feature_by_name(nullptr, &f));
  EXPECT_EQ(FeatureSet({Feature::kF16c, Feature::kAvx2}).names(), "avx2,f16c");
}

// The flags line of /proc/cpuinfo (empty where there is none).
std::set<std::string> LinuxFlags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    std::set<std::string> flags;
    for (std::string w; words >> w;) flags.insert(w);
    return flags;
  }
  return {};
}

// Linux reads the same CPUID bits and XCR0 (it hides what the OS does not enable), so every
// feature name we share must agree; AMX counts for us only with the tile-data permission.
TEST(CpuReading, AgreesWithLinux) {
  const std::set<std::string> flags = LinuxFlags();
  if (flags.empty()) GTEST_SKIP() << "no /proc/cpuinfo flags here";
  const cpu::CpuReading r = cpu::read_cpu();
  for (int i = 0; i < cpu::kFeatureCount; ++i) {
    const Feature f = static_cast<Feature>(i);
    const std::string name = cpu::feature_name(f);
    const bool amx = f == Feature::kAmxTile || f == Feature::kAmxBf16;
    if (amx && r.amx_refused) {
      EXPECT_FALSE(r.features.has(f)) << name;
      continue;
    }
    EXPECT_EQ(r.features.has(f), flags.count(name) == 1)
        << name << " (" << r.features.names() << ")";
  }
}

// The public calls report what the module decided for this process.
TEST(CpuIntrospection, PublicCallsMatchTheModule) {
  const cpu::Capabilities& c = cpu::capabilities();
  EXPECT_STREQ(aclnnCpuIsa(), cpu::tier_name(c.tier));
  EXPECT_STREQ(aclnnCpuIsaUncapped(), cpu::tier_name(c.uncapped));
  for (int i = 0; i < cpu::kTierCount; ++i) {
    const Tier t = static_cast<Tier>(i);
    EXPECT_EQ(aclnnCpuIsaRuns(cpu::tier_name(t)), c.tier >= t ? 1 : 0) << cpu::tier_name(t);
  }
  for (int i = 0; i < cpu::kFeatureCount; ++i) {
    const Feature f = static_cast<Feature>(i);
    EXPECT_EQ(aclnnCpuHasFeature(cpu::feature_name(f)), c.usable.has(f) ? 1 : 0)
        << cpu::feature_name(f);
  }
  EXPECT_EQ(aclnnCpuPolicy("bf16_dot"), Bf16Dot(c) ? 1 : 0);
  EXPECT_EQ(aclnnCpuPolicy("bf16_amx"), Bf16Amx(c) ? 1 : 0);
  EXPECT_EQ(aclnnCpuPolicy("bcast_reg"), BcastReg(c) ? 1 : 0);
  EXPECT_EQ(aclnnCpuIsaRuns("avx1024"), -1);
  EXPECT_EQ(aclnnCpuIsaRuns(nullptr), -1);
  EXPECT_EQ(aclnnCpuHasFeature("sse9"), -1);
  EXPECT_EQ(aclnnCpuPolicy("turbo"), -1);
  const std::string line = aclnnCpuDescribe();
  EXPECT_EQ(line.rfind(std::string("isa=") + aclnnCpuIsa() + ";", 0), 0u) << line;
  EXPECT_NE(line.find("bf16_dot:"), std::string::npos) << line;
  std::printf("this process: %s\n", line.c_str());
}

}  // namespace
