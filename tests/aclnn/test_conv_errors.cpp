// Every phase-1 rule of the convolution APIs: the exact status code, and a recent-error message
// naming the API, the parameter and the offending value/shape. Plus garbage (negative / huge /
// overflowing dims, bad strides and storages, null data), the documented check order, SoC
// profiles, and phase-2 misuse (consumed executor, short or null workspace). Phase 1 never reads
// tensor data, so tensors here describe small host buffers.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "acl/acl.h"
#include "aclnnop/aclnn_convolution.h"
#include "aclnnop/aclnn_convolution_backward.h"
#include "support/acl_test_util.h"

namespace {

using Shape = std::vector<int64_t>;
constexpr aclnnStatus kNull = ACLNN_ERR_PARAM_NULLPTR;
constexpr aclnnStatus kInvalid = ACLNN_ERR_PARAM_INVALID;

// A tensor description; the defaults give a contiguous tensor over a zeroed host buffer.
struct Spec {
  Shape shape;
  aclDataType dt = ACL_FLOAT;
  aclFormat fmt = ACL_FORMAT_UNDEFINED;  // = acltest::DefaultFormat(rank)
  Shape strides{};                       // empty = contiguous
  int64_t offset = 0;
  Shape storage{};  // empty = [numel] (only computed when the shape is sane)
  bool null_data = false;
};

// Owns the aclTensors / arrays of one call and their host storage.
class Pool {
 public:
  aclTensor* Tensor(const Spec& s) {
    Shape storage = s.storage;
    if (storage.empty()) {
      int64_t n = 1;
      for (int64_t d : s.shape) n *= d < 0 ? 0 : d;
      storage = {n};
    }
    int64_t elems = 1;
    for (int64_t d : storage) elems *= d;
    void* data = nullptr;
    if (!s.null_data) {
      buffers_.emplace_back(
          static_cast<size_t>(std::max<int64_t>(1, std::min<int64_t>(elems, 1 << 20))) * 8);
      data = buffers_.back().data();
    }
    const aclFormat fmt =
        s.fmt == ACL_FORMAT_UNDEFINED ? acltest::DefaultFormat(s.shape.size()) : s.fmt;
    aclTensor* t = aclCreateTensor(s.shape.data(), s.shape.size(), s.dt,
                                   s.strides.empty() ? nullptr : s.strides.data(), s.offset, fmt,
                                   storage.data(), storage.size(), data);
    EXPECT_NE(t, nullptr) << aclGetRecentErrMsg();
    tensors_.emplace_back(t, aclDestroyTensor);
    return t;
  }
  aclIntArray* Ints(const Shape& v) {
    ints_.push_back(acltest::MakeIntArray(v));
    return ints_.back().get();
  }
  aclBoolArray* Bools(const std::vector<bool>& v) {
    bools_.push_back(acltest::MakeBoolArray(v));
    return bools_.back().get();
  }

 private:
  std::vector<std::vector<uint64_t>> buffers_;
  std::vector<acltest::AclTensorPtr> tensors_;
  std::vector<acltest::IntArrayPtr> ints_;
  std::vector<acltest::BoolArrayPtr> bools_;
};

struct Result {
  aclnnStatus status;
  std::string msg;
};

// Asserts status and that the message has every fragment (and the API name).
void ExpectError(const Result& r, aclnnStatus status, const std::string& api,
                 const std::vector<std::string>& fragments) {
  if (std::getenv("CONV_ERRORS_PRINT")) std::printf("%d  %s\n", r.status, r.msg.c_str());
  EXPECT_EQ(r.status, status) << r.msg;
  EXPECT_NE(r.msg.find(api), std::string::npos) << "message lacks the API name: " << r.msg;
  for (const std::string& f : fragments)
    EXPECT_NE(r.msg.find(f), std::string::npos) << "message lacks '" << f << "': " << r.msg;
}

// Sets ACLNN_CPU_SOC for one scope.
struct Soc {
  explicit Soc(const char* name) { setenv("ACLNN_CPU_SOC", name, 1); }
  ~Soc() { unsetenv("ACLNN_CPU_SOC"); }
};

// ---------------------------------------------------------------------------------------------
// aclnnConvolutionBackward: a valid 2d baseline that each test breaks in one way.

struct Bwd {
  Spec gy{{2, 4, 5, 5}}, x{{2, 3, 7, 7}}, w{{4, 3, 3, 3}};
  Spec gx{{2, 3, 7, 7}}, gw{{4, 3, 3, 3}}, gb{{4}};
  Shape bias_sizes{4}, stride{1, 1}, padding{0, 0}, dilation{1, 1}, op{0, 0};
  bool transposed = false;
  int groups = 1;
  std::vector<bool> mask{true, true, true};
  int8_t cube = 0;
  std::set<std::string> nulls;  // parameters passed as nullptr

