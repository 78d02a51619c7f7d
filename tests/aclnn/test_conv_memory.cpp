// Memory shared between the tensors of one call. Inputs may share storage (they are only read);
// an output may share bytes with no input and no other output: phase 1 refuses with 161002
// naming both. Disjoint views of one buffer are fine and computed right.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "aclnnop/aclnn_convolution.h"
#include "aclnnop/aclnn_convolution_backward.h"
#include "support/acl_test_util.h"
#include "support/naive_conv.h"

namespace {

using acltest::MakeBoolArray;
using acltest::MakeIntArray;
using acltest::TestTensor;

// conv2d: x [1, 2, 5, 5], w [3, 2, 3, 3], gy [1, 3, 3, 3] (stride 1, no padding).
const std::vector<int64_t> kX{1, 2, 5, 5}, kW{3, 2, 3, 3}, kY{1, 3, 3, 3};

struct Args {
  acltest::IntArrayPtr ones = MakeIntArray({1, 1}), zeros = MakeIntArray({0, 0}),
                       bias_sizes = MakeIntArray({3});
  acltest::BoolArrayPtr mask = MakeBoolArray({true, true, true});
};

acltest::CallResult Backward(const aclTensor* gy, const aclTensor* x, const aclTensor* w,
                             aclTensor* gi, aclTensor* gw, aclTensor* gb) {
  Args a;
  return acltest::RunTwoPhase(
      [&](uint64_t* ws, aclOpExecutor** ex) {
        return aclnnConvolutionBackwardGetWorkspaceSize(
            gy, x, w, a.bias_sizes.get(), a.ones.get(), a.zeros.get(), a.ones.get(), false,
            a.zeros.get(), 1, a.mask.get(), 0, gi, gw, gb, ws, ex);
      },
      aclnnConvolutionBackward);
}

std::vector<int64_t> Contiguous(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t i = dims.size() - 1; i > 0; --i) s[i - 1] = s[i] * dims[i];
  return s;
}

struct Inputs {
  TestTensor gy{kY, ACL_FLOAT}, x{kX, ACL_FLOAT}, w{kW, ACL_FLOAT};
  Inputs() {
    acltest::Rng rng(3);
    gy.Fill(rng.Uniform(gy.numel()));
    x.Fill(rng.Uniform(x.numel()));
    w.Fill(rng.Uniform(w.numel()));
  }
};

void ExpectRefused(const acltest::CallResult& r, const std::string& fragment) {
  EXPECT_EQ(r.status, ACLNN_ERR_PARAM_INVALID) << r.Describe();
  EXPECT_EQ(r.phase, "GetWorkspaceSize");
  EXPECT_NE(r.message.find(fragment), std::string::npos) << r.message;
}

TEST(ConvMemory, AnOutputSharingAnInputIsRefused) {
  Inputs in;
  TestTensor gw = TestTensor::Output(kW, ACL_FLOAT), gb = TestTensor::Output({3}, ACL_FLOAT);
  // gradInput written over the input it is computed from (same shape, same bytes).
  acltest::AclTensorPtr over_x = in.x.View(kX, Contiguous(kX), 0, ACL_FORMAT_NCHW);
  ExpectRefused(Backward(in.gy.get(), in.x.get(), in.w.get(), over_x.get(), gw.get(), gb.get()),
                "gradInput shares memory with input");
  // gradBias over the last three elements of gradOutput: a partial overlap.
  acltest::AclTensorPtr tail = in.gy.View({3}, {1}, 24, ACL_FORMAT_ND);
  TestTensor gi = TestTensor::Output(kX, ACL_FLOAT);
  ExpectRefused(Backward(in.gy.get(), in.x.get(), in.w.get(), gi.get(), gw.get(), tail.get()),
                "gradBias shares memory with gradOutput");
  EXPECT_TRUE(gi.Untouched());
  EXPECT_TRUE(gw.Untouched());
}

TEST(ConvMemory, TwoOverlappingOutputsAreRefused) {
  Inputs in;
  TestTensor gi = TestTensor::Output(kX, ACL_FLOAT), arena = TestTensor::Output({60}, ACL_FLOAT);
  // gradWeight takes elements [0, 54) of the arena, gradBias [52, 55): two shared elements.
  acltest::AclTensorPtr gw = arena.View(kW, Contiguous(kW), 0, ACL_FORMAT_NCHW);
  acltest::AclTensorPtr gb = arena.View({3}, {1}, 52, ACL_FORMAT_ND);
  ExpectRefused(Backward(in.gy.get(), in.x.get(), in.w.get(), gi.get(), gw.get(), gb.get()),
                "gradBias shares memory with gradWeight");
  EXPECT_TRUE(arena.Untouched());
}

