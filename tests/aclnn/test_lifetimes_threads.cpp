// Lifetimes across threads: a repeatable executor destroyed on one thread while another thread is
// launching it. The launch that is running must finish on a plan that is still there (the
// sanitizer stage reports a heap-use-after-free otherwise), and the launches after the destroy
// are refused with a status code.
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "aclnnop/aclnn_convolution_backward.h"
#include "support/acl_test_util.h"

namespace {

using acltest::MakeBoolArray;
using acltest::MakeIntArray;
using acltest::TestTensor;

// A 2d backward big enough that a launch takes a while (the race window is the launch), small
// enough for hundreds of rounds under the sanitizers.
struct Problem {
  TestTensor gy{{1, 8, 14, 14}, ACL_FLOAT}, x{{1, 8, 16, 16}, ACL_FLOAT},
      w{{8, 8, 3, 3}, ACL_FLOAT};
  TestTensor gx = TestTensor::Output({1, 8, 16, 16}, ACL_FLOAT);
  TestTensor gw = TestTensor::Output({8, 8, 3, 3}, ACL_FLOAT);
  Problem() {
    acltest::Rng rng(5);
    gy.Fill(rng.Uniform(gy.numel()));
    x.Fill(rng.Uniform(x.numel()));
    w.Fill(rng.Uniform(w.numel()));
  }
  // A repeatable executor; its workspace size in *ws.
  aclOpExecutor* PlanRepeatable(uint64_t* ws) {
    auto ones = MakeIntArray({1, 1}), zeros = MakeIntArray({0, 0}), bias = MakeIntArray({8});
    auto mask = MakeBoolArray({true, true, false});
    aclOpExecutor* e = nullptr;
    EXPECT_EQ(aclnnConvolutionBackwardGetWorkspaceSize(
                  gy.get(), x.get(), w.get(), bias.get(), ones.get(), zeros.get(), ones.get(),
                  false, zeros.get(), 1, mask.get(), 0, gx.get(), gw.get(), nullptr, ws, &e),
              ACLNN_SUCCESS)
        << aclGetRecentErrMsg();
    if (e != nullptr) {
      EXPECT_EQ(aclSetAclOpExecutorRepeatable(e), ACLNN_SUCCESS);
    }
    return e;
  }
};

TEST(LifetimesThreads, DestroyWhileAnotherThreadLaunchesARepeatableExecutor) {
  Problem p;
  const aclrtStream stream = acltest::SharedStream();
  constexpr int kRounds = 200;
  int refused = 0, launched = 0;
  for (int round = 0; round < kRounds; ++round) {
    uint64_t ws = 0;
    aclOpExecutor* e = p.PlanRepeatable(&ws);
    ASSERT_NE(e, nullptr);
    acltest::DeviceBuffer workspace(ws);
    std::atomic<int> launches{0};
    std::atomic<bool> bad_status{false};
    std::string refusal;
    std::thread launcher([&] {
      for (;;) {
        const aclnnStatus s = aclnnConvolutionBackward(workspace.data(), ws, e, stream);
        if (s == ACLNN_SUCCESS) {
          launches.fetch_add(1);
          continue;
        }
        if (s != ACLNN_ERR_PARAM_INVALID) bad_status = true;
        refusal = aclGetRecentErrMsg();
        return;
      }
    });
    // Destroy after the first launch, mostly while a later one is running.
    while (launches.load() == 0) std::this_thread::yield();
    EXPECT_EQ(aclDestroyAclOpExecutor(e), ACLNN_SUCCESS) << aclGetRecentErrMsg();
    launcher.join();
    EXPECT_FALSE(bad_status.load());
    EXPECT_NE(refusal.find("is not live"), std::string::npos) << refusal;
    launched += launches.load();
    ++refused;
  }
  EXPECT_EQ(refused, kRounds);
  EXPECT_GE(launched, kRounds);
}

}  // namespace
