// Phase-1 rules of aclnnConvolution (forward), aclnnConvTbcBackward and aclnnConvTbc (status code
// + message naming the API, parameter and value), and phase-2 misuse (consumed or foreign
// executor, short or null workspace) that must never crash.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "acl/acl.h"
#include "aclnnop/aclnn_convolution.h"
#include "aclnnop/aclnn_convolution_backward.h"
#include "support/conformance_case.h"
#include "support/error_case.h"

namespace {

using namespace conv_errors;

// ---------------------------------------------------------------------------------------------
// aclnnConvolution (forward): same rules; output plays gradOutput's part.

struct Fwd {
  Spec x{{2, 3, 7, 7}}, w{{4, 3, 3, 3}}, b{{4}}, y{{2, 4, 5, 5}};
  Shape stride{1, 1}, padding{0, 0}, dilation{1, 1}, op{0, 0};
  bool transposed = false, with_bias = true;
  int64_t groups = 1;
  int8_t cube = 0;
  std::set<std::string> nulls;

  Result Run() const {
    Pool p;
    auto t = [&](const char* name, const Spec& s) {
      return nulls.count(name) ? nullptr : p.Tensor(s);
    };
    auto ints = [&](const char* name, const Shape& v) {
      return nulls.count(name) ? nullptr : p.Ints(v);
    };
    uint64_t ws = 0;
    aclOpExecutor* ex = nullptr;
    const aclnnStatus st = aclnnConvolutionGetWorkspaceSize(
        t("input", x), t("weight", w), with_bias ? t("bias", b) : nullptr, ints("stride", stride),
        ints("padding", padding), ints("dilation", dilation), transposed, ints("outputPadding", op),
        groups, t("output", y), cube, nulls.count("workspaceSize") ? nullptr : &ws,
        nulls.count("executor") ? nullptr : &ex);
    Result r{st, st == 0 ? "" : aclGetRecentErrMsg()};
    if (st == 0) aclDestroyAclOpExecutor(ex);
    return r;
  }
};

constexpr const char* kFwd = "aclnnConvolution";

TEST(ConvForwardErrors, Rules) {
  EXPECT_EQ(Fwd{}.Run().status, 0) << Fwd{}.Run().msg;
  Fwd nb;
  nb.with_bias = false;
  EXPECT_EQ(nb.Run().status, 0);
  for (const char* name : {"input", "weight", "stride", "padding", "dilation", "outputPadding",
                           "output", "workspaceSize", "executor"}) {
    Fwd f;
    f.nulls = {name};
    ExpectError(f.Run(), kNull, kFwd, {name, "is null"});
  }
  Fwd f;
  f.y = {{2, 4, 5, 6}};
  ExpectError(f.Run(), kInvalid, kFwd, {"output has shape [2, 4, 5, 6]", "produces [2, 4, 5, 5]"});
  f = Fwd{};
  f.b = {{3}};
  ExpectError(f.Run(), kInvalid, kFwd, {"bias has shape [3]", "[4]"});
  f = Fwd{};
  f.b.dt = ACL_INT32;
  ExpectError(f.Run(), kInvalid, kFwd, {"bias has dtype INT32"});
  f = Fwd{};
  f.b.fmt = ACL_FORMAT_NCL;
  ExpectError(f.Run(), kInvalid, kFwd, {"bias has format NCL"});
  f = Fwd{};
  f.y.strides = {100, 25, 5, 0};
  ExpectError(f.Run(), kInvalid, kFwd, {"output has overlapping elements"});
  f = Fwd{};
  f.groups = 70000;
  ExpectError(f.Run(), kInvalid, kFwd, {"groups = 70000"});
  // Transposed: [2, 4, 5, 5] with weight [4, 3, 3, 3], stride 2, outputPadding 1 -> [2, 3, 12, 12].
  Fwd t;
  t.transposed = true;
  t.x = {{2, 4, 5, 5}};
  t.b = {{3}};
  t.y = {{2, 3, 12, 12}};
  t.stride = {2, 2};
  t.op = {1, 1};
  EXPECT_EQ(t.Run().status, 0) << t.Run().msg;
  t.y = {{2, 3, 11, 11}};
  ExpectError(t.Run(), kInvalid, kFwd,
              {"output has shape [2, 3, 11, 11]", "transposed", "[2, 3, 12, 12]"});
}

// ---------------------------------------------------------------------------------------------
// aclnnConvTbcBackward and aclnnConvTbc.

// The conformance tests' ConvTbcBackward call (support/conformance_case.h).
using TbcBwd = conformance::TbcCall;

constexpr const char* kTbcBwd = "aclnnConvTbcBackward";

TEST(ConvTbcBackwardErrors, Nulls) {
  EXPECT_EQ(TbcBwd{}.Run().status, 0) << TbcBwd{}.Run().msg;
  for (const char* name : {"self", "input", "weight", "bias", "gradInput", "gradWeight", "gradBias",
                           "workspaceSize", "executor"}) {
    TbcBwd t;
    t.nulls = {name};
    ExpectError(t.Run(), kNull, kTbcBwd, {name, "is null"});
  }
}

TEST(ConvTbcBackwardErrors, DtypesAndFormats) {
  TbcBwd t;
  t.b.dt = ACL_FLOAT16;
  ExpectError(t.Run(), kInvalid, kTbcBwd, {"bias has dtype FLOAT16", "same dtype"});
  t = TbcBwd{};
  t.x.dt = ACL_INT32;
  ExpectError(t.Run(), kInvalid, kTbcBwd, {"input has dtype INT32"});
  t = TbcBwd{};
  t.gw.dt = ACL_UINT8;
  ExpectError(t.Run(), kInvalid, kTbcBwd, {"gradWeight has dtype UINT8"});
  t = TbcBwd{};
  t.self.fmt = ACL_FORMAT_NCHW;
  ExpectError(t.Run(), kInvalid, kTbcBwd, {"self has format NCHW", "ND or NCL"});
  t = TbcBwd{};
  t.gb.fmt = ACL_FORMAT_NCHW;  // 003 lists ND and NCL for gradBias too (issue #12: NCL was refused)
  ExpectError(t.Run(), kInvalid, kTbcBwd, {"gradBias has format NCHW", "ND or NCL"});
  t = TbcBwd{};
  t.x.fmt = t.gb.fmt = ACL_FORMAT_NCL;
  EXPECT_EQ(t.Run().status, 0) << t.Run().msg;
  t.self.dt = t.x.dt = t.w.dt = t.b.dt = t.gx.dt = t.gw.dt = t.gb.dt = ACL_BF16;
  t.cube = 2;
  ExpectError(t.Run(), kInvalid, kTbcBwd, {"cubeMathType = 2", "BFLOAT16"});
  t.cube = 7;
  ExpectError(t.Run(), kInvalid, kTbcBwd, {"cubeMathType = 7"});
}

// Data pointers not aligned to the element size are refused in phase 1, naming the tensor, its
// address's alignment and the one needed (they used to run with misaligned loads: UBSan's report
// in im2col). Each tensor in turn, FLOAT at +1 and +2 bytes, FLOAT16 at +1; aligned runs.
TEST(ConvForwardErrors, MisalignedDataIsRefused) {
  struct Case {
    const char* tensor;
    aclDataType dt;
    size_t shift;
    const char* fragment;
  };
  const Case cases[] = {
      {"input", ACL_FLOAT, 1, "aligned to 1 byte, but its FLOAT elements need 4-byte alignment"},
      {"input", ACL_FLOAT, 2, "aligned to 2 bytes, but its FLOAT elements need 4-byte alignment"},
      {"weight", ACL_FLOAT16, 1, "aligned to 1 byte, but its FLOAT16 elements need 2-byte"},
      {"output", ACL_FLOAT, 2, "aligned to 2 bytes"},
      {"bias", ACL_FLOAT, 1, "aligned to 1 byte"},
      {"", ACL_FLOAT, 0, ""},  // every pointer aligned: accepted
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.tensor);
    // 8-byte aligned storage with room for the shift.
    std::vector<double> x(2 * 3 * 7 * 7), w(4 * 3 * 3 * 3), b(4), y(2 * 4 * 5 * 5);
    auto make = [&](const char* name, std::vector<double>& v, std::vector<int64_t> dims,
                    aclDataType dt) {
      const bool shifted = std::string(name) == c.tensor;
      char* data = reinterpret_cast<char*>(v.data()) + (shifted ? c.shift : 0);
      return acltest::AclTensorPtr(
          aclCreateTensor(dims.data(), dims.size(), shifted ? c.dt : dt, nullptr, 0,
                          acltest::DefaultFormat(dims.size()), dims.data(), dims.size(), data),
          aclDestroyTensor);
    };
    const aclDataType dt = c.dt == ACL_FLOAT16 ? ACL_FLOAT16 : ACL_FLOAT;  // one dtype throughout
    auto tx = make("input", x, {2, 3, 7, 7}, dt), tw = make("weight", w, {4, 3, 3, 3}, dt);
    auto tb = make("bias", b, {4}, dt), ty = make("output", y, {2, 4, 5, 5}, dt);
    auto ones = acltest::MakeIntArray({1, 1}), zeros = acltest::MakeIntArray({0, 0});
    uint64_t ws = 0;
    aclOpExecutor* ex = nullptr;
    const aclnnStatus st =
        aclnnConvolutionGetWorkspaceSize(tx.get(), tw.get(), tb.get(), ones.get(), zeros.get(),
                                         ones.get(), false, zeros.get(), 1, ty.get(), 0, &ws, &ex);
    if (c.shift == 0) {
      EXPECT_EQ(st, ACLNN_SUCCESS) << aclGetRecentErrMsg();
      aclDestroyAclOpExecutor(ex);
      continue;
    }
    ExpectError(Result{st, st == 0 ? "" : aclGetRecentErrMsg()}, kInvalid, kFwd,
                {std::string(c.tensor) + " has data pointer ", c.fragment});
    EXPECT_EQ(ex, nullptr);
  }
}

