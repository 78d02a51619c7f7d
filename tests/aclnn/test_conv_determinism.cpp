// Determinism of fp32 gradients. Run to run, with the same threads, they are always bitwise
// equal. With aclrtCtxSetSysParamOpt(ACL_OPT_DETERMINISTIC, 1) they are also bitwise equal
// whatever the caller's thread count (1, 2 or 3 threads in the calling task arena). Geometries
// are large enough (> 2^21 multiply-adds) for the engine to split them across threads.
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <tbb/task_arena.h>

#include "acl/acl.h"
#include "support/conv_case.h"

namespace {

using acltest::ConvCase;

ConvCase Make(const char* label, std::vector<int64_t> input, std::vector<int64_t> weight,
              int64_t stride, int64_t pad, int64_t groups = 1, bool transposed = false) {
  const size_t n = input.size() - 2;  // the same stride / pad in every spatial dim, dilation 1
  return acltest::MakeCase(acltest::MakeGeom(input, weight, std::vector<int64_t>(n, stride),
                                             std::vector<int64_t>(n, pad),
                                             std::vector<int64_t>(n, 1), groups, transposed),
                           label, 17);
}

std::vector<ConvCase> Cases() {
  return {
      Make("3x3", {4, 16, 20, 20}, {32, 16, 3, 3}, 1, 1),
      Make("3x3s2", {4, 32, 24, 24}, {32, 32, 3, 3}, 2, 1),
      Make("1x1", {8, 64, 14, 14}, {64, 64, 1, 1}, 1, 0),
      Make("grouped", {4, 32, 16, 16}, {32, 8, 3, 3}, 1, 1, 4),
      Make("depthwise", {8, 64, 24, 24}, {64, 1, 3, 3}, 1, 1, 64),
      Make("conv1d", {8, 32, 200}, {32, 32, 5}, 1, 2),
      Make("conv3d", {2, 8, 8, 12, 12}, {16, 8, 3, 3, 3}, 1, 1),
      Make("transposed", {4, 32, 12, 12}, {32, 16, 4, 4}, 2, 1, 1, true),
  };
}

acltest::BackwardValues RunWithThreads(const ConvCase& c, int threads) {
  acltest::BackwardValues v;
  tbb::task_arena arena(threads);
  arena.execute([&] { v = acltest::RunConvBackward(c); });
  return v;
}

// Exact (bitwise) equality of two results of the same case.
::testing::AssertionResult Identical(const acltest::BackwardValues& a,
                                     const acltest::BackwardValues& b) {
  if (!a.result.ok() || !b.result.ok())
    return ::testing::AssertionFailure() << a.result.Describe() << " / " << b.result.Describe();
  const std::pair<const char*, std::pair<const std::vector<double>*, const std::vector<double>*>>
      outs[] = {{"gradInput", {&a.grad_input, &b.grad_input}},
                {"gradWeight", {&a.grad_weight, &b.grad_weight}},
                {"gradBias", {&a.grad_bias, &b.grad_bias}}};
  for (const auto& [name, pair] : outs) {
    const auto& [x, y] = pair;
    for (size_t i = 0; i < x->size(); ++i)
      if ((*x)[i] != (*y)[i])
        return ::testing::AssertionFailure()
               << name << "[" << i << "]: " << (*x)[i] << " vs " << (*y)[i];
  }
  return ::testing::AssertionSuccess();
}

// Turns ACL_OPT_DETERMINISTIC on for the current context for one scope.
class DeterministicScope {
 public:
  DeterministicScope() {
    acltest::SharedStream();  // aclInit + aclrtSetDevice: the option belongs to a context
    EXPECT_EQ(aclrtCtxSetSysParamOpt(ACL_OPT_DETERMINISTIC, 1), ACL_SUCCESS)
        << aclGetRecentErrMsg();
  }
  ~DeterministicScope() { aclrtCtxSetSysParamOpt(ACL_OPT_DETERMINISTIC, 0); }
};

TEST(ConvDeterminism, RunToRunBitwiseEqualWithTheSameThreads) {
  for (const ConvCase& c : Cases()) {
    SCOPED_TRACE(c.Describe());
    for (int threads : {1, 2}) {
      const acltest::BackwardValues first = RunWithThreads(c, threads);
      EXPECT_TRUE(Identical(first, RunWithThreads(c, threads))) << threads << " threads";
    }
  }
}

TEST(ConvDeterminism, DeterministicOptionMakesThreadCountIrrelevant) {
  DeterministicScope deterministic;
  for (const ConvCase& c : Cases()) {
    SCOPED_TRACE(c.Describe());
    const acltest::BackwardValues one = RunWithThreads(c, 1);
    EXPECT_TRUE(Identical(one, RunWithThreads(c, 2))) << "1 vs 2 threads";
    EXPECT_TRUE(Identical(one, RunWithThreads(c, 3))) << "1 vs 3 threads";
  }
}

// The split the option fixes is real: without it, the plan follows the caller's threads (the
// verbose plan line says threads=1 / threads=2), with it the same split serves both.
TEST(ConvDeterminism, PlanFollowsTheCallersThreadsUnlessDeterministic) {
  const ConvCase c = Cases().front();
  auto planned_threads = [&](int threads) {
    setenv("ACLNN_CPU_VERBOSE", "1", 1);
    ::testing::internal::CaptureStderr();
    RunWithThreads(c, threads);
    const std::string log = ::testing::internal::GetCapturedStderr();
    unsetenv("ACLNN_CPU_VERBOSE");
    const size_t at = log.find("threads=");
    return at == std::string::npos ? std::string("?") : log.substr(at, log.find(',', at) - at);
  };
  EXPECT_EQ(planned_threads(1), "threads=1");
  EXPECT_EQ(planned_threads(2), "threads=2");
  DeterministicScope deterministic;
  EXPECT_EQ(planned_threads(1), planned_threads(2));
}

}  // namespace
