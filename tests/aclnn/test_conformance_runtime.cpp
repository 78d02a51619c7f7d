// Runtime API surface the spec documents name (aclnn/CONFORMANCE.md, "runtime" rows):
// aclrtCtxSetSysParamOpt / aclrtCtxGetSysParamOpt with ACL_OPT_DETERMINISTIC (002, constraint
// "确定性计算"), and the 910_95 dtype enum values the 002 dtype constraint names.
#include <string>

#include <gtest/gtest.h>

#include "support/raw_enum_calls.h"
#include "acl/acl.h"

namespace {

std::string recent() {
  return aclGetRecentErrMsg();
}

TEST(ConformanceRuntime, DtypeEnumValuesOf95) {
  EXPECT_EQ(static_cast<int>(ACL_HIFLOAT8), 34);
  EXPECT_EQ(static_cast<int>(ACL_FLOAT8_E5M2), 35);
  EXPECT_EQ(static_cast<int>(ACL_FLOAT8_E4M3FN), 36);
  EXPECT_EQ(static_cast<int>(ACL_OPT_DETERMINISTIC), 0);
  EXPECT_EQ(static_cast<int>(ACL_OPT_ENABLE_DEBUG_KERNEL), 1);
}

TEST(ConformanceRuntime, DeterministicSwitchIsStoredPerContext) {
  ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS);
  ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
  int64_t value = -1;
  ASSERT_EQ(aclrtCtxGetSysParamOpt(ACL_OPT_DETERMINISTIC, &value), ACL_SUCCESS);
  EXPECT_EQ(value, 0);  // a new context is non-deterministic by default
  ASSERT_EQ(aclrtCtxSetSysParamOpt(ACL_OPT_DETERMINISTIC, 1), ACL_SUCCESS);
  ASSERT_EQ(aclrtCtxGetSysParamOpt(ACL_OPT_DETERMINISTIC, &value), ACL_SUCCESS);
  EXPECT_EQ(value, 1);
  ASSERT_EQ(aclrtCtxGetSysParamOpt(ACL_OPT_ENABLE_DEBUG_KERNEL, &value), ACL_SUCCESS);
  EXPECT_EQ(value, 0);  // options are independent
  // Resetting the device destroys its context; the next one starts at 0 again.
  ASSERT_EQ(aclrtResetDevice(0), ACL_SUCCESS);
  ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
  ASSERT_EQ(aclrtCtxGetSysParamOpt(ACL_OPT_DETERMINISTIC, &value), ACL_SUCCESS);
  EXPECT_EQ(value, 0);
  ASSERT_EQ(aclrtCtxSetSysParamOpt(ACL_OPT_DETERMINISTIC, 1), ACL_SUCCESS);
  ASSERT_EQ(aclFinalize(), ACL_SUCCESS);
  ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS);
  ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
  ASSERT_EQ(aclrtCtxGetSysParamOpt(ACL_OPT_DETERMINISTIC, &value), ACL_SUCCESS);
  EXPECT_EQ(value, 0);
  ASSERT_EQ(aclFinalize(), ACL_SUCCESS);
}

TEST(ConformanceRuntime, DeterministicSwitchNeedsAContext) {
  EXPECT_EQ(aclrtCtxSetSysParamOpt(ACL_OPT_DETERMINISTIC, 1), ACL_ERROR_RT_CONTEXT_NULL);
  EXPECT_NE(recent().find("aclrtCtxSetSysParamOpt: there is no current context"), std::string::npos)
      << recent();
  int64_t value = -1;
  EXPECT_EQ(aclrtCtxGetSysParamOpt(ACL_OPT_DETERMINISTIC, &value), ACL_ERROR_RT_CONTEXT_NULL);
  EXPECT_EQ(value, -1);
}

TEST(ConformanceRuntime, DeterministicSwitchRejectsBadArguments) {
  ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS);
  ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
  EXPECT_EQ(aclrtCtxSetSysParamOpt(ACL_OPT_DETERMINISTIC, 2), ACL_ERROR_INVALID_PARAM);
  EXPECT_NE(recent().find("value = 2 for ACL_OPT_DETERMINISTIC is invalid"), std::string::npos)
      << recent();
  EXPECT_EQ(acltest_ctx_set_sys_param_opt_raw(7, 1), ACL_ERROR_INVALID_PARAM);
  EXPECT_NE(recent().find("opt = 7 is invalid"), std::string::npos) << recent();
  EXPECT_EQ(aclrtCtxGetSysParamOpt(ACL_OPT_DETERMINISTIC, nullptr), ACL_ERROR_INVALID_PARAM);
  EXPECT_NE(recent().find("aclrtCtxGetSysParamOpt: value is null"), std::string::npos) << recent();
  int64_t value = -1;
  ASSERT_EQ(aclrtCtxGetSysParamOpt(ACL_OPT_DETERMINISTIC, &value), ACL_SUCCESS);
  EXPECT_EQ(value, 0);  // the rejected calls changed nothing
  ASSERT_EQ(aclFinalize(), ACL_SUCCESS);
}

}  // namespace
