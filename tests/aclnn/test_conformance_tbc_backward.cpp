// aclnnConvTbcBackward conformance: every rule of document 003, one test per row of
// aclnn/CONFORMANCE.md, each breaking a valid call in one way on the profiles where it matters.
// 003 documents the API for Atlas A2/A3 only, so the rules are checked on Ascend910B and
// Ascend910_93 and every other profile refuses the API.
#include <string>

#include <gtest/gtest.h>

#include "aclnn/aclnn_cpu_extensions.h"
#include "support/conformance_case.h"

namespace {

using namespace conformance;

TEST(ConformanceTbcBackward, OnlyOnA2A3) {
  ExpectAcceptedOn(kA2A3, TbcCall{});
  ExpectRejectedOn(kNotA2A3, TbcCall{}, kInvalid, kTbcBwd,
                   {"is not supported on", "Ascend910B and Ascend910_93 (Atlas A2/A3) only"});
}

TEST(ConformanceTbcBackward, NullPointerIs161001) {
  for (const char* name : {"self", "input", "weight", "bias", "gradInput", "gradWeight", "gradBias",
                           "workspaceSize", "executor"}) {
    SCOPED_TRACE(name);
    TbcCall t;
    t.nulls = {name};
    ExpectRejectedOn(kA2A3, t, kNull, kTbcBwd, {std::string(name) + " is null"});
  }
}

TEST(ConformanceTbcBackward, DtypesFloatFloat16Bf16) {
  for (aclDataType dt : {ACL_FLOAT16, ACL_BF16}) {
    TbcCall t;
    t.SetDtype(dt);
    ExpectAcceptedOn(kA2A3, t);
  }
  TbcCall t;
  t.SetDtype(ACL_INT32);
  ExpectRejectedOn(kA2A3, t, kInvalid, kTbcBwd, {"self has dtype INT32"});
}

TEST(ConformanceTbcBackward, DoubleIsACpuExtensionOffByDefault) {
  TbcCall t;
  t.SetDtype(ACL_DOUBLE);
  ExpectRejectedOn(kA2A3, t, kInvalid, kTbcBwd, {"self has dtype DOUBLE", "CPU-only extension"});
  const uint32_t previous = aclnnCpuSetExtensions(ACLNN_CPU_EXT_DOUBLE);
  ExpectAcceptedOn(kA2A3, t);
  aclnnCpuSetExtensions(previous);
}

TEST(ConformanceTbcBackward, SelfInputWeightBiasSameDtype) {
  TbcCall t;
  t.b.dt = t.gb.dt = ACL_FLOAT16;
  ExpectRejectedOn(kA2A3, t, kInvalid, kTbcBwd,
                   {"bias has dtype FLOAT16 but self has FLOAT", "must have the same dtype"});
}

TEST(ConformanceTbcBackward, OutputDtypesAreTheirSources) {
  TbcCall t;
  t.gx.dt = ACL_FLOAT16;
  ExpectRejectedOn(kA2A3, t, kInvalid, kTbcBwd,
                   {"gradInput has dtype FLOAT16 but input has FLOAT", "dtype of input"});
  t = TbcCall{};
  t.gw.dt = ACL_BF16;
  ExpectRejectedOn(kA2A3, t, kInvalid, kTbcBwd, {"gradWeight has dtype BFLOAT16 but weight"});
  t = TbcCall{};
  t.gb.dt = ACL_FLOAT16;
  ExpectRejectedOn(kA2A3, t, kInvalid, kTbcBwd, {"gradBias has dtype FLOAT16 but bias"});
}

TEST(ConformanceTbcBackward, EightBitGradWeightNotOnA2A3) {
  for (aclDataType dt : {ACL_HIFLOAT8, ACL_FLOAT8_E4M3FN}) {
    TbcCall t;
    t.gw.dt = dt;
    ExpectRejectedOn(kA2A3, t, kInvalid, kTbcBwd, {"gradWeight has dtype", "FLOAT, FLOAT16"});
  }
}

TEST(ConformanceTbcBackward, FormatsNdOrNclForEveryTensor) {
  TbcCall t;
  for (Spec* s : {&t.self, &t.x, &t.w, &t.b, &t.gx, &t.gw, &t.gb}) s->fmt = ACL_FORMAT_NCL;
  ExpectAcceptedOn(kA2A3, t);
  TbcCall u;
  u.x.fmt = ACL_FORMAT_NCHW;
  ExpectRejectedOn(kA2A3, u, kInvalid, kTbcBwd, {"input has format NCHW", "ND or NCL"});
  TbcCall v;
  v.gb.fmt = ACL_FORMAT_NCHW;
  ExpectRejectedOn(kA2A3, v, kInvalid, kTbcBwd, {"gradBias has format NCHW", "ND or NCL"});
}

// 003 marks gradInput, gradWeight and gradBias "非连续Tensor ×" (self, input, weight and bias may
// be non-contiguous): each must have the row-major strides of its shape (size-1 dims free, any
// offset), unless the CPU-only extension ACLNN_CPU_EXT_STRIDED_OUTPUTS is enabled.
TEST(ConformanceTbcBackward, NonContiguousOutputsRefused) {
  TbcCall t;  // gradInput [7, 2, 3] with B and C swapped in storage
  t.gx.strides = {6, 1, 2};
  ExpectRejectedOn(kA2A3, t, kInvalid, kTbcBwd,
                   {"gradInput has strides [6, 1, 2] for shape [7, 2, 3]", "not contiguous",
                    "expected strides [6, 3, 1]"});
  TbcCall w;  // gradWeight [3, 3, 4] stored K-innermost
  w.gw.strides = {1, 12, 3};
  ExpectRejectedOn(
      kA2A3, w, kInvalid, kTbcBwd,
      {"gradWeight has strides [1, 12, 3] for shape [3, 3, 4]", "expected strides [12, 4, 1]"});
  TbcCall b;  // gradBias [4], every third element
  b.gb.strides = {3};
  b.gb.storage = {10};
  ExpectRejectedOn(kA2A3, b, kInvalid, kTbcBwd, {"gradBias has strides [3] for shape [4]"});
  TbcCall fine;  // an offset and inputs of any layout are fine
  fine.gx.offset = 2;
  fine.gx.storage = {44};
  fine.x.strides = {6, 1, 2};
  ExpectAcceptedOn(kA2A3, fine);
  const uint32_t previous = aclnnCpuSetExtensions(ACLNN_CPU_EXT_STRIDED_OUTPUTS);
  for (const TbcCall& strided : {t, w, b}) ExpectAcceptedOn(kA2A3, strided);
  aclnnCpuSetExtensions(previous);
}

// 003's product table lists Atlas A2/A3 only; the processors 002 marks × (Ascend310B, Ascend310)
// are refused as processors without the convolution APIs.
TEST(ConformanceTbcBackward, UnsupportedProcessorIs161002) {
  ExpectRejectedOn({"Ascend310B", "Ascend310"}, TbcCall{}, kInvalid, kTbcBwd,
                   {"the current processor Ascend310", "does not support aclnnConvTbcBackward"});
}

TEST(ConformanceTbcBackward, PadIn0To255) {
  TbcCall t;
  t.pad = 255;
  t.self = {{515, 2, 4}, ACL_FLOAT, ACL_FORMAT_ND};  // 7 + 510 + 1 - 3
  ExpectAcceptedOn(kA2A3, t);
  for (int64_t pad : {-1, 256}) {
    TbcCall u;
    u.pad = pad;
    ExpectRejectedOn(kA2A3, u, kInvalid, kTbcBwd,
                     {"pad = " + std::to_string(pad) + " is invalid", "[0, 255]"});
  }
}

TEST(ConformanceTbcBackward, CubeMathTypeIn0To3) {
  TbcCall t;
  t.cube = 4;
  ExpectRejectedOn(kA2A3, t, kInvalid, kTbcBwd, {"cubeMathType = 4 is invalid"});
  for (int8_t cube : {int8_t{0}, int8_t{1}, int8_t{2}, int8_t{3}}) {
    TbcCall u;
    u.cube = cube;
    ExpectAcceptedOn(kA2A3, u);
  }
}

TEST(ConformanceTbcBackward, UseHf32OnlyForFloat) {
  for (aclDataType dt : {ACL_FLOAT16, ACL_BF16}) {
    TbcCall t;
    t.SetDtype(dt);
    t.cube = 3;
    ExpectRejectedOn(kA2A3, t, kInvalid, kTbcBwd,
                     {"cubeMathType = 3 (USE_HF32) is not supported for", "only for FLOAT inputs"});
  }
}

TEST(ConformanceTbcBackward, Bf16UseFp16Rejected) {
  TbcCall t;
  t.SetDtype(ACL_BF16);
  t.cube = 2;
  ExpectRejectedOn(kA2A3, t, kInvalid, kTbcBwd, {"cubeMathType = 2 (USE_FP16)", "BFLOAT16"});
  t.SetDtype(ACL_FLOAT16);
  ExpectAcceptedOn(kA2A3, t);
}

TEST(ConformanceTbcBackward, SelfInputWeightAre3dBiasIs1d) {
  TbcCall t;
  t.w = t.gw = {{3, 3, 4, 1}, ACL_FLOAT, ACL_FORMAT_ND};
  ExpectRejectedOn(kA2A3, t, kInvalid, kTbcBwd, {"weight has 4 dims", "must be 3-d"});
  TbcCall u;
  u.b = u.gb = {{4, 1}, ACL_FLOAT, ACL_FORMAT_ND};
  ExpectRejectedOn(kA2A3, u, kInvalid, kTbcBwd, {"bias has 2 dims", "must be 1-d"});
}

TEST(ConformanceTbcBackward, InputChannelsAreWeightDim1) {
  TbcCall t;
  t.x = t.gx = {{7, 2, 5}, ACL_FLOAT, ACL_FORMAT_ND};
  ExpectRejectedOn(kA2A3, t, kInvalid, kTbcBwd, {"input[2] == weight[1] = 3"});
}

TEST(ConformanceTbcBackward, BiasIsWeightDim2) {
  TbcCall t;
  t.b = t.gb = {{5}, ACL_FLOAT, ACL_FORMAT_ND};
  ExpectRejectedOn(kA2A3, t, kInvalid, kTbcBwd, {"bias has shape [5]", "weight[2] = 4"});
}

TEST(ConformanceTbcBackward, ShapesFollowTheInferredShape) {
  TbcCall t;
  t.self = {{6, 2, 4}, ACL_FLOAT, ACL_FORMAT_ND};
  ExpectRejectedOn(kA2A3, t, kInvalid, kTbcBwd, {"self has shape [6, 2, 4]", "produces [5, 2, 4]"});
  TbcCall u;
  u.gx = {{7, 2, 4}, ACL_FLOAT, ACL_FORMAT_ND};
  ExpectRejectedOn(kA2A3, u, kInvalid, kTbcBwd, {"gradInput has shape [7, 2, 4] but input"});
  TbcCall v;
  v.gw = {{3, 3, 5}, ACL_FLOAT, ACL_FORMAT_ND};
  ExpectRejectedOn(kA2A3, v, kInvalid, kTbcBwd, {"gradWeight has shape [3, 3, 5] but weight"});
  TbcCall w;
  w.gb = {{3}, ACL_FLOAT, ACL_FORMAT_ND};
  ExpectRejectedOn(kA2A3, w, kInvalid, kTbcBwd, {"gradBias has shape [3] but bias"});
}

// A tensor with a negative dim cannot reach phase 1: aclCreateTensor refuses it (acl_meta.h
// promises NULL), naming the dim.
TEST(ConformanceTbcBackward, NegativeOutputDimsRejected) {
  const int64_t dims[] = {7, -2, 3}, storage[] = {1};
  float data = 0;
  EXPECT_EQ(aclCreateTensor(dims, 3, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, storage, 1, &data),
            nullptr);
  const std::string msg = aclGetRecentErrMsg();
  EXPECT_NE(msg.find("viewDims [7, -2, 3]: dim 1 = -2 is negative"), std::string::npos) << msg;
}

TEST(ConformanceTbcBackward, NoEmptyTensors) {
  TbcCall t;
  t.self = {{5, 0, 4}, ACL_FLOAT, ACL_FORMAT_ND};
  t.x = t.gx = {{7, 0, 3}, ACL_FLOAT, ACL_FORMAT_ND};
  ExpectRejectedOn(kA2A3, t, kInvalid, kTbcBwd,
                   {"with a zero dim", "does not support empty tensors"});
}

TEST(ConformanceTbcBackward, DimsAtMost2147483646) {
  TbcCall t;  // B = 2147483647 (storage described, never read in phase 1)
  t.self = {{5, 2147483647, 4}, ACL_FLOAT, ACL_FORMAT_ND};
  t.x = t.gx = {{7, 2147483647, 3}, ACL_FLOAT, ACL_FORMAT_ND};
  ExpectRejectedOn(kA2A3, t, kInvalid, kTbcBwd,
                   {"dim 1 = 2147483647 is out of range [1, 2147483646]"});
}

TEST(ConformanceTbcBackward, KernelSizeAtMost255) {
  TbcCall t;
  t.w = t.gw = {{256, 3, 4}, ACL_FLOAT, ACL_FORMAT_ND};
  t.x = t.gx = {{300, 2, 3}, ACL_FLOAT, ACL_FORMAT_ND};
  t.self = {{45, 2, 4}, ACL_FLOAT, ACL_FORMAT_ND};
  ExpectRejectedOn(kA2A3, t, kInvalid, kTbcBwd,
                   {"kernel size weight[0] = 256 is out of range [1, 255]"});
}

}  // namespace