TEST(ConvMemory, DisjointViewsOfOneBufferAndSharedInputsAreFine) {
  Inputs in;
  // gradWeight [0, 54) and gradBias [54, 57) of one buffer, and the input passed through a
  // second handle over its storage (inputs are only read, so sharing is fine).
  TestTensor gi = TestTensor::Output(kX, ACL_FLOAT), arena = TestTensor::Output({60}, ACL_FLOAT);
  acltest::AclTensorPtr gw = arena.View(kW, Contiguous(kW), 0, ACL_FORMAT_NCHW);
  acltest::AclTensorPtr gb = arena.View({3}, {1}, 54, ACL_FORMAT_ND);
  acltest::AclTensorPtr x_again = in.x.View(kX, Contiguous(kX), 0, ACL_FORMAT_NCHW);
  acltest::CallResult r =
      Backward(in.gy.get(), x_again.get(), in.w.get(), gi.get(), gw.get(), gb.get());
  ASSERT_TRUE(r.ok()) << r.Describe();
  naive::ConvGeom g;
  g.input = kX;
  g.weight = kW;
  g.stride = g.dilation = {1, 1};
  g.pad_before = g.pad_after = g.output_padding = {0, 0};
  const naive::Grads ref = naive::ConvBackward(g, in.gy.values(), in.x.values(), in.w.values());
  const std::vector<double> got = arena.Read();
  for (size_t i = 0; i < 54; ++i) EXPECT_NEAR(got[i], ref.weight.value[i], 1e-5) << i;
  for (size_t i = 0; i < 3; ++i) EXPECT_NEAR(got[54 + i], ref.bias.value[i], 1e-5) << i;
  const std::vector<double> gi_got = gi.Read();
  for (size_t i = 0; i < gi_got.size(); ++i) EXPECT_NEAR(gi_got[i], ref.input.value[i], 1e-5);
}

TEST(ConvMemory, ForwardOutputOverItsInputIsRefused) {
  Inputs in;
  // The output [1, 3, 3, 3] placed over the first 27 elements of the input's 50.
  acltest::AclTensorPtr over_x = in.x.View(kY, Contiguous(kY), 0, ACL_FORMAT_NCHW);
  Args a;
  acltest::CallResult r = acltest::RunTwoPhase(
      [&](uint64_t* ws, aclOpExecutor** ex) {
        return aclnnConvolutionGetWorkspaceSize(in.x.get(), in.w.get(), nullptr, a.ones.get(),
                                                a.zeros.get(), a.ones.get(), false, a.zeros.get(),
                                                1, over_x.get(), 0, ws, ex);
      },
      aclnnConvolution);
  ExpectRefused(r, "output shares memory with input");
}

TEST(ConvMemory, TbcGradientOverItsSourceIsRefused) {
  // self (gradOutput) [4, 1, 2], input [4, 1, 2], weight [1, 2, 2], bias [2]; pad 0.
  TestTensor self({4, 1, 2}, ACL_FLOAT), x({4, 1, 2}, ACL_FLOAT), w({1, 2, 2}, ACL_FLOAT),
      b({2}, ACL_FLOAT);
  acltest::Rng rng(5);
  for (TestTensor* t : {&self, &x, &w, &b}) t->Fill(rng.Uniform(t->numel()));
  TestTensor gw = TestTensor::Output({1, 2, 2}, ACL_FLOAT), gb = TestTensor::Output({2}, ACL_FLOAT);
  acltest::AclTensorPtr gi_over_self = self.View({4, 1, 2}, {2, 2, 1}, 0, ACL_FORMAT_ND);
  acltest::CallResult r = acltest::RunTwoPhase(
      [&](uint64_t* ws, aclOpExecutor** ex) {
        return aclnnConvTbcBackwardGetWorkspaceSize(self.get(), x.get(), w.get(), b.get(), 0, 0,
                                                    gi_over_self.get(), gw.get(), gb.get(), ws, ex);
      },
      aclnnConvTbcBackward);
  ExpectRefused(r, "gradInput shares memory with self");
}

}  // namespace
