// Scaffolding of the conformance tests (test_conformance_*.cpp, one test per row of
// aclnn/CONFORMANCE.md): a valid aclnnConvolutionBackward / aclnnConvTbcBackward call per geometry
// that each test breaks in exactly one way, and assertions run under every SoC profile named.
// Phase 1 is called directly (no CPU-only extension enabled), so the calls see the emulated chips.
#pragma once

#include <initializer_list>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "aclnnop/aclnn_convolution_backward.h"
#include "support/error_case.h"

namespace conformance {

using conv_errors::ExpectError;
using conv_errors::kInvalid;
using conv_errors::kNull;
using conv_errors::Pool;
using conv_errors::Result;
using conv_errors::Shape;
using conv_errors::Soc;
using conv_errors::Spec;

constexpr const char* kA2 = "Ascend910B";
constexpr const char* kA3 = "Ascend910_93";
constexpr const char* k95 = "Ascend910_95";
constexpr const char* kTrain = "Ascend910";
constexpr const char* kInfer = "Ascend310P";
using Socs = std::initializer_list<const char*>;
inline constexpr Socs kAllSocs = {kA2, kA3, k95, kTrain, kInfer};
inline constexpr Socs kA2A3 = {kA2, kA3};
inline constexpr Socs kNew = {kA2, kA3, k95};  // the SoCs with BF16, 3-d and empty tensors
inline constexpr Socs kOld = {kTrain, kInfer};
inline constexpr Socs kNot95 = {kA2, kA3, kTrain, kInfer};
inline constexpr Socs kNotA2A3 = {k95, kTrain, kInfer};

constexpr const char* kBwd = "aclnnConvolutionBackward";
constexpr const char* kTbcBwd = "aclnnConvTbcBackward";

// aclnnConvolutionBackward phase 1. The default is a valid 2d FLOAT call on every profile
// (cubeMathType 1: the training/inference series have no FLOAT KEEP_DTYPE mode).
struct BwdCall {
  Spec gy{{2, 4, 5, 5}}, x{{2, 3, 7, 7}}, w{{4, 3, 3, 3}};
  Spec gx{{2, 3, 7, 7}}, gw{{4, 3, 3, 3}}, gb{{4}};
  Shape bias_sizes{4}, stride{1, 1}, padding{0, 0}, dilation{1, 1}, op{0, 0};
  bool transposed = false;
  int groups = 1;
  std::vector<bool> mask{true, true, true};
  int8_t cube = 1;
  std::set<std::string> nulls;  // parameters passed as nullptr

  Result Run() const;
  void SetDtype(aclDataType dt);  // every tensor
};

// Valid calls of other geometries (each a 1-element change away from its rule's defect).
BwdCall Bwd1d();            // gy [2, 4, 5], x [2, 3, 7], w [4, 3, 3]
BwdCall Bwd3d();            // gy [1, 4, 3, 3, 3], x [1, 3, 5, 5, 5], w [4, 3, 3, 3, 3]
BwdCall BwdTransposed2d();  // x [2, 4, 5, 5], w [4, 3, 3, 3], stride 2, op 1 -> gy [2, 3, 12, 12]
// A single-channel 2d call: x [1, 1, h, w_in] with kernel [kh, kw]; gradOutput shape inferred.
BwdCall BwdPlain2d(int64_t h, int64_t w_in, int64_t kh, int64_t kw, Shape stride, Shape padding,
                   Shape dilation);
// The same for a transposed convolution (x is the transposed conv's input).
BwdCall BwdPlainTransposed2d(int64_t h, int64_t w_in, int64_t kh, int64_t kw, Shape stride,
                             Shape padding, Shape dilation);

// aclnnConvTbcBackward phase 1; the default is valid on Ascend910B / Ascend910_93.
struct TbcCall {
  Spec self{{5, 2, 4}, ACL_FLOAT, ACL_FORMAT_ND}, x{{7, 2, 3}, ACL_FLOAT, ACL_FORMAT_ND};
  Spec w{{3, 3, 4}, ACL_FLOAT, ACL_FORMAT_ND}, b{{4}, ACL_FLOAT, ACL_FORMAT_ND};
  Spec gx{{7, 2, 3}, ACL_FLOAT, ACL_FORMAT_ND}, gw{{3, 3, 4}, ACL_FLOAT, ACL_FORMAT_ND};
  Spec gb{{4}, ACL_FLOAT, ACL_FORMAT_ND};
  int64_t pad = 0;
  int8_t cube = 0;
  std::set<std::string> nulls;

  Result Run() const;
  void SetDtype(aclDataType dt);
};

// Under each SoC: the call fails with `status` and a message with the API name and `fragments`.
template <typename Call>
void ExpectRejectedOn(Socs socs, const Call& call, aclnnStatus status, const char* api,
                      const std::vector<std::string>& fragments) {
  for (const char* soc : socs) {
    SCOPED_TRACE(soc);
    Soc scope(soc);
    ExpectError(call.Run(), status, api, fragments);
  }
}

// Under each SoC: the call succeeds.
template <typename Call>
void ExpectAcceptedOn(Socs socs, const Call& call) {
  for (const char* soc : socs) {
    Soc scope(soc);
    const Result r = call.Run();
    EXPECT_EQ(r.status, 0) << "on " << soc << ": " << r.msg;
  }
}

}  // namespace conformance
