// aclTensor / array / scalar objects and the executor contract of the two-phase API.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnn/aclnn_base.h"
#include "support/raw_enum_calls.h"

namespace {

TEST(AclTensor, GettersReturnWhatWasCreatedWithCallerOwnedArrays) {
  std::vector<float> storage(40);
  const int64_t dims[] = {2, 3, 4};
  const int64_t strides[] = {1, 8, 2};  // a permuted, padded view
  const int64_t storage_dims[] = {40};
  aclTensor* t = aclCreateTensor(dims, 3, ACL_FLOAT16, strides, 5, ACL_FORMAT_NCL, storage_dims, 1,
                                 storage.data());
  ASSERT_NE(t, nullptr);
  int64_t* got = nullptr;
  uint64_t n = 0;
  ASSERT_EQ(aclGetViewShape(t, &got, &n), ACLNN_SUCCESS);
  EXPECT_EQ(std::vector<int64_t>(got, got + n), std::vector<int64_t>({2, 3, 4}));
  delete[] got;
  ASSERT_EQ(aclGetViewStrides(t, &got, &n), ACLNN_SUCCESS);
  EXPECT_EQ(std::vector<int64_t>(got, got + n), std::vector<int64_t>({1, 8, 2}));
  delete[] got;
  ASSERT_EQ(aclGetStorageShape(t, &got, &n), ACLNN_SUCCESS);
  EXPECT_EQ(std::vector<int64_t>(got, got + n), std::vector<int64_t>({40}));
  delete[] got;
  int64_t offset = -1;
  ASSERT_EQ(aclGetViewOffset(t, &offset), ACLNN_SUCCESS);
  EXPECT_EQ(offset, 5);
  aclFormat format = ACL_FORMAT_UNDEFINED;
  ASSERT_EQ(aclGetFormat(t, &format), ACLNN_SUCCESS);
  EXPECT_EQ(format, ACL_FORMAT_NCL);
  aclDataType dtype = ACL_DT_UNDEFINED;
  ASSERT_EQ(aclGetDataType(t, &dtype), ACLNN_SUCCESS);
  EXPECT_EQ(dtype, ACL_FLOAT16);
  EXPECT_EQ(aclGetViewShape(t, nullptr, &n), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(aclGetViewOffset(nullptr, &offset), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(aclDestroyTensor(t), ACLNN_SUCCESS);
}

TEST(AclTensor, NullStridesMeanContiguous) {
  const int64_t dims[] = {2, 3, 5};
  aclTensor* t = aclCreateTensor(dims, 3, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, dims, 3, nullptr);
  ASSERT_NE(t, nullptr);
  int64_t* strides = nullptr;
  uint64_t n = 0;
  ASSERT_EQ(aclGetViewStrides(t, &strides, &n), ACLNN_SUCCESS);
  EXPECT_EQ(std::vector<int64_t>(strides, strides + n), std::vector<int64_t>({15, 5, 1}));
  delete[] strides;
  aclDestroyTensor(t);
}

TEST(AclTensor, NullDimsWithNonZeroCountGiveNullAndAMessage) {
  EXPECT_EQ(aclCreateTensor(nullptr, 2, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, nullptr, 0, nullptr),
            nullptr);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("viewDims is null"), std::string::npos);
  const int64_t dims[] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  EXPECT_EQ(aclCreateTensor(dims, 9, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, dims, 9, nullptr),
            nullptr);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("maximum rank 8"), std::string::npos);
  // A scalar (0-d) tensor is fine.
  aclTensor* s =
      aclCreateTensor(nullptr, 0, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, nullptr, 0, nullptr);
  EXPECT_NE(s, nullptr);
  aclDestroyTensor(s);
}

TEST(AclArrays, CreateSizeAndDestroy) {
  const int64_t ints[] = {3, -1, 7};
  aclIntArray* ia = aclCreateIntArray(ints, 3);
  ASSERT_NE(ia, nullptr);
  uint64_t size = 0;
  ASSERT_EQ(aclGetIntArraySize(ia, &size), ACLNN_SUCCESS);
  EXPECT_EQ(size, 3u);
  const bool bools[] = {true, false, true};
  aclBoolArray* ba = aclCreateBoolArray(bools, 3);
  ASSERT_EQ(aclGetBoolArraySize(ba, &size), ACLNN_SUCCESS);
  EXPECT_EQ(size, 3u);
  const float floats[] = {0.5f};
  aclFloatArray* fa = aclCreateFloatArray(floats, 1);
  ASSERT_EQ(aclGetFloatArraySize(fa, &size), ACLNN_SUCCESS);
  EXPECT_EQ(size, 1u);
  aclIntArray* empty = aclCreateIntArray(nullptr, 0);
  ASSERT_NE(empty, nullptr);
  EXPECT_EQ(aclCreateIntArray(nullptr, 2), nullptr);
  EXPECT_EQ(aclCreateBoolArray(nullptr, 1), nullptr);
  // The samples keep these in unique_ptrs with the destroy function as deleter.
  std::unique_ptr<aclIntArray, aclnnStatus (*)(const aclIntArray*)> a(ia, aclDestroyIntArray);
  std::unique_ptr<aclBoolArray, aclnnStatus (*)(const aclBoolArray*)> b(ba, aclDestroyBoolArray);
  std::unique_ptr<aclFloatArray, aclnnStatus (*)(const aclFloatArray*)> f(fa, aclDestroyFloatArray);
  std::unique_ptr<aclIntArray, aclnnStatus (*)(const aclIntArray*)> e(empty, aclDestroyIntArray);
  EXPECT_EQ(aclDestroyIntArray(nullptr), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyTensor(nullptr), ACLNN_SUCCESS);
}

TEST(AclScalar, CreateFromSupportedTypesOnly) {
  double d = 2.5;
  aclScalar* s = aclCreateScalar(&d, ACL_DOUBLE);
  ASSERT_NE(s, nullptr);
  aclDestroyScalar(s);
  EXPECT_EQ(aclCreateScalar(nullptr, ACL_FLOAT), nullptr);
  EXPECT_EQ(aclCreateScalar(&d, ACL_STRING), nullptr);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("STRING"), std::string::npos);
}

