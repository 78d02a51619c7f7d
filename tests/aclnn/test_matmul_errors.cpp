// aclnnMatmul's phase-1 rules (status code + a message naming the API, the parameter, its value
// or shape and the rule) and phase-2 misuse, which must never crash.
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "acl/acl.h"
#include "aclnnop/aclnn_matmul.h"
#include "support/error_case.h"

namespace {

using namespace conv_errors;

constexpr const char* kApi = "aclnnMatmul";

struct Mm {
  Spec self{{4, 6}, ACL_BF16, ACL_FORMAT_ND}, mat2{{6, 5}, ACL_BF16, ACL_FORMAT_ND},
      out{{4, 5}, ACL_BF16, ACL_FORMAT_ND};
  int8_t cube = 0;
  std::set<std::string> nulls;

  Result Run() const {
    Pool p;
    auto t = [&](const char* name, const Spec& s) {
      return nulls.count(name) ? nullptr : p.Tensor(s);
    };
    uint64_t ws = 0;
    aclOpExecutor* ex = nullptr;
    const aclnnStatus st = aclnnMatmulGetWorkspaceSize(
        t("self", self), t("mat2", mat2), t("out", out), cube,
        nulls.count("workspaceSize") ? nullptr : &ws, nulls.count("executor") ? nullptr : &ex);
    Result r{st, st == 0 ? "" : aclGetRecentErrMsg()};
    if (st == 0) aclDestroyAclOpExecutor(ex);
    return r;
  }
};

// Each case with its dtype set on all three tensors.
Mm AllOf(aclDataType dt) {
  Mm m;
  m.self.dt = m.mat2.dt = m.out.dt = dt;
  return m;
}

TEST(MatmulErrors, ValidCallsSucceed) {
  for (aclDataType dt : {ACL_FLOAT, ACL_FLOAT16, ACL_BF16}) {
    const Result r = AllOf(dt).Run();
    EXPECT_EQ(r.status, 0) << r.msg;
  }
  Mm nchw;  // frameworks label 4-d tensors NCHW: a plain layout, accepted
  nchw.self = {{2, 3, 4, 6}, ACL_BF16, ACL_FORMAT_NCHW};
  nchw.out = {{2, 3, 4, 5}, ACL_BF16, ACL_FORMAT_NCHW};
  EXPECT_EQ(nchw.Run().status, 0) << nchw.Run().msg;
}

TEST(MatmulErrors, NullPointersAre161001) {
  for (const char* name : {"self", "mat2", "out", "workspaceSize", "executor"}) {
    Mm m;
    m.nulls = {name};
    ExpectError(m.Run(), kNull, kApi, {std::string(name) + " is null"});
  }
}

TEST(MatmulErrors, Dtypes) {
  Mm ints;
  ints.mat2.dt = ACL_INT32;
  ExpectError(ints.Run(), kInvalid, kApi, {"mat2 has dtype INT32", "FLOAT, FLOAT16"});
  Mm dbl = AllOf(ACL_DOUBLE);
  ExpectError(dbl.Run(), kInvalid, kApi, {"self has dtype DOUBLE"});
  // BFLOAT16 is promoted with nothing (the documents' constraint on Ascend910B).
  for (aclDataType other : {ACL_FLOAT16, ACL_FLOAT}) {
    Mm mix;
    mix.mat2.dt = other;
    ExpectError(mix.Run(), kInvalid, kApi,
                {"self has dtype BFLOAT16 and mat2 has dtype", "cannot be promoted"});
  }
  // out: the promoted dtype, or FLOAT for FLOAT16.
  Mm wrong_out;
  wrong_out.out.dt = ACL_FLOAT16;
  ExpectError(wrong_out.Run(), kInvalid, kApi,
              {"out has dtype FLOAT16 but self and mat2 promote to BFLOAT16"});
  Mm f16_to_f32 = AllOf(ACL_FLOAT16);
  f16_to_f32.out.dt = ACL_FLOAT;
  EXPECT_EQ(f16_to_f32.Run().status, 0) << f16_to_f32.Run().msg;
  Mm mixed = AllOf(ACL_FLOAT);
  mixed.self.dt = ACL_FLOAT16;  // FLOAT16 with FLOAT -> FLOAT
  EXPECT_EQ(mixed.Run().status, 0) << mixed.Run().msg;
  mixed.out.dt = ACL_FLOAT16;
  ExpectError(mixed.Run(), kInvalid, kApi, {"out has dtype FLOAT16", "promote to FLOAT"});
}

TEST(MatmulErrors, Bf16OnlyOnA2A3And95) {
  {
    Soc soc("Ascend910");
    ExpectError(Mm{}.Run(), kInvalid, kApi,
                {"self has dtype BFLOAT16", "not supported on Ascend910"});
    Mm f16 = AllOf(ACL_FLOAT16);
    EXPECT_EQ(f16.Run().status, 0) << f16.Run().msg;
  }
  for (const char* name : {"Ascend910_93", "Ascend910_95"}) {
    Soc soc(name);
    EXPECT_EQ(Mm{}.Run().status, 0) << name << ": " << Mm{}.Run().msg;
  }
}

TEST(MatmulErrors, Formats) {
  Mm nz;
  nz.mat2.fmt = ACL_FORMAT_FRACTAL_NZ;
  ExpectError(nz.Run(), kInvalid, kApi, {"mat2 has format", "ND"});
  Mm nc1hwc0;
  nc1hwc0.out.fmt = ACL_FORMAT_NC1HWC0;
  ExpectError(nc1hwc0.Run(), kInvalid, kApi, {"out has format"});
}

TEST(MatmulErrors, CubeMathType) {
  for (int8_t cube : {-1, 4}) {
    Mm m;
    m.cube = cube;
    ExpectError(m.Run(), kInvalid, kApi, {"cubeMathType = " + std::to_string(cube)});
  }
  Mm bf16_fp16;
  bf16_fp16.cube = 2;
  ExpectError(bf16_fp16.Run(), kInvalid, kApi, {"USE_FP16", "BFLOAT16"});
  Mm f16_hf32 = AllOf(ACL_FLOAT16);
  f16_hf32.cube = 3;
  ExpectError(f16_hf32.Run(), kInvalid, kApi, {"USE_HF32", "FLOAT16", "only for FLOAT"});
  for (int8_t cube : {0, 1, 2, 3}) {
    Mm f32 = AllOf(ACL_FLOAT);
    f32.cube = cube;
    EXPECT_EQ(f32.Run().status, 0) << f32.Run().msg;
  }
  {  // The training series has no fp32 Cube mode.
    Soc soc("Ascend910");
    Mm keep = AllOf(ACL_FLOAT);
    ExpectError(keep.Run(), kInvalid, kApi, {"cubeMathType = 0", "Ascend910"});
  }
  // Both 1-d: the mode has no effect, so no dtype rule applies (its range still does).
  Mm dot = AllOf(ACL_FLOAT16);
  dot.self.shape = {6};
  dot.mat2.shape = {6};
  dot.out.shape = {};
  dot.cube = 3;
  EXPECT_EQ(dot.Run().status, 0) << dot.Run().msg;
  dot.cube = 5;
  ExpectError(dot.Run(), kInvalid, kApi, {"cubeMathType = 5"});
}

TEST(MatmulErrors, Shapes) {
  Mm k;
  k.mat2.shape = {7, 5};
  ExpectError(k.Run(), kInvalid, kApi,
              {"self has shape [4, 6] and mat2 has shape [7, 5]", "last dim (6)",
               "reduce dim (dim -2, 7)"});
  Mm batch;
  batch.self.shape = {2, 4, 6};
  batch.mat2.shape = {3, 6, 5};
  batch.out.shape = {3, 4, 5};
  ExpectError(batch.Run(), kInvalid, kApi, {"batch dims [2] and [3] do not broadcast"});
  Mm out;
  out.out.shape = {5, 4};
  ExpectError(out.Run(), kInvalid, kApi,
              {"out has shape [5, 4] but self [4, 6] @ mat2 [6, 5] has shape [4, 5]"});
  Mm vec;
  vec.mat2.shape = {6};
  vec.out.shape = {4, 1};  // a 1-d mat2's dim is absent from out
  ExpectError(vec.Run(), kInvalid, kApi, {"has shape [4]"});
  Mm rank7;
  rank7.self.shape = {1, 1, 1, 1, 1, 4, 6};
  ExpectError(rank7.Run(), kInvalid, kApi, {"self has 7 dims", "1 to 6 dims"});
  Mm rank0;
  rank0.mat2.shape = {};
  ExpectError(rank0.Run(), kInvalid, kApi, {"mat2 has 0 dims"});
  Mm negative;
  negative.self.strides = {-6, 1}, negative.self.offset = 18;
  ExpectError(negative.Run(), kInvalid, kApi, {"self has stride -6", "negative strides"});
  Mm overlapping;
  overlapping.out.strides = {0, 1};
  ExpectError(overlapping.Run(), kInvalid, kApi, {"out has overlapping elements"});
}

TEST(MatmulErrors, OutputOverlappingAnInputIsRefused) {
  Pool p;
  std::vector<uint16_t> buffer(64);
  const int64_t storage = 64;
  auto make = [&](std::vector<int64_t> shape, int64_t offset) {
    std::vector<int64_t> strides = {shape[1], 1};
    aclTensor* t = aclCreateTensor(shape.data(), 2, ACL_BF16, strides.data(), offset, ACL_FORMAT_ND,
                                   &storage, 1, buffer.data());
    return acltest::AclTensorPtr(t, aclDestroyTensor);
  };
  auto self = make({4, 4}, 0), mat2 = make({4, 4}, 16), out = make({4, 4}, 8);
  uint64_t ws = 0;
  aclOpExecutor* ex = nullptr;
  const aclnnStatus st =
      aclnnMatmulGetWorkspaceSize(self.get(), mat2.get(), out.get(), 0, &ws, &ex);
  ExpectError({st, st ? aclGetRecentErrMsg() : ""}, kInvalid, kApi, {"out", "self"});
  if (st == 0) aclDestroyAclOpExecutor(ex);
}

TEST(MatmulErrors, LaunchMisuseNeverCrashes) {
  Pool p;
  const aclTensor* self = p.Tensor({{64, 64}, ACL_BF16, ACL_FORMAT_ND});
  const aclTensor* mat2 = p.Tensor({{64, 64}, ACL_BF16, ACL_FORMAT_ND});
  aclTensor* out = p.Tensor({{64, 64}, ACL_BF16, ACL_FORMAT_ND});
  uint64_t ws = 0;
  aclOpExecutor* ex = nullptr;
  ASSERT_EQ(aclnnMatmulGetWorkspaceSize(self, mat2, out, 0, &ws, &ex), 0) << aclGetRecentErrMsg();
  std::vector<char> workspace(ws + 64);
  if (ws > 0) {
    EXPECT_EQ(aclnnMatmul(workspace.data(), ws - 1, ex, nullptr), kInvalid);
    EXPECT_NE(std::string(aclGetRecentErrMsg()).find("smaller than"), std::string::npos);
    EXPECT_EQ(aclnnMatmul(nullptr, ws, ex, nullptr), kNull);
  }
  EXPECT_EQ(aclnnMatmul(workspace.data(), ws, ex, nullptr), 0) << aclGetRecentErrMsg();
  // Consumed by the launch: a second one is refused.
  EXPECT_EQ(aclnnMatmul(workspace.data(), ws, ex, nullptr), kInvalid);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("not live"), std::string::npos);
  EXPECT_EQ(aclnnMatmul(workspace.data(), ws, nullptr, nullptr), kNull);
}

}  // namespace
