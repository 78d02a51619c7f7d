// The registry of live meta objects: destroying an aclTensor, aclScalar, array or tensor list
// twice, destroying it with another kind's function, or reading a destroyed one (getters, phase 1)
// returns 161002 and an aclGetRecentErrMsg line, never a second delete or a read of freed memory
// (the sanitizer stage saw heap-use-after-free / double-free here before the registry).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_convolution.h"
#include "support/acl_test_util.h"

namespace {

std::string Recent() {
  return aclGetRecentErrMsg();
}

aclTensor* MakeTensor(std::vector<float>& storage, const std::vector<int64_t>& dims) {
  return aclCreateTensor(dims.data(), dims.size(), ACL_FLOAT, nullptr, 0,
                         acltest::DefaultFormat(dims.size()), dims.data(), dims.size(),
                         storage.data());
}

TEST(MetaHandles, DestroyingATensorTwiceIsRefused) {
  std::vector<float> storage(6);
  aclTensor* t = MakeTensor(storage, {2, 3});
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(aclDestroyTensor(t), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyTensor(t), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(Recent().rfind("aclDestroyTensor: tensor ", 0), 0u) << Recent();
  EXPECT_NE(Recent().find("is not a live aclTensor"), std::string::npos) << Recent();
  EXPECT_NE(Recent().find("already destroyed"), std::string::npos) << Recent();
  EXPECT_EQ(aclDestroyTensor(nullptr), ACLNN_SUCCESS);
}

TEST(MetaHandles, DestroyingEachKindTwiceIsRefused) {
  const int64_t ints[] = {1, 2};
  const float floats[] = {0.5f};
  const bool bools[] = {true};
  double d = 1.5;
  std::vector<float> storage(2);
  aclTensor* t = MakeTensor(storage, {2});
  const aclTensor* members[] = {t};
  aclIntArray* ia = aclCreateIntArray(ints, 2);
  aclFloatArray* fa = aclCreateFloatArray(floats, 1);
  aclBoolArray* ba = aclCreateBoolArray(bools, 1);
  aclScalar* s = aclCreateScalar(&d, ACL_DOUBLE);
  aclTensorList* l = aclCreateTensorList(members, 1);
  ASSERT_TRUE(t && ia && fa && ba && s && l);
  EXPECT_EQ(aclDestroyIntArray(ia), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyIntArray(ia), ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(Recent().find("is not a live aclIntArray"), std::string::npos) << Recent();
  EXPECT_EQ(aclDestroyFloatArray(fa), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyFloatArray(fa), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(aclDestroyBoolArray(ba), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyBoolArray(ba), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(aclDestroyScalar(s), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyScalar(s), ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(Recent().find("aclDestroyScalar"), std::string::npos) << Recent();
  EXPECT_EQ(aclDestroyTensorList(l), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyTensorList(l), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(aclDestroyTensor(t), ACLNN_SUCCESS);  // the list did not own it
}

// A handle given to the wrong destroy function is refused by its kind, and stays usable.
TEST(MetaHandles, DestroyingWithAnotherKindsFunctionIsRefused) {
  std::vector<float> storage(4);
  aclTensor* t = MakeTensor(storage, {4});
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(aclDestroyIntArray(reinterpret_cast<const aclIntArray*>(t)), ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(Recent().find("is an aclTensor, not an aclIntArray"), std::string::npos) << Recent();
  int local = 0;
  EXPECT_EQ(aclDestroyTensor(reinterpret_cast<const aclTensor*>(&local)), ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(Recent().find("never created"), std::string::npos) << Recent();
  uint64_t n = 0;
  int64_t* dims = nullptr;
  ASSERT_EQ(aclGetViewShape(t, &dims, &n), ACLNN_SUCCESS);
  delete[] dims;
  EXPECT_EQ(n, 1u);
  EXPECT_EQ(aclDestroyTensor(t), ACLNN_SUCCESS);
}

TEST(MetaHandles, GettersRefuseDestroyedHandles) {
  std::vector<float> storage(6);
  aclTensor* t = MakeTensor(storage, {2, 3});
  const int64_t ints[] = {1, 2};
  aclIntArray* ia = aclCreateIntArray(ints, 2);
  ASSERT_TRUE(t && ia);
  ASSERT_EQ(aclDestroyTensor(t), ACLNN_SUCCESS);
  ASSERT_EQ(aclDestroyIntArray(ia), ACLNN_SUCCESS);
  int64_t* dims = nullptr;
  uint64_t n = 0;
  EXPECT_EQ(aclGetViewShape(t, &dims, &n), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(dims, nullptr);
  EXPECT_NE(Recent().find("aclGetViewShape: tensor "), std::string::npos) << Recent();
  aclDataType dtype = ACL_DT_UNDEFINED;
  EXPECT_EQ(aclGetDataType(t, &dtype), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(aclGetIntArraySize(ia, &n), ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(Recent().find("is not a live aclIntArray"), std::string::npos) << Recent();
  EXPECT_EQ(aclGetDataType(nullptr, &dtype), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_NE(Recent().find("tensor is null"), std::string::npos) << Recent();
}

// Phase 1 refuses a destroyed tensor or array by the parameter's name.
TEST(MetaHandles, PhaseOneRefusesDestroyedHandles) {
  acltest::SharedStream();  // the runtime is up
  std::vector<float> x(16), w(4), y(9);
  aclTensor* tx = MakeTensor(x, {1, 1, 4, 4});
  aclTensor* tw = MakeTensor(w, {1, 1, 2, 2});
  aclTensor* ty = MakeTensor(y, {1, 1, 3, 3});
  auto ones = acltest::MakeIntArray({1, 1}), zeros = acltest::MakeIntArray({0, 0});
  ASSERT_TRUE(tx && tw && ty);
  ASSERT_EQ(aclDestroyTensor(tw), ACLNN_SUCCESS);
  uint64_t ws = 0;
  aclOpExecutor* e = nullptr;
  EXPECT_EQ(aclnnConvolutionGetWorkspaceSize(tx, tw, nullptr, ones.get(), zeros.get(), ones.get(),
                                             false, zeros.get(), 1, ty, 0, &ws, &e),
            ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(Recent().find("weight "), std::string::npos) << Recent();
  EXPECT_NE(Recent().find("is not a live aclTensor"), std::string::npos) << Recent();
  EXPECT_EQ(e, nullptr);
  const int64_t two[] = {2, 2};
  aclIntArray* stride = aclCreateIntArray(two, 2);
  ASSERT_EQ(aclDestroyIntArray(stride), ACLNN_SUCCESS);
  tw = MakeTensor(w, {1, 1, 2, 2});
  EXPECT_EQ(aclnnConvolutionGetWorkspaceSize(tx, tw, nullptr, stride, zeros.get(), ones.get(),
                                             false, zeros.get(), 1, ty, 0, &ws, &e),
            ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(Recent().find("stride "), std::string::npos) << Recent();
  EXPECT_NE(Recent().find("is not a live aclIntArray"), std::string::npos) << Recent();
  for (aclTensor* t : {tx, tw, ty}) EXPECT_EQ(aclDestroyTensor(t), ACLNN_SUCCESS);
}

}  // namespace