// An empty 3d problem whose per-sample output volume overflows int64: x [0, 1, 0, H, W] padded by
// 2 in D has an output [0, 1, 4, H, W], 4 * H * W > 2^63 positions per sample for H = W near 2^31
// (computed with a signed overflow before: UBSan's report in geometry.h). Refused with 161002,
// forward and backward; the same empty problem with small H, W is accepted (nothing to compute).
TEST(ConvForwardErrors, EmptyProblemWhoseVolumeOverflowsIsRefused) {
  const int64_t big = 2147483646;
  Fwd f;
  // (Explicit strides: the row-major ones of the output would overflow; aclCreateTensor refuses.)
  f.x = {{0, 1, 0, big, big}, ACL_FLOAT, ACL_FORMAT_NCDHW, {1, 1, 1, 1, 1}, 0, {1}};
  f.w = {{1, 1, 1, 1, 1}};
  f.b = {{1}};
  f.y = {{0, 1, 4, big, big}, ACL_FLOAT, ACL_FORMAT_NCDHW, {1, 1, 1, 1, 1}, 0, {1}};
  f.stride = {1, 1, 1}, f.padding = {2, 0, 0}, f.dilation = {1, 1, 1}, f.op = {0, 0, 0};
  ExpectError(f.Run(), kInvalid, kFwd,
              {"output spatial size 4 x 2147483646 x 2147483646 overflows int64"});
  conformance::BwdCall b;
  b.x = f.x, b.gx = f.x, b.w = b.gw = f.w, b.gy = f.y, b.gb = {{1}};
  b.bias_sizes = {1}, b.stride = f.stride, b.padding = f.padding, b.dilation = f.dilation;
  b.op = f.op;
  ExpectError(b.Run(), kInvalid, "aclnnConvolutionBackward", {"overflows int64"});
  f.x.shape = {0, 1, 0, 5, 5};
  f.y.shape = {0, 1, 4, 5, 5};
  EXPECT_EQ(f.Run().status, ACLNN_SUCCESS) << f.Run().msg;
}