TEST(AclExecutor, ControlFunctionsRejectNullAndUnknownExecutors) {
  EXPECT_EQ(aclSetAclOpExecutorRepeatable(nullptr), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(aclDestroyAclOpExecutor(nullptr), ACLNN_SUCCESS);
  alignas(64) char fake[256] = {};
  auto* bogus = reinterpret_cast<aclOpExecutor*>(fake);
  EXPECT_EQ(aclSetAclOpExecutorRepeatable(bogus), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(aclDestroyAclOpExecutor(bogus), ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("not live"), std::string::npos);
}

}  // namespace

// A C caller may pass any int where the API takes an enum; values that are not enumerators are
// refused by name (the library never loads them as the enum type: see UBSan in CI).
TEST(AclTensor, UnknownDtypeOrFormatIsRefusedWithItsValue) {
  const int64_t dims[] = {2, 3};
  EXPECT_EQ(acltest_create_tensor_raw(dims, 2, 1000, nullptr, 0, ACL_FORMAT_ND, dims, 2, nullptr),
            nullptr);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("dataType 1000 is not an aclDataType"),
            std::string::npos)
      << aclGetRecentErrMsg();
  EXPECT_EQ(acltest_data_type_size_raw(1000), 0u);
  EXPECT_EQ(acltest_data_type_size_raw(-1), 0u);
  double value = 1;
  EXPECT_EQ(acltest_create_scalar_raw(&value, 1000), nullptr);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("dataType 1000"), std::string::npos);
  EXPECT_EQ(acltest_create_tensor_raw(dims, 2, ACL_FLOAT, nullptr, 0, -7, dims, 2, nullptr),
            nullptr);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("format -7 is not an aclFormat"),
            std::string::npos)
      << aclGetRecentErrMsg();
  // Every enumerator the headers name is accepted.
  for (aclFormat f : {ACL_FORMAT_ND, ACL_FORMAT_NCHW, ACL_FORMAT_NCL, ACL_FORMAT_NCDHW,
                      ACL_FORMAT_NHWC, ACL_FORMAT_UNDEFINED}) {
    aclTensor* t = aclCreateTensor(dims, 2, ACL_BF16, nullptr, 0, f, dims, 2, nullptr);
    EXPECT_NE(t, nullptr) << f;
    aclDestroyTensor(t);
  }
  EXPECT_EQ(aclDataTypeSize(ACL_FLOAT16), 2u);
}

