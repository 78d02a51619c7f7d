// The C API called from several threads at once, as a multi-threaded program would: each thread
// has its own stream, output tensors and executors; the input tensors (aclTensor handles and
// their storage) are shared read-only. Every result is bitwise equal to the serial run, and
// aclGetRecentErrMsg stays per thread while the others make calls of their own. (The TSan run of
// this test is documented in the README's "Reliability" section.)
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "aclnnop/aclnn_convolution.h"
#include "aclnnop/aclnn_convolution_backward.h"
#include "support/acl_test_util.h"

namespace {

using acltest::MakeBoolArray;
using acltest::MakeIntArray;
using acltest::TestTensor;

// A 2d convolution big enough for the blocked kernels and the engine's own thread pool.
struct SharedInputs {
  TestTensor gy{{2, 16, 14, 14}, ACL_FLOAT}, x{{2, 8, 16, 16}, ACL_FLOAT},
      w{{16, 8, 3, 3}, ACL_FLOAT};
  SharedInputs() {
    acltest::Rng rng(11);
    gy.Fill(rng.Uniform(gy.numel()));
    x.Fill(rng.Uniform(x.numel()));
    w.Fill(rng.Uniform(w.numel()));
  }
};

struct Gradients {
  std::vector<double> input, weight, bias;
  std::string error;  // empty on success
};

// One full backward + forward on `stream` with fresh outputs.
Gradients RunOnce(const SharedInputs& in, aclrtStream stream) {
  TestTensor gi = TestTensor::Output({2, 8, 16, 16}, ACL_FLOAT);
  TestTensor gw = TestTensor::Output({16, 8, 3, 3}, ACL_FLOAT);
  TestTensor gb = TestTensor::Output({16}, ACL_FLOAT);
  auto ones = MakeIntArray({1, 1}), zeros = MakeIntArray({0, 0}), bias_sizes = MakeIntArray({16});
  auto mask = MakeBoolArray({true, true, true});
  acltest::CallResult r = acltest::RunTwoPhase(
      [&](uint64_t* ws, aclOpExecutor** ex) {
        return aclnnConvolutionBackwardGetWorkspaceSize(
            in.gy.get(), in.x.get(), in.w.get(), bias_sizes.get(), ones.get(), zeros.get(),
            ones.get(), false, zeros.get(), 1, mask.get(), 0, gi.get(), gw.get(), gb.get(), ws, ex);
      },
      aclnnConvolutionBackward, stream);
  Gradients g;
  if (!r.ok()) {
    g.error = r.Describe();
    return g;
  }
  g.input = gi.Read();
  g.weight = gw.Read();
  g.bias = gb.Read();
  return g;
}

TEST(Concurrency, ThreadsWithOwnExecutorsMatchTheSerialRunBitwise) {
  const SharedInputs inputs;
  const Gradients serial = RunOnce(inputs, acltest::SharedStream());
  ASSERT_TRUE(serial.error.empty()) << serial.error;
  constexpr int kThreads = 4, kRounds = 6;
  std::atomic<int> mismatches{0}, failures{0}, wrong_messages{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      aclrtStream stream = nullptr;
      if (aclrtCreateStream(&stream) != ACL_SUCCESS) {
        ++failures;
        return;
      }
      for (int round = 0; round < kRounds; ++round) {
        const Gradients g = RunOnce(inputs, stream);
        if (!g.error.empty()) ++failures;
        if (g.input != serial.input || g.weight != serial.weight || g.bias != serial.bias)
          ++mismatches;
        // A refusal whose message names this thread's own value; the other threads keep
        // making calls (and refusals) of their own in between.
        const int64_t dims[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
        const uint64_t rank = 9 + static_cast<uint64_t>(t);
        if (aclCreateTensor(dims, rank, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, dims, 1, nullptr) !=
            nullptr)
          ++failures;
        std::this_thread::yield();
        const std::string msg = aclGetRecentErrMsg();
        if (msg.find("viewDimsNum " + std::to_string(rank) + " ") == std::string::npos)
          ++wrong_messages;
      }
      aclrtDestroyStream(stream);
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(mismatches.load(), 0) << "a concurrent result differed from the serial one";
  EXPECT_EQ(wrong_messages.load(), 0) << "aclGetRecentErrMsg showed another thread's message";
}

}  // namespace
