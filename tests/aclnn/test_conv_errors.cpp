// Every phase-1 rule of aclnnConvolutionBackward: the exact status code, and a recent-error
// message naming the API, the parameter and the offending value/shape. Plus garbage (negative /
// huge / overflowing dims, bad strides and storages, null data), the documented check order and
// SoC profiles. Forward, ConvTbc and phase-2 misuse are in test_conv_errors_other.cpp. Phase 1
// never reads tensor data, so tensors here describe small host buffers.
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "acl/acl.h"
#include "aclnn/aclnn_cpu_extensions.h"
#include "aclnnop/aclnn_convolution_backward.h"
#include "support/conformance_case.h"
#include "support/error_case.h"

namespace {

using namespace conv_errors;

// ---------------------------------------------------------------------------------------------
// aclnnConvolutionBackward: a valid 2d baseline that each test breaks in one way.

// The conformance tests' call (support/conformance_case.h) with cubeMathType 0 (KEEP_DTYPE).
struct Bwd : conformance::BwdCall {
  Bwd() { cube = 0; }
};

constexpr const char* kBwd = "aclnnConvolutionBackward";

TEST(ConvBackwardErrors, BaselineIsValid) {
  Result r = Bwd{}.Run();
  EXPECT_EQ(r.status, 0) << r.msg;
}

TEST(ConvBackwardErrors, NullPointers) {
  for (const char* name : {"gradOutput", "input", "weight", "stride", "padding", "dilation",
                           "outputPadding", "outputMask", "gradInput", "gradWeight", "gradBias",
                           "biasSizes", "workspaceSize", "executor"}) {
    Bwd b;
    b.nulls = {name};
    SCOPED_TRACE(name);
    ExpectError(b.Run(), kNull, kBwd, {name, "is null"});
  }
}

// Only gradBias may be null, and only when its gradient is not requested (the spec's return-code
// tables; issue #12 changed this: null gradInput / gradWeight used to pass when masked out).
TEST(ConvBackwardErrors, OnlyAMaskedGradBiasMayBeNull) {
  for (int m = 0; m < 8; ++m) {
    Bwd b;
    b.mask = {(m & 1) != 0, (m & 2) != 0, (m & 4) != 0};
    if (!b.mask[2]) b.nulls.insert("gradBias");
    Result r = b.Run();
    EXPECT_EQ(r.status, 0) << "mask " << m << ": " << r.msg;
    if (!b.mask[0]) {
      b.nulls.insert("gradInput");
      ExpectError(b.Run(), kNull, kBwd, {"gradInput is null"});
    }
  }
  // A masked-out output is not written but still validated.
  Bwd b;
  b.mask = {false, true, true};
  b.gx = Spec{{9}, ACL_INT32};
  ExpectError(b.Run(), kInvalid, kBwd, {"gradInput has dtype INT32"});
}

TEST(ConvBackwardErrors, OutputMaskMustHaveThreeEntries) {
  Bwd b;
  b.mask = {true, true};
  ExpectError(b.Run(), kNull, kBwd, {"outputMask has 2 entries", "exactly 3"});
  b.mask = {true, true, true, true};
  ExpectError(b.Run(), kNull, kBwd, {"outputMask has 4 entries"});
}

TEST(ConvBackwardErrors, Dtypes) {
  Bwd b;
  b.x.dt = ACL_INT32;
  ExpectError(b.Run(), kInvalid, kBwd, {"input has dtype INT32", "FLOAT16"});
  b = Bwd{};
  b.gy.dt = ACL_INT8;
  ExpectError(b.Run(), kInvalid, kBwd, {"gradOutput has dtype INT8"});
  b = Bwd{};
  b.w.dt = ACL_BOOL;
  ExpectError(b.Run(), kInvalid, kBwd, {"weight has dtype BOOL"});
  b = Bwd{};
  b.gb.dt = ACL_INT64;
  ExpectError(b.Run(), kInvalid, kBwd, {"gradBias has dtype INT64"});
  // Outputs must have their source's dtype on every SoC (issue #12: once only on Ascend910_95).
  b = Bwd{};
  b.gx.dt = ACL_FLOAT16;
  ExpectError(b.Run(), kInvalid, kBwd, {"gradInput has dtype FLOAT16", "input has FLOAT"});
  Soc soc("Ascend910_95");
  ExpectError(b.Run(), kInvalid, kBwd, {"gradInput has dtype FLOAT16", "input has FLOAT"});
}

TEST(ConvBackwardErrors, Bf16OnlyWhereTheSocHasIt) {
  Bwd b;
  b.gy.dt = b.x.dt = b.w.dt = b.gx.dt = b.gw.dt = b.gb.dt = ACL_BF16;
  EXPECT_EQ(b.Run().status, 0);
  Soc soc("Ascend910");
  ExpectError(b.Run(), kInvalid, kBwd,
              {"gradOutput has dtype BFLOAT16", "not supported on Ascend910"});
}

TEST(ConvBackwardErrors, Formats) {
  Bwd b;
  b.x.fmt = ACL_FORMAT_NHWC;
  ExpectError(b.Run(), kInvalid, kBwd, {"input has format NHWC", "NCHW"});
  b = Bwd{};
  b.gw.fmt = ACL_FORMAT_ND;
  ExpectError(b.Run(), kInvalid, kBwd, {"gradWeight has format ND", "4-d"});
  b = Bwd{};
  b.gb.fmt = ACL_FORMAT_NCHW;
  ExpectError(b.Run(), kInvalid, kBwd, {"gradBias has format NCHW", "ND"});
  // 3-d takes NCL only (issue #12: ND used to pass), never NCHW.
  Bwd c;
  c.gy = {{2, 4, 5}, ACL_FLOAT, ACL_FORMAT_NCL};
  c.x = {{2, 3, 7}, ACL_FLOAT, ACL_FORMAT_NCL};
  c.w = {{4, 3, 3}, ACL_FLOAT, ACL_FORMAT_NCL};
  c.gx = {{2, 3, 7}}, c.gw = {{4, 3, 3}};
  c.stride = c.dilation = {1}, c.padding = c.op = {0};
  EXPECT_EQ(c.Run().status, 0) << c.Run().msg;
  c.gy.fmt = ACL_FORMAT_ND;
  ExpectError(c.Run(), kInvalid, kBwd, {"gradOutput has format ND", "must be NCL"});
  c.gy.fmt = ACL_FORMAT_NCL;
  c.w.fmt = ACL_FORMAT_NCHW;
  ExpectError(c.Run(), kInvalid, kBwd, {"weight has format NCHW", "must be NCL"});
  // Ranks other than 3, 4, 5.
  b = Bwd{};
  b.x = {{3, 7}};
  ExpectError(b.Run(), kInvalid, kBwd, {"input has 2 dims", "[3, 7]"});
}

TEST(ConvBackwardErrors, AttributeValues) {
  struct Case {
    void (*edit)(Bwd&);
    std::vector<std::string> fragments;
  };
  const Case cases[] = {
      {[](Bwd& b) {
         b.stride = {1, 0};
       },
       {"stride[1] = 0 is invalid", "must be >= 1"}},
      {[](Bwd& b) {
         b.stride = {int64_t{1} << 32, 1};
       },
       {"stride[0] = 4294967296", "2147483647"}},
      {[](Bwd& b) {
         b.padding = {0, -1};
       },
       {"padding[1] = -1", ">= 0"}},
      {[](Bwd& b) {
         b.dilation = {0, 1};
       },
       {"dilation[0] = 0", ">= 1"}},
      {[](Bwd& b) {
         b.op = {1, 0};
       },
       {"outputPadding[0] = 1", "transposed = false"}},
      {[](Bwd& b) { b.groups = 0; }, {"groups = 0", "[1, 65535]"}},
      {[](Bwd& b) { b.groups = 65536; }, {"groups = 65536", "[1, 65535]"}},
      {[](Bwd& b) { b.groups = -3; }, {"groups = -3"}},
  };
  for (const Case& c : cases) {
    Bwd b;
    c.edit(b);
    ExpectError(b.Run(), kInvalid, kBwd, c.fragments);
  }
}

// Transposed: [2, 4, 5, 5] -> [2, 3, 11, 11] with stride 2, outputPadding in [0, stride).
Bwd Transposed() {
  Bwd b;
  b.transposed = true;
  b.x = {{2, 4, 5, 5}};
  b.w = {{4, 3, 3, 3}};
  b.gy = {{2, 3, 12, 12}};
  b.gx = {{2, 4, 5, 5}};
  b.gw = {{4, 3, 3, 3}};
  b.gb = {{3}};
  b.bias_sizes = {3};
  b.stride = {2, 2};
  b.op = {1, 1};
  return b;
}

TEST(ConvBackwardErrors, TransposedOutputPaddingBelowStride) {
  Bwd b = Transposed();
  EXPECT_EQ(b.Run().status, 0) << b.Run().msg;
  b.op = {2, 1};
  ExpectError(b.Run(), kInvalid, kBwd, {"outputPadding[0] = 2", "[0, 2)"});
  b.op = {-1, 0};
  ExpectError(b.Run(), kInvalid, kBwd, {"outputPadding[0] = -1"});
}

TEST(ConvBackwardErrors, CubeMathType) {
  Bwd b;
  for (int8_t bad : {int8_t{4}, int8_t{-1}, int8_t{127}}) {
    b.cube = bad;
    ExpectError(b.Run(), kInvalid, kBwd, {"cubeMathType = " + std::to_string(bad), "USE_HF32"});
  }
  for (int8_t ok : {0, 1, 2, 3}) {
    b.cube = ok;
    EXPECT_EQ(b.Run().status, 0) << int(ok);
  }
  // BF16 (promoted) + USE_FP16 is rejected on the A2; DOUBLE ignores the mode.
  Bwd bf;
  bf.gy.dt = bf.x.dt = bf.w.dt = bf.gx.dt = bf.gw.dt = bf.gb.dt = ACL_BF16;
  bf.cube = 2;
  ExpectError(bf.Run(), kInvalid, kBwd, {"cubeMathType = 2 (USE_FP16)", "BFLOAT16"});
  Bwd d;  // DOUBLE: the CPU-only extension
  d.gy.dt = d.x.dt = d.w.dt = d.gx.dt = d.gw.dt = d.gb.dt = ACL_DOUBLE;
  d.cube = 2;
  const uint32_t extensions = aclnnCpuSetExtensions(ACLNN_CPU_EXT_DOUBLE);
  EXPECT_EQ(d.Run().status, 0) << d.Run().msg;
  aclnnCpuSetExtensions(extensions);
  // The training series has no fp32 Cube mode: FLOAT needs 1 or 2.
  Soc soc("Ascend910");
  b.cube = 0;
  ExpectError(b.Run(), kInvalid, kBwd, {"cubeMathType = 0 (KEEP_DTYPE)", "Ascend910"});
  b.cube = 3;
  ExpectError(b.Run(), kInvalid, kBwd, {"cubeMathType = 3 (USE_HF32)", "Ascend910"});
  b.cube = 1;
  EXPECT_EQ(b.Run().status, 0);
}

TEST(ConvBackwardErrors, RanksAndArrayLengths) {
  // Ranks differ: every rank has its own format, so the format rule catches it first.
  Bwd b;
  b.gy = {{2, 4, 25}};
  ExpectError(b.Run(), kInvalid, kBwd, {"formats NCL, NCHW and NCHW", "must be the same"});
  b = Bwd{};
  b.w = {{4, 3, 3}};
  b.gw = {{4, 3, 3}};
  ExpectError(b.Run(), kInvalid, kBwd, {"formats NCHW, NCHW and NCL", "must be the same"});
  b = Bwd{};
  b.stride = {1, 1, 1};
  ExpectError(b.Run(), kInvalid, kBwd, {"stride has 3 entries", "needs 2"});
  b = Bwd{};
  b.dilation = {1};
  ExpectError(b.Run(), kInvalid, kBwd, {"dilation has 1 entries"});
  b = Bwd{};
  b.padding = {0, 0, 0};
  ExpectError(b.Run(), kInvalid, kBwd, {"padding has 3 entries", "[top, bottom, left, right]"});
  b = Bwd{};
  b.op = {0, 0, 0, 0};
  ExpectError(b.Run(), kInvalid, kBwd, {"outputPadding has 4 entries"});
  b = Bwd{};
  b.padding = {0, 0, 0, 0};  // the 2d 4-entry form
  EXPECT_EQ(b.Run().status, 0);
}

TEST(ConvBackwardErrors, OutputShapes) {
  Bwd b;
  b.gy = {{2, 4, 6, 6}};
  ExpectError(b.Run(), kInvalid, kBwd,
              {"gradOutput has shape [2, 4, 6, 6]", "input [2, 3, 7, 7]", "weight [4, 3, 3, 3]",
               "stride [1, 1]", "produces [2, 4, 5, 5]"});
  b = Bwd{};
  b.gx = {{2, 3, 7, 6}};
  ExpectError(b.Run(), kInvalid, kBwd,
              {"gradInput has shape [2, 3, 7, 6]", "input has shape [2, 3, 7, 7]"});
  b = Bwd{};
  b.gw = {{4, 3, 3, 2}};
  ExpectError(b.Run(), kInvalid, kBwd, {"gradWeight has shape [4, 3, 3, 2]"});
  b = Bwd{};
  b.gb = {{2, 2}, ACL_FLOAT, ACL_FORMAT_ND};
  ExpectError(b.Run(), kInvalid, kBwd, {"gradBias has shape [2, 2]", "[4]"});
  b = Bwd{};
  b.bias_sizes = {4, 1};
  ExpectError(b.Run(), kInvalid, kBwd, {"biasSizes has 2 entries"});
  b = Bwd{};
  b.bias_sizes = {5};
  ExpectError(b.Run(), kInvalid, kBwd, {"biasSizes = [5]", "4 elements"});
  Bwd t = Transposed();
  t.gy = {{2, 3, 11, 11}};
  ExpectError(t.Run(), kInvalid, kBwd,
              {"gradOutput has shape [2, 3, 11, 11]", "transposed", "produces [2, 3, 12, 12]"});
  t = Transposed();
  t.bias_sizes = {4};  // the transposed bias has weight[1] * groups = 3 entries
  ExpectError(t.Run(), kInvalid, kBwd, {"biasSizes = [4]", "weight[1] * groups"});
}

TEST(ConvBackwardErrors, KernelLargerThanPaddedInput) {
  Bwd b;
  b.x = b.gx = {{2, 3, 2, 7}};
  b.gy = {{2, 4, 1, 5}};
  ExpectError(b.Run(), kInvalid, kBwd, {"input has shape [2, 3, 2, 7]", "H = 2", "dilated kernel"});
}

TEST(ConvBackwardErrors, HardwareLimitsOfTheA2) {
  // 1d kernel L = 256.
  Bwd k;
  k.x = k.gx = {{1, 1, 300}};
  k.w = k.gw = {{1, 1, 256}};
  k.gy = {{1, 1, 45}};
  k.gb = {{1}};
  k.bias_sizes = {1};
  k.stride = k.dilation = {1};
  k.padding = k.op = {0};
  ExpectError(k.Run(), kInvalid, kBwd, {"kernel L = 256", "[1, 255]", "Ascend910B"});
  // 3d stride H = 64.
  Bwd s;
  s.x = s.gx = {{1, 1, 2, 70, 3}};
  s.w = s.gw = {{1, 1, 1, 1, 1}};
  s.gy = {{1, 1, 2, 2, 3}};
  s.gb = {{1}};
  s.bias_sizes = {1};
  s.stride = {1, 64, 1};
  s.dilation = {1, 1, 1};
  s.padding = s.op = {0, 0, 0};
  ExpectError(s.Run(), kInvalid, kBwd, {"stride[1] (H) = 64", "[1, 63]", "3d"});
  // 2d padding 256, dilation 256.
  Bwd p;
  p.padding = {256, 0};
  p.gy = {{2, 4, 517, 5}};
  ExpectError(p.Run(), kInvalid, kBwd, {"padding[0] (H) = 256", "[0, 255]"});
  Bwd d;
  d.x = d.gx = {{2, 3, 600, 7}};
  d.dilation = {256, 1};
  d.gy = {{2, 4, 88, 5}};
  ExpectError(d.Run(), kInvalid, kBwd, {"dilation[0] (H) = 256", "[1, 255]"});
  // None of these are limits on Ascend910_95 for a regular convolution.
  Soc soc("Ascend910_95");
  for (const Bwd* c : {&k, &s, &p, &d}) EXPECT_EQ(c->Run().status, 0) << c->Run().msg;
}

// Transposed limits are Ascend910_95's only (issue #12: they were applied on the A2 too).
TEST(ConvBackwardErrors, TransposedLimits) {
  Bwd b = Transposed();
  b.stride = {64, 2};
  b.op = {0, 1};
  b.gy = {{2, 3, 259, 12}};
  EXPECT_EQ(b.Run().status, 0) << b.Run().msg;
  Soc soc("Ascend910_95");
  ExpectError(b.Run(), kInvalid, kBwd, {"stride[0] (H) = 64", "Ascend910_95"});
}

TEST(ConvBackwardErrors, EmptyTensors) {
  // N = 0 and C = 0 (with weight C = 0) are legal on the A2.
  Bwd n;
  n.gy.shape[0] = n.x.shape[0] = n.gx.shape[0] = 0;
  EXPECT_EQ(n.Run().status, 0) << n.Run().msg;
  Bwd c;
  c.x.shape[1] = c.gx.shape[1] = c.w.shape[1] = c.gw.shape[1] = 0;
  EXPECT_EQ(c.Run().status, 0) << c.Run().msg;
  // A zero spatial dim needs N = 0 or C = 0; a zero kernel or weight[0] never.
  Bwd h;
  h.x.shape[2] = h.gx.shape[2] = 0;
  ExpectError(h.Run(), kInvalid, kBwd, {"spatial dim H = 0", "empty-tensor"});
  Bwd w0;
  w0.w.shape[0] = w0.gw.shape[0] = 0;
  w0.gy.shape[1] = 0;
  ExpectError(w0.Run(), kInvalid, kBwd, {"weight[0] = 0"});
  // The training series has no empty tensors at all.
  Soc soc("Ascend910");
  n.cube = 1;
  ExpectError(n.Run(), kInvalid, kBwd, {"zero dim", "not supported on Ascend910"});
}

TEST(ConvBackwardErrors, ThreeDimOnlyWhereTheSocHasIt) {
  Bwd b;
  b.x = b.gx = {{1, 2, 3, 3, 3}};
  b.w = b.gw = {{2, 2, 1, 1, 1}};
  b.gy = {{1, 2, 3, 3, 3}};
  b.gb = {{2}};
  b.bias_sizes = {2};
  b.stride = b.dilation = {1, 1, 1};
  b.padding = b.op = {0, 0, 0};
  b.cube = 1;
  EXPECT_EQ(b.Run().status, 0);
  Soc soc("Ascend310P");
  ExpectError(b.Run(), kInvalid, kBwd, {"3d convolution", "Ascend310P", "only 1d and 2d"});
}

TEST(ConvBackwardErrors, Channels) {
  Bwd b;
  b.w = b.gw = {{4, 2, 3, 3}};
  ExpectError(b.Run(), kInvalid, kBwd,
              {"input has shape [2, 3, 7, 7]", "C = 3", "weight[1] * groups = 2"});
  Bwd g;  // input C 6, weight [5, 3, ...] with groups 2: 5 output channels do not split in 2
  g.x = g.gx = {{2, 6, 7, 7}};
  g.w = g.gw = {{5, 3, 3, 3}};
  g.gy = {{2, 5, 5, 5}};
  g.gb = {{5}};
  g.bias_sizes = {5};
  g.groups = 2;
  ExpectError(g.Run(), kInvalid, kBwd, {"weight[0] = 5", "not divisible by groups = 2"});
  Bwd t = Transposed();
  t.x = t.gx = {{2, 5, 5, 5}};
  ExpectError(t.Run(), kInvalid, kBwd, {"C = 5", "weight[0] = 4"});
}

TEST(ConvBackwardErrors, CheckOrder) {
  // null beats dtype beats format beats attribute beats cubeMathType beats shape beats channels.
  Bwd b;
  b.nulls = {"stride"};
  b.x.dt = ACL_INT32;
  ExpectError(b.Run(), kNull, kBwd, {"stride is null"});
  b.nulls.clear();
  b.x.fmt = ACL_FORMAT_NHWC;
  ExpectError(b.Run(), kInvalid, kBwd, {"input has dtype INT32"});
  b.x.dt = ACL_FLOAT;
  b.dilation = {0, 0};
  ExpectError(b.Run(), kInvalid, kBwd, {"input has format NHWC"});
  b.x.fmt = ACL_FORMAT_NCHW;
  b.cube = 9;
  ExpectError(b.Run(), kInvalid, kBwd, {"dilation[0] = 0"});
  b.dilation = {1, 1};
  b.gy = {{2, 4, 6, 6}};
  ExpectError(b.Run(), kInvalid, kBwd, {"cubeMathType = 9"});
  b.cube = 0;
  b.w.shape[1] = b.gw.shape[1] = 2;
  ExpectError(b.Run(), kInvalid, kBwd, {"gradOutput has shape"});
}

TEST(ConvBackwardErrors, GarbageLayouts) {
  struct Case {
    void (*edit)(Bwd&);
    std::vector<std::string> fragments;
  };
  const Case cases[] = {
      {[](Bwd& b) {
         // A storage claim as large as the view (aclCreateTensor refuses views past their
         // storage), never allocated: phase 1 stops first.
         b.x.shape = {2, 3, int64_t{1} << 40, 7}, b.x.storage = {INT64_MAX};
       },
       {"input", "exceeds 2147483647"}},
      {[](Bwd& b) {
         // Its element count fits, its byte count does not (negative dims and element counts
         // beyond int64 are refused by aclCreateTensor already: test_meta).
         b.x.shape = {2147483647, 2147483647, 2, 1};
         b.x.strides = {1, 1, 1, 1};
         b.x.storage = {INT64_MAX};
       },
       {"input", "byte size overflows int64"}},
      {[](Bwd& b) {
         b.w.strides = {27, 9, -3, 1}, b.w.offset = 6;
       },
       {"weight has stride -3", "negative strides"}},
      {[](Bwd& b) { b.x.offset = -1; }, {"input has offset -1"}},
      {[](Bwd& b) { b.w.null_data = true; }, {"weight has a null data pointer", "108 elements"}},
      {[](Bwd& b) {
         b.gx.strides = {147, 49, 7, 0};
       },
       {"gradInput has overlapping elements"}},
      {[](Bwd& b) { b.gb.strides = {0}; }, {"gradBias has overlapping elements"}},
  };
  for (const Case& c : cases) {
    Bwd b;
    c.edit(b);
    ExpectError(b.Run(), kInvalid, kBwd, c.fragments);
  }
  // Stride 0 on an input (broadcast) is fine, and so are permuted strides and an offset.
  Bwd ok;
  ok.gy.strides = {0, 0, 5, 1};
  ok.gy.storage = {25};
  ok.x.strides = {1, 2, 42, 6};
  ok.x.offset = 3;
  ok.x.storage = {3 + 2 * 3 * 7 * 7};
  EXPECT_EQ(ok.Run().status, 0) << ok.Run().msg;
}

TEST(ConvBackwardErrors, TooLargeForThisImplementation) {
  // 3d input with 2^33 spatial positions: beyond a 32-bit BLAS dimension.
  Bwd b;
  b.x = b.gx = {{1, 1, 2048, 2048, 2048}, ACL_FLOAT, ACL_FORMAT_UNDEFINED, {}, 0, {1}};
  b.gy = b.x;
  b.w = b.gw = {{1, 1, 1, 1, 1}};
  b.gb = {{1}};
  b.bias_sizes = {1};
  b.stride = b.dilation = {1, 1, 1};
  b.padding = b.op = {0, 0, 0};
  b.x.storage = b.gx.storage = b.gy.storage = {int64_t{1} << 33};
  b.x.fake_far_data = b.gx.fake_far_data = b.gy.fake_far_data = true;
  ExpectError(b.Run(), kInvalid, kBwd, {"too large", "2147483647"});
  // f16 operands of 2^45 elements that are not dense (channels-last strides) would need more
  // than 2^46 bytes of workspace for their dense copies. (Dense ones are read in place: the
  // algorithms convert f16 as they read it.)
  Bwd w;
  w.x = w.gx = {{32768, 32768, 32768}, ACL_FLOAT16, ACL_FORMAT_NCL, {}, 0, {int64_t{1} << 45}};
  w.x.strides = {int64_t{1} << 30, 1, 32768};
  w.gy = w.x;
  w.w = w.gw = {{32768, 32768, 1}, ACL_FLOAT16};
  w.w.storage = w.gw.storage = {int64_t{1} << 30};
  w.gb = {{32768}, ACL_FLOAT16};
  w.bias_sizes = {32768};
  w.stride = w.dilation = {1};
  w.padding = w.op = {0};
  for (Spec* t : {&w.x, &w.gx, &w.gy, &w.w, &w.gw, &w.gb}) t->fake_far_data = true;
  ExpectError(w.Run(), kInvalid, kBwd, {"workspace", "2^46"});
}

TEST(ConvBackwardErrors, UnknownSoc) {
  Soc soc("Ascend42");
  ExpectError(Bwd{}.Run(), kInvalid, kBwd, {"ACLNN_CPU_SOC", "Ascend42"});
  Bwd b;
  b.nulls = {"input"};  // null checks still come first
  ExpectError(b.Run(), kNull, kBwd, {"input is null"});
}

}  // namespace
