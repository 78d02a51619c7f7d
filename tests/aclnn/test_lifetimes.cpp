// Lifetimes of the runtime and of executors, misused the ways a real program can: runtime calls
// before aclInit or after aclFinalize, a stream kept past aclFinalize, an executor launched after
// it was destroyed or consumed. Each gets a status code and a message, never a crash. (The tests
// run in order in one process; the first one needs a runtime nobody has initialised yet.)
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "acl/acl.h"
#include "aclnnop/aclnn_convolution_backward.h"
#include "support/acl_test_util.h"

namespace {

using acltest::MakeBoolArray;
using acltest::MakeIntArray;

std::string Recent() {
  return aclGetRecentErrMsg();
}

// A conv1d backward (x [1, 1, 5], w [1, 1, 3]) planned into an executor; host buffers only.
struct Planned {
  std::vector<float> gy{1, 1, 1}, x{1, 2, 3, 4, 5}, w{1, 1, 1}, gx{0, 0, 0, 0, 0}, gw{0, 0, 0},
      gb{0};
  acltest::AclTensorPtr t_gy{nullptr, aclDestroyTensor}, t_x{nullptr, aclDestroyTensor},
      t_w{nullptr, aclDestroyTensor}, t_gx{nullptr, aclDestroyTensor},
      t_gw{nullptr, aclDestroyTensor}, t_gb{nullptr, aclDestroyTensor};
  aclOpExecutor* executor = nullptr;
  uint64_t workspace_size = 0;