TEST(ConvTbcBackwardErrors, PadAndShapes) {
  TbcBwd t;
  t.pad = 256;
  ExpectError(t.Run(), kInvalid, kTbcBwd, {"pad = 256", "[0, 255]"});
  t.pad = -1;
  ExpectError(t.Run(), kInvalid, kTbcBwd, {"pad = -1"});
  t = TbcBwd{};
  t.self = {{5, 2, 4, 1}, ACL_FLOAT, ACL_FORMAT_ND};
  ExpectError(t.Run(), kInvalid, kTbcBwd, {"self has 4 dims", "3-d"});
  t = TbcBwd{};
  t.b = t.gb = {{4, 1}, ACL_FLOAT, ACL_FORMAT_ND};
  ExpectError(t.Run(), kInvalid, kTbcBwd, {"bias has 2 dims", "1-d"});
  t = TbcBwd{};
  t.w = t.gw = {{3, 2, 4}, ACL_FLOAT, ACL_FORMAT_ND};
  ExpectError(t.Run(), kInvalid, kTbcBwd, {"input has shape [7, 2, 3]", "weight[1] = 2"});
  t = TbcBwd{};
  t.b = t.gb = {{5}};
  ExpectError(t.Run(), kInvalid, kTbcBwd, {"bias has shape [5]", "weight[2] = 4"});
  t = TbcBwd{};
  t.w = t.gw = {{256, 3, 4}, ACL_FLOAT, ACL_FORMAT_ND};
  ExpectError(t.Run(), kInvalid, kTbcBwd, {"kernel size weight[0] = 256", "[1, 255]"});
  t = TbcBwd{};
  t.w = t.gw = {{9, 3, 4}, ACL_FLOAT, ACL_FORMAT_ND};
  ExpectError(t.Run(), kInvalid, kTbcBwd, {"T = 7", "K = 9", "must be >= 1"});
  t = TbcBwd{};
  t.self = {{6, 2, 4}, ACL_FLOAT, ACL_FORMAT_ND};
  ExpectError(t.Run(), kInvalid, kTbcBwd, {"self has shape [6, 2, 4]", "produces [5, 2, 4]"});
  t = TbcBwd{};
  t.pad = 1;  // T_out = 7 + 2 + 1 - 3 = 7
  t.self = {{7, 2, 4}, ACL_FLOAT, ACL_FORMAT_ND};
  EXPECT_EQ(t.Run().status, 0);
  t = TbcBwd{};
  t.gx = {{7, 2, 4}, ACL_FLOAT, ACL_FORMAT_ND};
  ExpectError(t.Run(), kInvalid, kTbcBwd,
              {"gradInput has shape [7, 2, 4]", "input has shape [7, 2, 3]"});
  t = TbcBwd{};
  t.x.shape[1] = t.gx.shape[1] = t.self.shape[1] = 0;
  ExpectError(t.Run(), kInvalid, kTbcBwd, {"zero dim", "empty tensors"});
  t = TbcBwd{};
  t.gw.strides = {0, 0, 1};
  ExpectError(t.Run(), kInvalid, kTbcBwd, {"gradWeight has overlapping elements"});
}