TEST(AclTensor, ViewReachingPastItsStorageIsRefusedAtCreation) {
  std::vector<float> storage(20);
  const int64_t dims[] = {4, 5}, strides[] = {5, 1};
  const int64_t short_storage[] = {19};
  EXPECT_EQ(aclCreateTensor(dims, 2, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, short_storage, 1,
                            storage.data()),
            nullptr);
  const std::string msg = aclGetRecentErrMsg();
  EXPECT_NE(msg.find("reaches element 19"), std::string::npos) << msg;
  EXPECT_NE(msg.find("storageDims [19] hold only 19 elements"), std::string::npos) << msg;
  // The offset counts: the same view one element further needs 21.
  const int64_t exact[] = {20};
  EXPECT_EQ(aclCreateTensor(dims, 2, ACL_FLOAT, strides, 1, ACL_FORMAT_ND, exact, 1, nullptr),
            nullptr);
  // Exactly fitting, an N-d storage shape and an empty view (nothing reached) are fine.
  const int64_t nd_storage[] = {4, 5}, empty_dims[] = {0, 5};
  for (aclTensor* t :
       {aclCreateTensor(dims, 2, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, exact, 1, nullptr),
        aclCreateTensor(dims, 2, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, nd_storage, 2, nullptr),
        aclCreateTensor(empty_dims, 2, ACL_FLOAT, strides, 100, ACL_FORMAT_ND, exact, 1,
                        nullptr)}) {
    EXPECT_NE(t, nullptr) << aclGetRecentErrMsg();
    aclDestroyTensor(t);
  }
}

// Shapes whose row-major strides (stride == NULL) or element count overflow int64 are refused with
// a message (the strides used to be computed with a signed overflow, UBSan's report); an empty
// shape has 0 elements however large its other dims, and is accepted where its strides fit.
TEST(AclTensor, OverflowingShapesAreRefusedAndEmptyOnesAccepted) {
  const int64_t huge[] = {int64_t{1} << 32, int64_t{1} << 32, 4}, storage[] = {0};
  const int64_t ones[] = {1, 1, 1};
  for (const int64_t* strides : {static_cast<const int64_t*>(nullptr), ones}) {
    EXPECT_EQ(aclCreateTensor(huge, 3, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, storage, 1, nullptr),
              nullptr);
    const std::string msg = aclGetRecentErrMsg();
    EXPECT_NE(msg.find("viewDims [4294967296, 4294967296, 4]: the element count overflows int64"),
              std::string::npos)
        << msg;
  }
  // Empty: [0, 2^32, 2^32] has 0 elements (PyTorch accepts it too); its strides need explicit
  // values ([2^32, 2^32] row-major would be 2^64), [2^31, 2^31, 0] fits either way.
  const int64_t empty[] = {0, int64_t{1} << 32, int64_t{1} << 32};
  EXPECT_EQ(aclCreateTensor(empty, 3, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, storage, 1, nullptr),
            nullptr);
  const std::string msg = aclGetRecentErrMsg();
  EXPECT_NE(msg.find("stride is null, but the row-major strides of viewDims [0, 4294967296, "
                     "4294967296] overflow int64"),
            std::string::npos)
      << msg;
  aclTensor* t = aclCreateTensor(empty, 3, ACL_FLOAT, ones, 0, ACL_FORMAT_ND, storage, 1, nullptr);
  EXPECT_NE(t, nullptr) << aclGetRecentErrMsg();
  aclDestroyTensor(t);
  const int64_t empty_last[] = {int64_t{1} << 31, int64_t{1} << 31, 0};
  t = aclCreateTensor(empty_last, 3, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, storage, 1, nullptr);
  EXPECT_NE(t, nullptr) << aclGetRecentErrMsg();
  int64_t* strides = nullptr;
  uint64_t n = 0;
  ASSERT_EQ(aclGetViewStrides(t, &strides, &n), ACLNN_SUCCESS);
  EXPECT_EQ(std::vector<int64_t>(strides, strides + n),
            (std::vector<int64_t>{int64_t{1} << 31, 1, 1}));
  delete[] strides;
  aclDestroyTensor(t);
}

// acl_meta.h promises NULL for negative dims and element counts beyond int64 (negative dims used to
// give a tensor that phase 1 refused later).
TEST(AclTensor, NegativeDimsAreRefusedAtCreation) {
  const int64_t negative[] = {-1, 5}, strides[] = {5, 1}, storage[] = {20};
  EXPECT_EQ(aclCreateTensor(negative, 2, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, storage, 1, nullptr),
            nullptr);
  std::string msg = aclGetRecentErrMsg();
  EXPECT_NE(msg.find("aclCreateTensor: viewDims [-1, 5]: dim 0 = -1 is negative"),
            std::string::npos)
      << msg;
  EXPECT_EQ(aclCreateTensor(negative, 2, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, storage, 1, nullptr),
            nullptr);
  const int64_t dims[] = {4, 5}, negative_storage[] = {4, -5};
  EXPECT_EQ(
      aclCreateTensor(dims, 2, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, negative_storage, 2, nullptr),
      nullptr);
  msg = aclGetRecentErrMsg();
  EXPECT_NE(msg.find("storageDims [4, -5]: dim 1 = -5 is negative"), std::string::npos) << msg;
}
