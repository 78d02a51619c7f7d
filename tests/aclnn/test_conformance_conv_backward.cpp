// aclnnConvolutionBackward conformance, part 1: null pointers, dtypes, formats, attribute values
// and cubeMathType. One test per row of aclnn/CONFORMANCE.md (the row names the test): each breaks
// a valid call in one way, under every SoC profile where the rule's outcome differs, and checks
// the status code and the message. Rows whose outcome depends on the SoC also check acceptance on
// the profiles without the rule. Part 2 (shapes, limits, empty tensors) is
// test_conformance_conv_backward_shapes.cpp.
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "aclnn/aclnn_cpu_extensions.h"
#include "support/acl_test_util.h"
#include "support/conformance_case.h"

namespace {

using namespace conformance;

TEST(ConformanceConvBackward, BaselinesAreValidOnEveryProfile) {
  ExpectAcceptedOn(kAllSocs, BwdCall{});
  ExpectAcceptedOn(kAllSocs, Bwd1d());
  ExpectAcceptedOn(kAllSocs, BwdTransposed2d());
  ExpectAcceptedOn(kNew, Bwd3d());
}

// ---- null pointers (161001) ----

TEST(ConformanceConvBackward, NullRequiredPointerIs161001) {
  for (const char* name :
       {"gradOutput", "input", "weight", "biasSizes", "stride", "padding", "dilation",
        "outputPadding", "outputMask", "workspaceSize", "executor"}) {
    SCOPED_TRACE(name);
    BwdCall c;
    c.nulls = {name};
    ExpectRejectedOn(kAllSocs, c, kNull, kBwd, {std::string(name) + " is null"});
  }
}

TEST(ConformanceConvBackward, NullGradInputOrGradWeightIs161001WhateverTheMask) {
  for (const char* name : {"gradInput", "gradWeight"}) {
    for (bool bit : {true, false}) {
      SCOPED_TRACE(name);
      BwdCall c;
      c.nulls = {name};
      c.mask[name == std::string("gradInput") ? 0 : 1] = bit;
      ExpectRejectedOn(kAllSocs, c, kNull, kBwd, {std::string(name) + " is null"});
    }
  }
}

TEST(ConformanceConvBackward, NullGradBiasIs161001OnlyWhenRequested) {
  BwdCall c;
  c.nulls = {"gradBias"};
  ExpectRejectedOn(kAllSocs, c, kNull, kBwd, {"gradBias (outputMask[2] is true) is null"});
  c.mask = {true, true, false};
  ExpectAcceptedOn(kAllSocs, c);
}

TEST(ConformanceConvBackward, OutputMaskWithoutThreeEntriesIs161001) {
  BwdCall c;
  c.mask = {true, true};
  ExpectRejectedOn(kAllSocs, c, kNull, kBwd, {"outputMask has 2 entries", "exactly 3"});
}

// ---- the processor (161002) ----

// 000/004/002 R: "当前处理器不支持卷积反向传播" (161002). 002's product table marks two products ×:
// Atlas 200I/500 A2 inference (Ascend310B) and Atlas 200/300/500 inference (Ascend310). Null
// pointers are still reported first (161001), as on every profile.
TEST(ConformanceConvBackward, UnsupportedProcessorIs161002) {
  const std::pair<const char*, const char*> kUnsupported[] = {
      {"Ascend310B", "Atlas 200I/500 A2 inference products"},
      {"Ascend310", "Atlas 200/300/500 inference products"}};
  for (const auto& [soc, product] : kUnsupported) {
    SCOPED_TRACE(soc);
    ExpectRejectedOn({soc}, BwdCall{}, kInvalid, kBwd,
                     {std::string("the current processor ") + soc, product,
                      "does not support aclnnConvolutionBackward", "ACLNN_CPU_SOC"});
    BwdCall null_first;
    null_first.nulls = {"gradOutput"};
    ExpectRejectedOn({soc}, null_first, kNull, kBwd, {"gradOutput is null"});
  }
  // A name that is no processor at all is a bad ACLNN_CPU_SOC value, not this rule.
  ExpectRejectedOn({"Ascend42"}, BwdCall{}, kInvalid, kBwd, {"names no supported SoC"});
}

// ---- dtypes (161002) ----

TEST(ConformanceConvBackward, InputDtypeOutsideTheListIs161002) {
  for (const char* name : {"gradOutput", "input", "weight"}) {
    SCOPED_TRACE(name);
    BwdCall c;
    Spec& s = name == std::string("gradOutput") ? c.gy : name == std::string("input") ? c.x : c.w;
    s.dt = ACL_INT32;
    ExpectRejectedOn(kAllSocs, c, kInvalid, kBwd, {std::string(name) + " has dtype INT32"});
  }
}

TEST(ConformanceConvBackward, Bf16OnlyOnA2A3And95) {
  BwdCall c;
  c.SetDtype(ACL_BF16);
  ExpectAcceptedOn(kNew, c);
  ExpectRejectedOn(kOld, c, kInvalid, kBwd,
                   {"gradOutput has dtype BFLOAT16", "BFLOAT16 is not supported on",
                    "Ascend910B, Ascend910_93 and Ascend910_95"});
}

TEST(ConformanceConvBackward, MixedInputDtypesPromote) {
  BwdCall c;  // gradOutput FLOAT, input/weight FLOAT16: computed in FLOAT
  c.x.dt = c.w.dt = c.gx.dt = c.gw.dt = ACL_FLOAT16;
  ExpectAcceptedOn(kAllSocs, c);
  c.x.dt = c.gx.dt = ACL_BF16;  // BF16 + FLOAT16
  ExpectAcceptedOn(kNew, c);
}

TEST(ConformanceConvBackward, GradInputDtypeMustBeInputDtype) {
  BwdCall c;
  c.gx.dt = ACL_FLOAT16;
  ExpectRejectedOn(kAllSocs, c, kInvalid, kBwd,
                   {"gradInput has dtype FLOAT16 but input has FLOAT",
                    "gradInput must have the dtype of input"});
}

TEST(ConformanceConvBackward, GradWeightDtypeMustBeWeightDtype) {
  BwdCall c;
  c.gw.dt = ACL_FLOAT16;
  ExpectRejectedOn(kAllSocs, c, kInvalid, kBwd,
                   {"gradWeight has dtype FLOAT16 but weight has FLOAT",
                    "gradWeight must have the dtype of weight"});
}

TEST(ConformanceConvBackward, GradBiasDtypeMustBeGradOutputDtype) {
  BwdCall c;
  c.gb.dt = ACL_FLOAT16;
  ExpectRejectedOn(kAllSocs, c, kInvalid, kBwd,
                   {"gradBias has dtype FLOAT16 but gradOutput has FLOAT",
                    "gradBias must have the dtype of gradOutput"});
}

TEST(ConformanceConvBackward, UnrequestedOutputsAreStillValidated) {
  BwdCall c;
  c.mask = {false, false, false};
  c.gx.dt = ACL_FLOAT16;
  ExpectRejectedOn(kAllSocs, c, kInvalid, kBwd, {"gradInput has dtype FLOAT16 but input"});
  c.gx.dt = ACL_FLOAT;
  c.gw.shape = {4, 3, 3, 2};
  ExpectRejectedOn(kAllSocs, c, kInvalid, kBwd, {"gradWeight has shape [4, 3, 3, 2]"});
}

TEST(ConformanceConvBackward, EightBitFloatsOnlyOn95TransposedGradInput) {
  for (aclDataType dt : {ACL_HIFLOAT8, ACL_FLOAT8_E4M3FN}) {
    BwdCall c;
    c.x.dt = dt;
    ExpectRejectedOn(kNot95, c, kInvalid, kBwd,
                     {"input has dtype", "supported only on Ascend910_95",
                      "transposed = true with outputMask[0] = true"});
    ExpectRejectedOn({k95}, c, kInvalid, kBwd, {"does not support here"});
    BwdCall t = BwdTransposed2d();
    t.x.dt = dt;
    ExpectRejectedOn(kNot95, t, kInvalid, kBwd, {"supported only on Ascend910_95"});
    t.mask = {false, true, true};
    ExpectRejectedOn({k95}, t, kInvalid, kBwd, {"does not support here"});
  }
}

// Row 12: the 8-bit case 95 accepts (transposed, outputMask[0]) in 1d, 2d and 3d, whatever
// gradWeight/gradBias's mask bits and cubeMathType, with gradOutput, input and weight of one 8-bit
// dtype (no promotion covers 8-bit) and the outputs of their sources' dtypes (rows 7-9).
// FLOAT8_E5M2 is not among the documented dtypes. Computing them: test_conv_float8.cpp.
TEST(ConformanceConvBackward, EightBitTransposedGradInputAcceptedOn95) {
  for (aclDataType dt : {ACL_HIFLOAT8, ACL_FLOAT8_E4M3FN}) {
    SCOPED_TRACE(static_cast<int>(dt));
    BwdCall t = BwdTransposed2d();
    t.SetDtype(dt);
    for (std::vector<bool> mask :
         {std::vector<bool>{true, false, false}, std::vector<bool>{true, true, false},
          std::vector<bool>{true, false, true}, std::vector<bool>{true, true, true}}) {
      t.mask = mask;
      for (int8_t cube : {0, 1, 2, 3}) {
        t.cube = cube;
        ExpectAcceptedOn({k95}, t);
      }
      ExpectRejectedOn(kNot95, t, kInvalid, kBwd, {"supported only on Ascend910_95"});
    }
    BwdCall t1 = t, t3 = t;  // transposed 1d: x [2, 4, 5], w [4, 3, 3] -> gy [2, 3, 7]
    t1.x = t1.gx = {{2, 4, 5}, dt};
    t1.w = t1.gw = {{4, 3, 3}, dt};
    t1.gy = {{2, 3, 7}, dt};
    t1.stride = t1.dilation = {1};
    t1.padding = t1.op = {0};
    t3.x = t3.gx = {{1, 4, 3, 3, 3}, dt};  // transposed 3d -> gy [1, 3, 4, 4, 4]
    t3.w = t3.gw = {{4, 3, 2, 2, 2}, dt};
    t3.gy = {{1, 3, 4, 4, 4}, dt};
    t3.stride = t3.dilation = {1, 1, 1};
    t3.padding = t3.op = {0, 0, 0};
    ExpectAcceptedOn({k95}, t1);
    ExpectAcceptedOn({k95}, t3);
    BwdCall mixed = t;
    mixed.gy.dt = ACL_FLOAT;
    mixed.gb.dt = ACL_FLOAT;
    ExpectRejectedOn({k95}, mixed, kInvalid, kBwd,
                     {"gradOutput, input and weight have dtypes FLOAT, ",
                      "an 8-bit dtype does not promote with another one"});
    mixed = t;
    mixed.w.dt = mixed.gw.dt = dt == ACL_HIFLOAT8 ? ACL_FLOAT8_E4M3FN : ACL_HIFLOAT8;
    ExpectRejectedOn({k95}, mixed, kInvalid, kBwd, {"all three must have the same dtype"});
    mixed = t;
    mixed.gx.dt = ACL_FLOAT;
    ExpectRejectedOn(
        {k95}, mixed, kInvalid, kBwd,
        {"gradInput has dtype FLOAT but input has ", "gradInput must have the dtype of input"});
    mixed = t;
    mixed.gw.dt = ACL_FLOAT;
    ExpectRejectedOn({k95}, mixed, kInvalid, kBwd, {"gradWeight has dtype FLOAT but weight has "});
  }
  BwdCall e5m2 = BwdTransposed2d();
  e5m2.SetDtype(ACL_FLOAT8_E5M2);
  ExpectRejectedOn(kAllSocs, e5m2, kInvalid, kBwd,
                   {"gradOutput has dtype FLOAT8_E5M2", "does not support here"});
}

TEST(ConformanceConvBackward, DoubleIsACpuExtensionOffByDefault) {
  BwdCall c;
  c.SetDtype(ACL_DOUBLE);
  ExpectRejectedOn(kAllSocs, c, kInvalid, kBwd,
                   {"gradOutput has dtype DOUBLE", "CPU-only extension",
                    "aclnnCpuSetExtensions(ACLNN_CPU_EXT_DOUBLE)"});
  ASSERT_EQ(aclnnCpuGetExtensions(), ACLNN_CPU_EXT_NONE);
  const uint32_t previous = aclnnCpuSetExtensions(ACLNN_CPU_EXT_DOUBLE);
  EXPECT_EQ(previous, ACLNN_CPU_EXT_NONE);
  EXPECT_EQ(aclnnCpuGetExtensions(), ACLNN_CPU_EXT_DOUBLE);
  ExpectAcceptedOn(kNew, c);
  c.cube = 0;  // cubeMathType has no effect on DOUBLE, even where FLOAT needs 1 or 2
  ExpectAcceptedOn(kAllSocs, c);
  EXPECT_EQ(aclnnCpuSetExtensions(0xffffffffu), ACLNN_CPU_EXT_DOUBLE);
  EXPECT_EQ(aclnnCpuGetExtensions(), ACLNN_CPU_EXT_ALL);  // unknown bits dropped
  aclnnCpuSetExtensions(previous);
  ExpectRejectedOn({kA2}, c, kInvalid, kBwd, {"CPU-only extension"});
}

// ---- formats (161002) ----

TEST(ConformanceConvBackward, FormatPerRankNclNchwNcdhw) {
  BwdCall c1 = Bwd1d();
  c1.x.fmt = ACL_FORMAT_ND;  // 3-d ND: not in the documents' list
  ExpectRejectedOn(kAllSocs, c1, kInvalid, kBwd, {"input has format ND", "must be NCL"});
  BwdCall c2;
  c2.w.fmt = ACL_FORMAT_NHWC;
  ExpectRejectedOn(kAllSocs, c2, kInvalid, kBwd, {"weight has format NHWC", "must be NCHW"});
  BwdCall c3 = Bwd3d();
  c3.gy.fmt = ACL_FORMAT_NCHW;
  ExpectRejectedOn(kNew, c3, kInvalid, kBwd, {"gradOutput has format NCHW", "must be NCDHW"});
}

TEST(ConformanceConvBackward, RankOtherThan3To5Is161002) {
  BwdCall c;
  c.x = c.gx = {{2, 3, 7, 7, 1, 1}};
  ExpectRejectedOn(kAllSocs, c, kInvalid, kBwd, {"input has 6 dims", "3-d", "5-d"});
}

TEST(ConformanceConvBackward, GradOutputInputWeightFormatsAgree) {
  BwdCall c;  // gradOutput NCL (a 3-d tensor) with 4-d NCHW input and weight
  c.gy = {{2, 4, 25}};
  ExpectRejectedOn(
      kAllSocs, c, kInvalid, kBwd,
      {"gradOutput, input and weight have formats NCL, NCHW and NCHW", "must be the same"});
}

TEST(ConformanceConvBackward, GradInputAndGradWeightFormats) {
  BwdCall c;
  c.gx.fmt = ACL_FORMAT_ND;
  ExpectRejectedOn(kAllSocs, c, kInvalid, kBwd, {"gradInput has format ND", "must be NCHW"});
  BwdCall d = Bwd1d();
  d.gw = {{4, 3, 3, 1}};  // 4-d NCHW gradWeight for a 3-d NCL weight
  ExpectRejectedOn(kAllSocs, d, kInvalid, kBwd,
                   {"gradWeight has format NCHW but weight has NCL", "format of weight"});
}

TEST(ConformanceConvBackward, GradBiasFormatNd) {
  BwdCall c;
  c.gb.fmt = ACL_FORMAT_NCL;
  ExpectRejectedOn(kAllSocs, c, kInvalid, kBwd, {"gradBias has format NCL", "must be ND"});
}

// ---- contiguity of the outputs (161002) ----

// 002 marks gradInput, gradWeight and gradBias "非连续Tensor ×" for every product (000/001/004 say
// nothing about the outputs; gradOutput, input and weight may be non-contiguous): an output that
// is written must have the row-major strides of its shape. The strides of size-1 dims are free and
// any offset is allowed (contiguous is about the strides). An output outputMask leaves out is not
// written, so its layout is not looked at (the framework passes stride-0 stand-ins there).
TEST(ConformanceConvBackward, NonContiguousWrittenOutputsRefused) {
  BwdCall c;  // gradInput [2, 3, 7, 7] with one padding element after every row
  c.gx.strides = {168, 56, 8, 1};
  c.gx.storage = {336};
  ExpectRejectedOn(kAllSocs, c, kInvalid, kBwd,
                   {"gradInput has strides [168, 56, 8, 1] for shape [2, 3, 7, 7]",
                    "not contiguous", "expected strides [147, 49, 7, 1]"});
  BwdCall w;  // gradWeight [4, 3, 3, 3] stored channels-last
  w.gw.strides = {27, 1, 9, 3};
  ExpectRejectedOn(kAllSocs, w, kInvalid, kBwd,
                   {"gradWeight has strides [27, 1, 9, 3] for shape [4, 3, 3, 3]",
                    "expected strides [27, 9, 3, 1]"});
  BwdCall b;  // gradBias [4], every other element
  b.gb.strides = {2};
  b.gb.storage = {8};
  ExpectRejectedOn(kAllSocs, b, kInvalid, kBwd,
                   {"gradBias has strides [2] for shape [4]", "expected strides [1]"});
  BwdCall fine;  // N = 1 with a stride of 999 (size-1 dim) and an offset of 5
  fine.gy = {{1, 4, 5, 5}};
  fine.x = {{1, 3, 7, 7}};
  fine.gx = {{1, 3, 7, 7}, ACL_FLOAT, ACL_FORMAT_UNDEFINED, {999, 49, 7, 1}, 5, {152}};
  ExpectAcceptedOn(kAllSocs, fine);
  BwdCall masked = c;  // not requested: not written, not looked at
  masked.mask = {false, true, true};
  ExpectAcceptedOn(kAllSocs, masked);
  masked.gx.strides = {0, 0, 0, 0};
  masked.gx.storage = {1};
  ExpectAcceptedOn(kAllSocs, masked);
  // The CPU-only extension ACLNN_CPU_EXT_STRIDED_OUTPUTS lifts the rule (the numeric tests use it
  // to write strided views).
  const uint32_t previous = aclnnCpuSetExtensions(ACLNN_CPU_EXT_STRIDED_OUTPUTS);
  for (const BwdCall& strided : {c, w, b}) ExpectAcceptedOn(kAllSocs, strided);
  aclnnCpuSetExtensions(previous);
  ExpectRejectedOn({kA2}, c, kInvalid, kBwd, {"ACLNN_CPU_EXT_STRIDED_OUTPUTS"});
}

// ---- attribute values (161002) ----

TEST(ConformanceConvBackward, StrideAtLeast1) {
  BwdCall c;
  c.stride = {1, 0};
  ExpectRejectedOn(kAllSocs, c, kInvalid, kBwd, {"stride[1] = 0 is invalid", ">= 1"});
}

TEST(ConformanceConvBackward, PaddingAtLeast0) {
  BwdCall c;
  c.padding = {-1, 0};
  ExpectRejectedOn(kAllSocs, c, kInvalid, kBwd, {"padding[0] = -1 is invalid", ">= 0"});
}

TEST(ConformanceConvBackward, DilationAtLeast1) {
  BwdCall c;
  c.dilation = {0, 1};
  ExpectRejectedOn(kAllSocs, c, kInvalid, kBwd, {"dilation[0] = 0 is invalid", ">= 1"});
}

TEST(ConformanceConvBackward, OutputPaddingZeroUnlessTransposed) {
  BwdCall c;
  c.op = {0, 1};
  ExpectRejectedOn(kAllSocs, c, kInvalid, kBwd,
                   {"outputPadding[1] = 1 is invalid", "all 0 when transposed = false"});
}

TEST(ConformanceConvBackward, TransposedOutputPaddingBelowStride) {
  BwdCall c = BwdTransposed2d();  // stride 2
  c.op = {2, 1};
  c.gy = {{2, 3, 13, 12}};
  ExpectRejectedOn(kAllSocs, c, kInvalid, kBwd,
                   {"outputPadding[0] = 2 is invalid", "[0, stride[0]) = [0, 2)"});
}

TEST(ConformanceConvBackward, GroupsIn1To65535) {
  for (int groups : {0, 65536}) {
    BwdCall c;
    c.groups = groups;
    ExpectRejectedOn(kAllSocs, c, kInvalid, kBwd,
                     {"groups = " + std::to_string(groups) + " is invalid", "[1, 65535]"});
  }
}

// ---- cubeMathType (161002) ----

TEST(ConformanceConvBackward, CubeMathTypeIn0To3) {
  for (int8_t cube : {int8_t{-1}, int8_t{4}}) {
    BwdCall c;
    c.cube = cube;
    ExpectRejectedOn(kAllSocs, c, kInvalid, kBwd,
                     {"cubeMathType = " + std::to_string(cube) + " is invalid", "3 (USE_HF32)"});
  }
}

TEST(ConformanceConvBackward, FloatKeepDtypeAndHf32NotOnTrainingInferenceSeries) {
  for (int8_t cube : {int8_t{0}, int8_t{3}}) {
    BwdCall c;
    c.cube = cube;
    ExpectRejectedOn(
        kOld, c, kInvalid, kBwd,
        {"cubeMathType = " + std::to_string(cube), "not supported for FLOAT inputs", "use 1 or 2"});
    ExpectAcceptedOn(kNew, c);
  }
  BwdCall c;
  c.cube = 2;
  ExpectAcceptedOn(kAllSocs, c);
}

TEST(ConformanceConvBackward, Bf16UseFp16Rejected) {
  BwdCall c;
  c.SetDtype(ACL_BF16);
  c.cube = 2;
  ExpectRejectedOn(kNew, c, kInvalid, kBwd,
                   {"cubeMathType = 2 (USE_FP16) is not supported for BFLOAT16"});
}

// 000/004 reject USE_HF32 for non-FLOAT inputs on the A2; 001 (the oldest) and 002 (the newest)
// accept it. 002 wins.
TEST(ConformanceConvBackward, UseHf32With16BitInputsAccepted) {
  BwdCall c;
  c.SetDtype(ACL_FLOAT16);
  c.cube = 3;
  ExpectAcceptedOn(kAllSocs, c);
  c.SetDtype(ACL_BF16);
  ExpectAcceptedOn(kNew, c);
}

// cubeMathType 2 (USE_FP16) with FLOAT inputs computes in FLOAT16 on every profile. 002's A2/A3/95
// note says "当输入是BFLOAT16时不支持该选项。当输入为其他数据类型时不做处理", while its parameter
// table (and 000/001/004) says "当输入数据类型是FLOAT，转换为FLOAT16计算": the explicit FLOAT rule
// wins, and the note's "other dtypes" are read as FLOAT16 (already FLOAT16). Inputs of 1e-8
// underflow to 0 in FLOAT16 (its smallest subnormal is 2^-24 ~ 6e-8) but not in FLOAT or HFLOAT32,
// so gradWeight tells the modes apart: 0 under USE_FP16, 4e-8 (four terms) under KEEP_DTYPE.
double GradWeightOfTinyInputs(int8_t cube) {
  acltest::TestTensor x({1, 1, 4}, ACL_FLOAT), w({1, 1, 1}, ACL_FLOAT), gy({1, 1, 4}, ACL_FLOAT);
  x.Fill(std::vector<double>(4, 1e-8));
  w.Fill({1.0});
  gy.Fill(std::vector<double>(4, 1.0));
  acltest::TestTensor gx = acltest::TestTensor::Output({1, 1, 4}, ACL_FLOAT),
                      gw = acltest::TestTensor::Output({1, 1, 1}, ACL_FLOAT),
                      gb = acltest::TestTensor::Output({1}, ACL_FLOAT);
  auto one = acltest::MakeIntArray({1}), zero = acltest::MakeIntArray({0});
  auto mask = acltest::MakeBoolArray({true, true, true});
  const acltest::CallResult r = acltest::RunTwoPhase(
      [&](uint64_t* ws, aclOpExecutor** ex) {
        return aclnnConvolutionBackwardGetWorkspaceSize(
            gy.get(), x.get(), w.get(), one.get(), one.get(), zero.get(), one.get(), false,
            zero.get(), 1, mask.get(), cube, gx.get(), gw.get(), gb.get(), ws, ex);
      },
      aclnnConvolutionBackward);
  EXPECT_TRUE(r.ok()) << r.Describe();
  if (!r.ok()) return std::nan("");
  EXPECT_EQ(gx.Read(), std::vector<double>(4, 1.0));  // 1 * 1: exact in every mode
  return gw.Read()[0];
}

TEST(ConformanceConvBackward, UseFp16WithFloatComputesInFloat16OnEveryProfile) {
  for (const char* soc : kAllSocs) {
    SCOPED_TRACE(soc);
    Soc scope(soc);
    EXPECT_EQ(GradWeightOfTinyInputs(2), 0.0);
  }
  for (const char* soc : kNew) {  // the data discriminates: KEEP_DTYPE keeps the tiny products
    SCOPED_TRACE(soc);
    Soc scope(soc);
    EXPECT_NEAR(GradWeightOfTinyInputs(0), 4e-8, 1e-13);
  }
}

}  // namespace
