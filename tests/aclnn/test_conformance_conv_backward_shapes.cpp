// aclnnConvolutionBackward conformance, part 2: shapes, the per-SoC hardware limits of the 002
// constraint table, empty tensors and 3-d support. One test per row of aclnn/CONFORMANCE.md; a
// limit is checked just past its bound on the SoCs that have it and accepted on those that do not.
#include <gtest/gtest.h>

#include "aclnnop/aclnn_convolution_backward.h"
#include "support/acl_test_util.h"
#include "support/conformance_case.h"

namespace {

using namespace conformance;

// ---- array lengths and shapes (161002) ----

TEST(ConformanceConvBackward, StrideDilationOutputPaddingLengthIsDimMinus2) {
  for (const char* name : {"stride", "dilation", "outputPadding"}) {
    SCOPED_TRACE(name);
    BwdCall c = Bwd1d();
    Shape& a = name == std::string("stride")     ? c.stride
               : name == std::string("dilation") ? c.dilation
                                                 : c.op;
    a = {a[0], a[0]};
    ExpectRejectedOn(kAllSocs, c, kInvalid, kBwd,
                     {std::string(name) + " has 2 entries", "1d convolution", "needs 1"});
  }
}

TEST(ConformanceConvBackward, PaddingLengthDimMinus2Or4In2d) {
  BwdCall c;
  c.padding = {0, 0, 0, 0};  // [top, bottom, left, right]
  ExpectAcceptedOn(kAllSocs, c);
  BwdCall d = Bwd3d();
  d.padding = {0, 0, 0, 0};
  ExpectRejectedOn(kNew, d, kInvalid, kBwd, {"padding has 4 entries", "3d convolution"});
}

TEST(ConformanceConvBackward, BiasSizesIsOneEntry) {
  BwdCall c;
  c.bias_sizes = {4, 1};
  ExpectRejectedOn(kAllSocs, c, kInvalid, kBwd, {"biasSizes has 2 entries", "exactly 1"});
}

TEST(ConformanceConvBackward, BiasSizesIsWeight0OrWeight1TimesGroups) {
  BwdCall c;
  c.bias_sizes = {3};
  ExpectRejectedOn(kAllSocs, c, kInvalid, kBwd, {"biasSizes = [3]", "4 elements (weight[0])"});
  BwdCall t = BwdTransposed2d();  // weight [4, 3, 3, 3]: C_out = 3
  t.bias_sizes = {4};
  ExpectRejectedOn(kAllSocs, t, kInvalid, kBwd,
                   {"biasSizes = [4]", "3 elements (weight[1] * groups)"});
}

TEST(ConformanceConvBackward, GradOutputShapeIsTheConvolutionOutput) {
  BwdCall c;
  c.gy = {{2, 4, 5, 6}};
  ExpectRejectedOn(kAllSocs, c, kInvalid, kBwd,
                   {"gradOutput has shape [2, 4, 5, 6]", "produces [2, 4, 5, 5]"});
}

TEST(ConformanceConvBackward, GradInputGradWeightGradBiasShapes) {
  BwdCall c;
  c.gx = {{2, 3, 7, 6}};
  ExpectRejectedOn(kAllSocs, c, kInvalid, kBwd,
                   {"gradInput has shape [2, 3, 7, 6] but input has shape [2, 3, 7, 7]"});
  c = BwdCall{};
  c.gw = {{4, 3, 3, 2}};
  ExpectRejectedOn(kAllSocs, c, kInvalid, kBwd, {"gradWeight has shape [4, 3, 3, 2]"});
  c = BwdCall{};
  c.gb = {{5}};
  ExpectRejectedOn(kAllSocs, c, kInvalid, kBwd, {"gradBias has shape [5] but must be [4]"});
}

TEST(ConformanceConvBackward, InputPlusPaddingCoversTheDilatedKernel) {
  BwdCall c = BwdPlain2d(2, 5, 3, 1, {1, 1}, {0, 0}, {1, 1});  // H = 2 < kernel 3
  c.gy = {{1, 1, 1, 5}};
  ExpectRejectedOn(kAllSocs, c, kInvalid, kBwd,
                   {"input has shape [1, 1, 2, 5]", "smaller than the dilated kernel"});
}

TEST(ConformanceConvBackward, GroupsTimesWeightCIsInputC) {
  BwdCall c;
  c.x = c.gx = {{2, 5, 7, 7}};
  ExpectRejectedOn(kAllSocs, c, kInvalid, kBwd,
                   {"input has shape [2, 5, 7, 7]: C = 5", "weight[1] * groups = 3"});
  BwdCall t = BwdTransposed2d();
  t.x = t.gx = {{2, 5, 5, 5}};
  ExpectRejectedOn(kAllSocs, t, kInvalid, kBwd, {"C = 5", "expects weight[0] = 4"});
}

TEST(ConformanceConvBackward, Weight0DivisibleByGroups) {
  BwdCall c;  // weight [5, 1, 3, 3] with groups 3, input C 3
  c.w = c.gw = {{5, 1, 3, 3}};
  c.gy = {{2, 5, 5, 5}};
  c.gb = {{5}};
  c.bias_sizes = {5};
  c.groups = 3;
  ExpectRejectedOn(kAllSocs, c, kInvalid, kBwd, {"weight[0] = 5", "not divisible by groups = 3"});
}

// ---- 3-d support ----

TEST(ConformanceConvBackward, ThreeDOnlyOnA2A3And95) {
  ExpectAcceptedOn(kNew, Bwd3d());
  ExpectRejectedOn(kOld, Bwd3d(), kInvalid, kBwd,
                   {"3d convolution", "is not supported on", "only 1d and 2d"});
}

// ---- regular-convolution limits: Atlas A2/A3 only ----

TEST(ConformanceConvBackward, A2KernelHwAtMost255) {
  BwdCall c = BwdPlain2d(3, 260, 1, 256, {1, 1}, {0, 0}, {1, 1});
  ExpectRejectedOn(kA2A3, c, kInvalid, kBwd,
                   {"kernel W = 256 is out of range [1, 255]", "Ascend910B and Ascend910_93 only"});
  ExpectAcceptedOn(kNotA2A3, c);
  BwdCall d = Bwd1d();  // 1d: L
  d.x = d.gx = {{1, 1, 300}};
  d.w = d.gw = {{1, 1, 256}};
  d.gy = {{1, 1, 45}};
  d.gb = {{1}};
  d.bias_sizes = {1};
  ExpectRejectedOn(kA2A3, d, kInvalid, kBwd, {"kernel L = 256 is out of range [1, 255]"});
  ExpectAcceptedOn(kNotA2A3, d);
}

TEST(ConformanceConvBackward, A2KernelDUnlimitedIn3d) {
  BwdCall c = Bwd3d();
  c.x = c.gx = {{1, 1, 256, 1, 1}};
  c.w = c.gw = {{1, 1, 256, 1, 1}};
  c.gy = {{1, 1, 1, 1, 1}};
  c.gb = {{1}};
  c.bias_sizes = {1};
  ExpectAcceptedOn(kNew, c);
}

TEST(ConformanceConvBackward, A2Stride3dHwAtMost63) {
  BwdCall c = Bwd3d();
  c.x = c.gx = {{1, 1, 1, 1, 65}};
  c.w = c.gw = {{1, 1, 1, 1, 1}};
  c.gy = {{1, 1, 1, 1, 2}};
  c.gb = {{1}};
  c.bias_sizes = {1};
  c.stride = {1, 1, 64};
  ExpectRejectedOn(kA2A3, c, kInvalid, kBwd, {"stride[2] (W) = 64 is out of range [1, 63]"});
  ExpectAcceptedOn({k95}, c);
  c.stride = {64, 1, 1};  // strideD: no upper bound
  c.x = c.gx = {{1, 1, 65, 1, 1}};
  c.gy = {{1, 1, 2, 1, 1}};
  ExpectAcceptedOn(kNew, c);
  BwdCall d = BwdPlain2d(1, 65, 1, 1, {1, 64}, {0, 0}, {1, 1});  // 1d/2d: no upper bound
  ExpectAcceptedOn(kAllSocs, d);
}

TEST(ConformanceConvBackward, A2PaddingAtMost255ExceptD) {
  BwdCall c = BwdPlain2d(1, 1, 1, 1, {1, 1}, {0, 256}, {1, 1});
  ExpectRejectedOn(kA2A3, c, kInvalid, kBwd, {"padding[1] (W) = 256 is out of range [0, 255]"});
  ExpectAcceptedOn(kNotA2A3, c);
  BwdCall d = Bwd3d();
  d.x = d.gx = {{1, 1, 1, 1, 1}};
  d.w = d.gw = {{1, 1, 1, 1, 1}};
  d.gy = {{1, 1, 513, 1, 1}};
  d.gb = {{1}};
  d.bias_sizes = {1};
  d.padding = {256, 0, 0};
  ExpectAcceptedOn(kNew, d);
}

// 001 bounds the regular convolution's sizes, strides (1d/2d, 3d D) and paddingD on the A2 to
// [1, 2147483646] ([0, 2147483646]); 000, 004 and 002, all newer, say ">= 1" (">= 0") instead, and
// the newest wins: 2147483647 is accepted (it is also the implementation's limit; 2^31 is refused
// as that on every profile). aclnnConvTbcBackward keeps [1, 2147483646]: 003, its only document,
// states it (ConformanceTbcBackward.DimsAtMost2147483646). Phase 1 only: storage never read.
TEST(ConformanceConvBackward, A2RegularSizesStridesPaddingDAcceptInt32Max) {
  constexpr int64_t kMax = 2147483647;
  BwdCall d = Bwd3d();  // strideD and paddingD: D_out = (1 + 2 * kMax - 1) / kMax + 1 = 3
  d.x = d.gx = {{1, 1, 1, 1, 1}};
  d.w = d.gw = {{1, 1, 1, 1, 1}};
  d.gy = {{1, 1, 3, 1, 1}};
  d.gb = {{1}};
  d.bias_sizes = {1};
  d.stride = {kMax, 1, 1};
  d.padding = {kMax, 0, 0};
  ExpectAcceptedOn(kNew, d);
  BwdCall s = BwdPlain2d(2, 2, 1, 1, {kMax, kMax}, {0, 0}, {1, 1});  // 1d/2d strides
  ExpectAcceptedOn(kAllSocs, s);
  BwdCall l = Bwd1d();  // sizes: L of input/gradInput, then N of every tensor but weight
  l.x = l.gx = {{1, 1, kMax}};
  l.w = l.gw = {{1, 1, 1}};
  l.gy = {{1, 1, 1}};
  l.gb = {{1}};
  l.bias_sizes = {1};
  l.stride = {kMax};
  for (Spec* t : {&l.x, &l.gx, &l.w, &l.gw, &l.gy, &l.gb}) t->fake_far_data = true;
  ExpectAcceptedOn(kAllSocs, l);
  BwdCall n = l;
  n.x = n.gx = {{kMax, 1, 1}};
  n.gy = {{kMax, 1, 1}};
  n.stride = {1};
  for (Spec* t : {&n.x, &n.gx, &n.gy}) t->fake_far_data = true;
  ExpectAcceptedOn(kAllSocs, n);
  s.stride = {kMax + 1, 1};
  ExpectRejectedOn(kAllSocs, s, kInvalid, kBwd, {"stride[0] = 2147483648 is invalid"});
}

TEST(ConformanceConvBackward, A2DilationAtMost255IncludingD) {
  BwdCall c = BwdPlain2d(1, 257, 1, 2, {1, 1}, {0, 0}, {1, 256});
  ExpectRejectedOn(kA2A3, c, kInvalid, kBwd, {"dilation[1] (W) = 256 is out of range [1, 255]"});
  ExpectAcceptedOn(kNotA2A3, c);
  BwdCall d = Bwd3d();
  d.x = d.gx = {{1, 1, 257, 1, 1}};
  d.w = d.gw = {{1, 1, 2, 1, 1}};
  d.gy = {{1, 1, 1, 1, 1}};
  d.gb = {{1}};
  d.bias_sizes = {1};
  d.dilation = {256, 1, 1};
  ExpectRejectedOn(kA2A3, d, kInvalid, kBwd, {"dilation[0] (D) = 256 is out of range [1, 255]"});
  ExpectAcceptedOn({k95}, d);
}

// ---- transposed-convolution limits: Ascend910_95 only ----

TEST(ConformanceConvBackward, TransposedKernelHwAtMost255On95Only) {
  BwdCall c = BwdPlainTransposed2d(1, 1, 1, 256, {1, 1}, {0, 0}, {1, 1});
  ExpectRejectedOn({k95}, c, kInvalid, kBwd,
                   {"kernel W = 256 is out of range [1, 255]", "transposed", "Ascend910_95 only"});
  ExpectAcceptedOn(kNot95, c);
}

TEST(ConformanceConvBackward, TransposedStrideHwAtMost63On95Only) {
  BwdCall c = BwdPlainTransposed2d(2, 2, 1, 1, {1, 64}, {0, 0}, {1, 1});
  ExpectRejectedOn({k95}, c, kInvalid, kBwd,
                   {"stride[1] (W) = 64 is out of range [1, 63]", "a transposed convolution"});
  ExpectAcceptedOn(kNot95, c);
}

TEST(ConformanceConvBackward, TransposedStrideDAtMost1000000On95Only) {
  BwdCall c = Bwd3d();
  c.transposed = true;
  c.x = c.gx = {{1, 1, 2, 1, 1}};
  c.w = c.gw = {{1, 1, 1, 1, 1}};
  c.gy = {{1, 1, 1000002, 1, 1}};
  c.gb = {{1}};
  c.bias_sizes = {1};
  c.stride = {1000001, 1, 1};
  ExpectRejectedOn({k95}, c, kInvalid, kBwd,
                   {"stride[0] (D) = 1000001 is out of range [1, 1000000]"});
  ExpectAcceptedOn(kA2A3, c);
}

TEST(ConformanceConvBackward, TransposedPaddingHwAtMost255On95Only) {
  BwdCall c = BwdPlainTransposed2d(1, 10, 1, 1, {1, 63}, {0, 256}, {1, 1});
  ExpectRejectedOn({k95}, c, kInvalid, kBwd, {"padding[1] (W) = 256 is out of range [0, 255]"});
  ExpectAcceptedOn(kNot95, c);
}

TEST(ConformanceConvBackward, TransposedDilationHwAtMost255On95Only) {
  BwdCall c = BwdPlainTransposed2d(1, 1, 1, 2, {1, 1}, {0, 0}, {1, 256});
  ExpectRejectedOn({k95}, c, kInvalid, kBwd, {"dilation[1] (W) = 256 is out of range [1, 255]"});
  ExpectAcceptedOn(kNot95, c);
}

// ---- empty tensors ----

TEST(ConformanceConvBackward, EmptyBatchOnlyOnA2A3And95) {
  BwdCall c;
  c.gy = {{0, 4, 5, 5}};
  c.x = c.gx = {{0, 3, 7, 7}};
  ExpectAcceptedOn(kNew, c);
  ExpectRejectedOn(kOld, c, kInvalid, kBwd,
                   {"with a zero dim; empty tensors are not supported on"});
  BwdCall t = BwdTransposed2d();
  t.gy = {{0, 3, 12, 12}};
  t.x = t.gx = {{0, 4, 5, 5}};
  ExpectAcceptedOn(kNew, t);
}

TEST(ConformanceConvBackward, EmptyChannelsRegularOnlyWithWeightC0) {
  BwdCall c;
  c.x = c.gx = {{2, 0, 7, 7}};
  c.w = c.gw = {{4, 0, 3, 3}};
  ExpectAcceptedOn(kNew, c);
  ExpectRejectedOn(kOld, c, kInvalid, kBwd, {"empty tensors are not supported on"});
  BwdCall t = BwdTransposed2d();  // transposed: only N may be 0
  t.x = t.gx = {{2, 0, 5, 5}};
  t.w = t.gw = {{0, 3, 3, 3}};
  ExpectRejectedOn(kNew, t, kInvalid, kBwd, {"weight[0] = 0 is invalid"});
}

TEST(ConformanceConvBackward, EmptySpatialDimsOnlyInAnEmptyConvolution) {
  BwdCall c;  // N = 0: H = W = 0 allowed (formula 1: 0 + 2 * 2 >= 3)
  c.x = c.gx = {{0, 3, 0, 0}};
  c.gy = {{0, 4, 2, 2}};
  c.padding = {2, 2};
  ExpectAcceptedOn(kNew, c);
  c.x = c.gx = {{1, 3, 0, 0}};
  c.gy = {{1, 4, 2, 2}};
  ExpectRejectedOn(kNew, c, kInvalid, kBwd, {"spatial dim H = 0 is only allowed"});
}

}  // namespace

