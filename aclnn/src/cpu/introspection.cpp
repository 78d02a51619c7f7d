// The public introspection calls of aclnn/aclnn_cpu_isa.h over cpu/cpu.h.
#include "aclnn/aclnn_cpu_isa.h"

#include "cpu/cpu.h"

using namespace aclnn_cpu::cpu;

extern "C" {

ACL_FUNC_VISIBILITY const char* aclnnCpuIsa(void) {
  return tier_name(tier());
}

ACL_FUNC_VISIBILITY const char* aclnnCpuIsaUncapped(void) {
  return tier_name(capabilities().uncapped);
}

ACL_FUNC_VISIBILITY int aclnnCpuIsaRuns(const char* name) {
  Tier t = Tier::kNone;
  if (!tier_by_name(name, &t)) return -1;
  return tier() >= t ? 1 : 0;
}

ACL_FUNC_VISIBILITY int aclnnCpuHasFeature(const char* name) {
  Feature f = Feature::kAvx2;
  if (!feature_by_name(name, &f)) return -1;
  return may_use(f) ? 1 : 0;
}

ACL_FUNC_VISIBILITY int aclnnCpuPolicy(const char* name) {
  Policy p = Policy::kBf16Dot;
  if (!policy_by_name(name, &p)) return -1;
  return policy(p) ? 1 : 0;
}

ACL_FUNC_VISIBILITY const char* aclnnCpuDescribe(void) {
  return describe().c_str();
}

}  // extern "C"