  static acltest::AclTensorPtr Make(std::vector<float>& v, aclFormat fmt) {
    const std::vector<int64_t> dims =
        v.size() == 1 ? std::vector<int64_t>{1} : std::vector<int64_t>{1, 1, int64_t(v.size())};
    return {aclCreateTensor(dims.data(), dims.size(), ACL_FLOAT, nullptr, 0, fmt, dims.data(),
                            dims.size(), v.data()),
            aclDestroyTensor};
  }
  aclnnStatus Plan() {
    t_gy = Make(gy, ACL_FORMAT_NCL), t_x = Make(x, ACL_FORMAT_NCL), t_w = Make(w, ACL_FORMAT_NCL);
    t_gx = Make(gx, ACL_FORMAT_NCL), t_gw = Make(gw, ACL_FORMAT_NCL),
    t_gb = Make(gb, ACL_FORMAT_ND);
    auto one = MakeIntArray({1}), zero = MakeIntArray({0});
    auto mask = MakeBoolArray({true, true, true});
    return aclnnConvolutionBackwardGetWorkspaceSize(
        t_gy.get(), t_x.get(), t_w.get(), one.get(), one.get(), zero.get(), one.get(), false,
        zero.get(), 1, mask.get(), 0, t_gx.get(), t_gw.get(), t_gb.get(), &workspace_size,
        &executor);
  }
};

TEST(Lifetimes, RuntimeCallsBeforeAclInitAreRefused) {
  EXPECT_EQ(aclrtSetDevice(0), ACL_ERROR_UNINITIALIZE);
  EXPECT_NE(Recent().find("aclInit"), std::string::npos) << Recent();
  aclrtStream stream = nullptr;
  EXPECT_EQ(aclrtCreateStream(&stream), ACL_ERROR_RT_CONTEXT_NULL);
  EXPECT_EQ(stream, nullptr);
  EXPECT_EQ(aclrtCtxSetSysParamOpt(ACL_OPT_DETERMINISTIC, 1), ACL_ERROR_RT_CONTEXT_NULL);
  EXPECT_EQ(aclFinalize(), ACL_ERROR_REPEAT_FINALIZE);
}

// Every memory and stream call needs aclInit (they used to succeed before it); the message says so.
TEST(Lifetimes, MemoryCallsBeforeAclInitAreRefused) {
  auto expect_uninitialised = [](aclError status, const char* api) {
    EXPECT_EQ(status, ACL_ERROR_UNINITIALIZE) << api;
    EXPECT_EQ(Recent().rfind(std::string(api) + ": the runtime is not initialised", 0), 0u)
        << Recent();
    EXPECT_NE(Recent().find("call aclInit first"), std::string::npos) << Recent();
  };
  void* p = nullptr;
  expect_uninitialised(aclrtMalloc(&p, 64, ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc");
  EXPECT_EQ(p, nullptr);
  expect_uninitialised(aclrtMallocHost(&p, 64), "aclrtMallocHost");
  EXPECT_EQ(p, nullptr);
  std::vector<char> a(64, 1), b(64, 2);
  expect_uninitialised(aclrtMemcpy(a.data(), 64, b.data(), 64, ACL_MEMCPY_HOST_TO_HOST),
                       "aclrtMemcpy");
  EXPECT_EQ(a, std::vector<char>(64, 1));  // nothing copied
  expect_uninitialised(aclrtMemset(a.data(), 64, 0, 64), "aclrtMemset");
  EXPECT_EQ(a, std::vector<char>(64, 1));
  expect_uninitialised(aclrtFree(a.data()), "aclrtFree");
  expect_uninitialised(aclrtFreeHost(a.data()), "aclrtFreeHost");
  expect_uninitialised(aclrtSynchronizeStream(nullptr), "aclrtSynchronizeStream");
  // After aclFinalize too; a buffer allocated before it is kept and is freed after aclInit again.
  ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS);
  ASSERT_EQ(aclrtMalloc(&p, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  ASSERT_EQ(aclFinalize(), ACL_SUCCESS);
  expect_uninitialised(aclrtMemset(p, 64, 0, 64), "aclrtMemset");
  expect_uninitialised(aclrtFree(p), "aclrtFree");
  ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS);
  EXPECT_EQ(aclrtFree(p), ACL_SUCCESS) << Recent();
  ASSERT_EQ(aclFinalize(), ACL_SUCCESS);
}

// What README "Using libaclnn standalone" states: the aclnn operators are a CPU kernel library
// over caller-owned host memory and need no aclInit on the default stream (aclgrad's framework
// calls them that way); any other stream must be live, which needs aclInit.
TEST(Lifetimes, OperatorsOnHostMemoryNeedNoAclInit) {
  Planned p;
  ASSERT_EQ(p.Plan(), ACLNN_SUCCESS) << Recent();
  int not_a_stream = 0;
  EXPECT_EQ(aclnnConvolutionBackward(nullptr, 0, p.executor, &not_a_stream),
            ACLNN_ERR_PARAM_INVALID);
  ASSERT_EQ(aclnnConvolutionBackward(nullptr, 0, p.executor, nullptr), ACLNN_SUCCESS) << Recent();
  EXPECT_EQ(p.gx, (std::vector<float>{1, 2, 3, 2, 1}));
}

TEST(Lifetimes, AStreamKeptPastAclFinalizeIsRefusedAtLaunch) {
  ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS);
  ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
  aclrtStream stream = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
  Planned p;
  ASSERT_EQ(p.Plan(), ACLNN_SUCCESS) << Recent();
  ASSERT_EQ(p.workspace_size, 0u);
  ASSERT_EQ(aclFinalize(), ACL_SUCCESS);  // releases the stream
  EXPECT_EQ(aclnnConvolutionBackward(nullptr, 0, p.executor, stream), ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(Recent().find("is not a live stream"), std::string::npos) << Recent();
  EXPECT_EQ(p.gx, std::vector<float>(5, 0));  // nothing ran
  EXPECT_NE(aclrtDestroyStream(stream), ACL_SUCCESS);
  // The executor survived the refused launch: the default stream still runs it.
  ASSERT_EQ(aclnnConvolutionBackward(nullptr, 0, p.executor, nullptr), ACLNN_SUCCESS) << Recent();
  EXPECT_EQ(p.gx, (std::vector<float>{1, 2, 3, 2, 1}));
}

TEST(Lifetimes, DestroyedOrConsumedExecutorsAreRefused) {
  Planned p;
  ASSERT_EQ(p.Plan(), ACLNN_SUCCESS) << Recent();
  EXPECT_EQ(aclDestroyAclOpExecutor(p.executor), ACLNN_SUCCESS);
  EXPECT_EQ(aclnnConvolutionBackward(nullptr, 0, p.executor, nullptr), ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(Recent().find("not live"), std::string::npos) << Recent();
  EXPECT_EQ(aclDestroyAclOpExecutor(p.executor), ACLNN_ERR_PARAM_INVALID);  // twice
  EXPECT_EQ(p.gw, std::vector<float>(3, 0));
  // A repeatable executor runs any number of times until destroyed, then is refused.
  Planned r;
  ASSERT_EQ(r.Plan(), ACLNN_SUCCESS) << Recent();
  ASSERT_EQ(aclSetAclOpExecutorRepeatable(r.executor), ACLNN_SUCCESS);
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(aclnnConvolutionBackward(nullptr, 0, r.executor, nullptr), ACLNN_SUCCESS) << i;
    EXPECT_EQ(r.gw, (std::vector<float>{6, 9, 12}));
  }
  EXPECT_EQ(aclDestroyAclOpExecutor(r.executor), ACLNN_SUCCESS);
  EXPECT_EQ(aclnnConvolutionBackward(nullptr, 0, r.executor, nullptr), ACLNN_ERR_PARAM_INVALID);
}

}  // namespace