  bool Null(const char* name) const { return nulls.count(name) != 0; }

  Result Run() const {
    Pool p;
    auto t = [&](const char* name, const Spec& s) { return Null(name) ? nullptr : p.Tensor(s); };
    auto ints = [&](const char* name, const Shape& v) { return Null(name) ? nullptr : p.Ints(v); };
    uint64_t ws = 0;
    aclOpExecutor* ex = nullptr;
    const aclnnStatus st = aclnnConvolutionBackwardGetWorkspaceSize(
        t("gradOutput", gy), t("input", x), t("weight", w), ints("biasSizes", bias_sizes),
        ints("stride", stride), ints("padding", padding), ints("dilation", dilation), transposed,
        ints("outputPadding", op), groups, Null("outputMask") ? nullptr : p.Bools(mask), cube,
        t("gradInput", gx), t("gradWeight", gw), t("gradBias", gb),
        Null("workspaceSize") ? nullptr : &ws, Null("executor") ? nullptr : &ex);
    Result r{st, st == 0 ? "" : aclGetRecentErrMsg()};
    if (st == 0) aclDestroyAclOpExecutor(ex);  // never launched: free it (not repeatable is fine)
    return r;
  }
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

TEST(ConvBackwardErrors, MaskedOutputsMayBeNull) {
  for (int m = 0; m < 8; ++m) {
    Bwd b;
    b.mask = {(m & 1) != 0, (m & 2) != 0, (m & 4) != 0};
    if (!b.mask[0]) b.nulls.insert("gradInput");
    if (!b.mask[1]) b.nulls.insert("gradWeight");
    if (!b.mask[2]) b.nulls.insert("gradBias"), b.nulls.insert("biasSizes");
    Result r = b.Run();
    EXPECT_EQ(r.status, 0) << "mask " << m << ": " << r.msg;
  }
  // A masked-out output is ignored altogether, even when it is garbage.
  Bwd b;
  b.mask = {false, true, true};
  b.gx = Spec{{9}, ACL_INT32};
  EXPECT_EQ(b.Run().status, 0);
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
  // Outputs in another supported dtype are fine on the A2 (written in their own dtype) ...
  b = Bwd{};
  b.gx.dt = ACL_FLOAT16;
  b.gw.dt = ACL_DOUBLE;
  EXPECT_EQ(b.Run().status, 0);
  // ... but must match their source on Ascend910_95.
  Soc soc("Ascend910_95");
  ExpectError(b.Run(), kInvalid, kBwd,
              {"gradInput has dtype FLOAT16", "input has FLOAT", "Ascend910_95"});
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
  // 3-d accepts ND and NCL (mixed), but not NCHW.
  Bwd c;
  c.gy = {{2, 4, 5}, ACL_FLOAT, ACL_FORMAT_ND};
  c.x = {{2, 3, 7}, ACL_FLOAT, ACL_FORMAT_NCL};
  c.w = {{4, 3, 3}, ACL_FLOAT, ACL_FORMAT_ND};
  c.gx = {{2, 3, 7}}, c.gw = {{4, 3, 3}};
  c.stride = c.dilation = {1}, c.padding = c.op = {0};
  EXPECT_EQ(c.Run().status, 0) << c.Run().msg;
  c.w.fmt = ACL_FORMAT_NCHW;
  ExpectError(c.Run(), kInvalid, kBwd, {"weight has format NCHW", "ND or NCL"});
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
  bf.gy.dt = bf.x.dt = bf.w.dt = ACL_BF16;
  bf.cube = 2;
  ExpectError(bf.Run(), kInvalid, kBwd, {"cubeMathType = 2 (USE_FP16)", "BFLOAT16"});
  Bwd d;
  d.gy.dt = d.x.dt = d.w.dt = ACL_DOUBLE;
  d.cube = 2;
  EXPECT_EQ(d.Run().status, 0);
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
  Bwd b;
  b.gy = {{2, 4, 25}};
  ExpectError(b.Run(), kInvalid, kBwd, {"gradOutput has 3 dims", "input has 4"});
  b = Bwd{};
  b.w = {{4, 3, 3}};
  b.gw = {{4, 3, 3}};
  ExpectError(b.Run(), kInvalid, kBwd, {"weight has 3 dims", "[4, 3, 3]"});
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

TEST(ConvBackwardErrors, TransposedLimits) {
  Bwd b = Transposed();
  b.stride = {64, 2};
  b.op = {0, 1};
  b.gy = {{2, 3, 259, 12}};
  ExpectError(b.Run(), kInvalid, kBwd, {"stride[0] (H) = 64", "[1, 63]", "transposed"});
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
         b.x.shape = {2, -3, 7, 7}, b.x.storage = {100};
       },
       {"input has shape [2, -3, 7, 7]", "negative"}},
      {[](Bwd& b) {
         b.x.shape = {2, 3, int64_t{1} << 40, 7}, b.x.storage = {100};
       },
       {"input", "exceeds 2147483647"}},
      {[](Bwd& b) {
         b.x.shape = {2147483647, 2147483647, 2147483647, 2147483647};
         b.x.strides = {1, 1, 1, 1};
         b.x.storage = {100};
       },
       {"input", "overflows int64"}},
      {[](Bwd& b) {
         b.w.strides = {27, 9, -3, 1}, b.w.offset = 6;
       },
       {"weight has stride -3", "negative strides"}},
      {[](Bwd& b) { b.x.offset = -1; }, {"input has offset -1"}},
      {[](Bwd& b) { b.gy.storage = {99}; },
       {"gradOutput's view", "reaches element 199", "holds only 99"}},
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
  ExpectError(b.Run(), kInvalid, kBwd, {"too large", "2147483647"});
  // f16 operands of 2^45 elements would need more than 2^46 bytes of workspace.
  Bwd w;
  w.x = w.gx = {{32768, 32768, 32768}, ACL_FLOAT16, ACL_FORMAT_ND, {}, 0, {int64_t{1} << 45}};
  w.gy = w.x;
  w.w = w.gw = {{32768, 32768, 1}, ACL_FLOAT16};
  w.w.storage = w.gw.storage = {int64_t{1} << 30};
  w.gb = {{32768}, ACL_FLOAT16};
  w.bias_sizes = {32768};
  w.stride = w.dilation = {1};
  w.padding = w.op = {0};
  ExpectError(w.Run(), kInvalid, kBwd, {"workspace", "2^46"});
}

TEST(ConvBackwardErrors, UnknownSoc) {
  Soc soc("Ascend42");
  ExpectError(Bwd{}.Run(), kInvalid, kBwd, {"ACLNN_CPU_SOC", "Ascend42"});
  Bwd b;
  b.nulls = {"input"};  // null checks still come first
  ExpectError(b.Run(), kNull, kBwd, {"input is null"});
}

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

struct TbcBwd {
  Spec self{{5, 2, 4}, ACL_FLOAT, ACL_FORMAT_ND}, x{{7, 2, 3}, ACL_FLOAT, ACL_FORMAT_ND};
  Spec w{{3, 3, 4}, ACL_FLOAT, ACL_FORMAT_ND}, b{{4}};
  Spec gx{{7, 2, 3}, ACL_FLOAT, ACL_FORMAT_ND}, gw{{3, 3, 4}, ACL_FLOAT, ACL_FORMAT_ND}, gb{{4}};
  int64_t pad = 0;
  int8_t cube = 0;
  std::set<std::string> nulls;