// 003 documents aclnnConvTbcBackward for Atlas A2/A3 only, and outputs in their source's dtype on
// every SoC (issue #12: Ascend910 and Ascend910_95 were accepted, the dtype rule 910_95-only).
TEST(ConvTbcBackwardErrors, SocProfiles) {
  for (const char* name : {"Ascend310P", "Ascend910", "Ascend910_95"}) {
    Soc soc(name);
    ExpectError(TbcBwd{}.Run(), kInvalid, kTbcBwd,
                {std::string("not supported on ") + name, "Ascend910B and Ascend910_93"});
  }
  TbcBwd t;
  t.gx.dt = ACL_FLOAT16;
  ExpectError(t.Run(), kInvalid, kTbcBwd, {"gradInput has dtype FLOAT16", "input has FLOAT"});
  Soc soc("Ascend910_93");
  EXPECT_EQ(TbcBwd{}.Run().status, 0);
}

TEST(ConvTbcErrors, Forward) {
  Pool p;
  uint64_t ws = 0;
  aclOpExecutor* ex = nullptr;
  aclTensor* self = p.Tensor({{7, 2, 3}, ACL_FLOAT, ACL_FORMAT_ND});
  aclTensor* w = p.Tensor({{3, 3, 4}, ACL_FLOAT, ACL_FORMAT_ND});
  aclTensor* b = p.Tensor({{4}});
  aclTensor* good = p.Tensor({{5, 2, 4}, ACL_FLOAT, ACL_FORMAT_ND});
  aclTensor* bad = p.Tensor({{5, 2, 3}, ACL_FLOAT, ACL_FORMAT_ND});
  ASSERT_EQ(aclnnConvTbcGetWorkspaceSize(self, w, b, 0, good, 0, &ws, &ex), 0)
      << aclGetRecentErrMsg();
  aclDestroyAclOpExecutor(ex);
  Result r{aclnnConvTbcGetWorkspaceSize(self, w, b, 0, bad, 0, &ws, &ex), aclGetRecentErrMsg()};
  ExpectError(r, kInvalid, "aclnnConvTbc", {"output has shape [5, 2, 3]", "produces [5, 2, 4]"});
  r = {aclnnConvTbcGetWorkspaceSize(self, w, nullptr, 0, good, 0, &ws, &ex), aclGetRecentErrMsg()};
  ExpectError(r, kNull, "aclnnConvTbc", {"bias is null"});
  r = {aclnnConvTbcGetWorkspaceSize(self, w, b, 300, good, 0, &ws, &ex), aclGetRecentErrMsg()};
  ExpectError(r, kInvalid, "aclnnConvTbc", {"pad = 300"});
}