namespace {

// 002 weight constraint: when input is an empty tensor satisfying the empty-tensor rule, the
// weight's D/H/W (and, transposed, C) may be 0 too; the call computes nothing (gradBias = 0).
TEST(ConformanceConvBackward, ZeroKernelDimsOnlyInAnEmptyConvolution) {
  BwdCall c;  // regular, N = 0, kernel H = 0: output H = (7 - 1 * (0 - 1) - 1) / 1 + 1 = 8
  c.x = c.gx = {{0, 3, 7, 7}};
  c.w = c.gw = {{4, 3, 0, 3}};
  c.gy = {{0, 4, 8, 5}};
  ExpectAcceptedOn(kNew, c);
  BwdCall t = BwdTransposed2d();  // transposed, N = 0, weight C_out/g = 0 and kernel W = 0
  t.x = t.gx = {{0, 4, 5, 5}};
  t.w = t.gw = {{4, 0, 3, 0}};
  t.gy = {{0, 0, 12, 9}};  // W = (5 - 1) * 2 + 1 * (0 - 1) + 1 + 1
  t.gb = {{0}};
  t.bias_sizes = {0};
  ExpectAcceptedOn(kNew, t);
  // Launched, it computes nothing but the gradient of the bias: zeros (a sum over no samples).
  acltest::TestTensor x({0, 3, 7, 7}, ACL_FLOAT), w({4, 3, 0, 3}, ACL_FLOAT),
      gy({0, 4, 8, 5}, ACL_FLOAT);
  acltest::TestTensor gx = acltest::TestTensor::Output({0, 3, 7, 7}, ACL_FLOAT),
                      gw = acltest::TestTensor::Output({4, 3, 0, 3}, ACL_FLOAT),
                      gb = acltest::TestTensor::Output({4}, ACL_FLOAT);
  auto one = acltest::MakeIntArray({1, 1}), zero = acltest::MakeIntArray({0, 0}),
       sizes = acltest::MakeIntArray({4});
  auto mask = acltest::MakeBoolArray({true, true, true});
  const acltest::CallResult run = acltest::RunTwoPhase(
      [&](uint64_t* ws, aclOpExecutor** ex) {
        return aclnnConvolutionBackwardGetWorkspaceSize(
            gy.get(), x.get(), w.get(), sizes.get(), one.get(), zero.get(), one.get(), false,
            zero.get(), 1, mask.get(), 1, gx.get(), gw.get(), gb.get(), ws, ex);
      },
      aclnnConvolutionBackward);
  ASSERT_TRUE(run.ok()) << run.Describe();
  EXPECT_EQ(gb.Read(), std::vector<double>(4, 0.0));
  c.x = c.gx = {{1, 3, 7, 7}};  // not empty: refused
  c.gy = {{1, 4, 8, 5}};
  ExpectRejectedOn(kNew, c, kInvalid, kBwd, {"kernel H = 0 is only allowed in an empty-tensor"});
}

}  // namespace