  Result Run() const {
    Pool p;
    auto t = [&](const char* name, const Spec& s) {
      return nulls.count(name) ? nullptr : p.Tensor(s);
    };
    uint64_t ws = 0;
    aclOpExecutor* ex = nullptr;
    const aclnnStatus st = aclnnConvTbcBackwardGetWorkspaceSize(
        t("self", self), t("input", x), t("weight", w), t("bias", b), pad, cube, t("gradInput", gx),
        t("gradWeight", gw), t("gradBias", gb), nulls.count("workspaceSize") ? nullptr : &ws,
        nulls.count("executor") ? nullptr : &ex);
    Result r{st, st == 0 ? "" : aclGetRecentErrMsg()};
    if (st == 0) aclDestroyAclOpExecutor(ex);
    return r;
  }
};

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
  t.gb.fmt = ACL_FORMAT_NCL;
  ExpectError(t.Run(), kInvalid, kTbcBwd, {"gradBias has format NCL", "ND"});
  t = TbcBwd{};
  t.x.fmt = ACL_FORMAT_NCL;  // NCL is fine for the 3-d tensors
  EXPECT_EQ(t.Run().status, 0);
  t.self.dt = t.x.dt = t.w.dt = t.b.dt = ACL_BF16;
  t.cube = 2;
  ExpectError(t.Run(), kInvalid, kTbcBwd, {"cubeMathType = 2", "BFLOAT16"});
  t.cube = 7;
  ExpectError(t.Run(), kInvalid, kTbcBwd, {"cubeMathType = 7"});
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

TEST(ConvTbcBackwardErrors, SocProfiles) {
  {
    Soc soc("Ascend310P");
    ExpectError(TbcBwd{}.Run(), kInvalid, kTbcBwd, {"not supported on Ascend310P"});
  }
  TbcBwd t;
  t.gx.dt = ACL_FLOAT16;
  EXPECT_EQ(t.Run().status, 0);
  Soc soc("Ascend910_95");
  ExpectError(t.Run(), kInvalid, kTbcBwd, {"gradInput has dtype FLOAT16", "Ascend910_95"});
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
  gy.Fill({1, 1, 1});
  x.Fill({1, 1, 1, 1, 1});
  w.Fill({1, 1, 1});
  auto one = acltest::MakeIntArray({1}), zero = acltest::MakeIntArray({0});
  auto mask = acltest::MakeBoolArray({true, false, false});
  auto plan = [&](uint64_t* ws, aclOpExecutor** ex) {
    return aclnnConvolutionBackwardGetWorkspaceSize(
        gy.get(), x.get(), w.get(), nullptr, one.get(), zero.get(), one.get(), false, zero.get(), 1,
        mask.get(), 0, gx.get(), nullptr, nullptr, ws, ex);
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
  // The real launch consumes it; launching again is detected.
  ASSERT_EQ(aclnnConvolutionBackward(ws.data(), size, ex, stream), 0) << aclGetRecentErrMsg();
  EXPECT_EQ(gx.Read(), (std::vector<double>{1, 2, 3, 2, 1}));
  EXPECT_EQ(aclnnConvolutionBackward(ws.data(), size, ex, stream), kInvalid);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("not live"), std::string::npos);
  EXPECT_EQ(aclnnConvolutionBackward(ws.data(), size, nullptr, stream), kNull);
  EXPECT_EQ(aclnnConvTbcBackward(ws.data(), size, nullptr, stream), kNull);
}

}  // namespace