// ---------------------------------------------------------------------------------------------
// Phase 2 misuse never crashes.

TEST(ConvLaunchErrors, ConsumedForeignAndShortWorkspace) {
  acltest::TestTensor gy({1, 1, 3}, ACL_FLOAT16), x({1, 1, 5}, ACL_FLOAT16),
      w({1, 1, 3}, ACL_FLOAT16);
  acltest::TestTensor gx = acltest::TestTensor::Output({1, 1, 5}, ACL_FLOAT16);
  acltest::TestTensor gw = acltest::TestTensor::Output({1, 1, 3}, ACL_FLOAT16);  // not requested
  gy.Fill({1, 1, 1});
  x.Fill({1, 1, 1, 1, 1});
  w.Fill({1, 1, 1});
  auto one = acltest::MakeIntArray({1}), zero = acltest::MakeIntArray({0});
  auto mask = acltest::MakeBoolArray({true, false, false});
  auto plan = [&](uint64_t* ws, aclOpExecutor** ex) {
    return aclnnConvolutionBackwardGetWorkspaceSize(
        gy.get(), x.get(), w.get(), one.get(), one.get(), zero.get(), one.get(), false, zero.get(),
        1, mask.get(), 0, gx.get(), gw.get(), nullptr, ws, ex);
  };
  aclrtStream stream = acltest::SharedStream();
  uint64_t size = 0;
  aclOpExecutor* ex = nullptr;
  ASSERT_EQ(plan(&size, &ex), 0) << aclGetRecentErrMsg();
  ASSERT_GT(size, 0u);
  acltest::DeviceBuffer ws(size);
  // Null workspace although bytes are needed; a short one; a launch through another API.
  EXPECT_EQ(aclnnConvolutionBackward(nullptr, size, ex, stream), kNull);
  EXPECT_EQ(aclnnConvolutionBackward(ws.data(), 0, ex, stream), kInvalid);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("aclnnConvolutionBackward"), std::string::npos);
  EXPECT_EQ(aclnnConvolution(ws.data(), size, ex, stream), kInvalid);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("aclnnConvolutionBackward"), std::string::npos);
  EXPECT_TRUE(gx.Untouched());
  EXPECT_TRUE(gw.Untouched());
  // The real launch consumes it; launching again is detected.
  ASSERT_EQ(aclnnConvolutionBackward(ws.data(), size, ex, stream), 0) << aclGetRecentErrMsg();
  EXPECT_EQ(gx.Read(), (std::vector<double>{1, 2, 3, 2, 1}));
  EXPECT_EQ(aclnnConvolutionBackward(ws.data(), size, ex, stream), kInvalid);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("not live"), std::string::npos);
  EXPECT_EQ(aclnnConvolutionBackward(ws.data(), size, nullptr, stream), kNull);
  EXPECT_EQ(aclnnConvTbcBackward(ws.data(), size, nullptr, stream), kNull);
}

}  // namespace
