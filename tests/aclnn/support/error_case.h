// Shared scaffolding of the convolution error tests (test_conv_errors*.cpp): tensor descriptions
// over small zeroed host buffers, a pool owning one call's aclTensors/arrays, and the assertion
// that a failure has the expected status and a message naming the API and the offending values.
#pragma once

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "acl/acl.h"
#include "support/acl_test_util.h"

namespace conv_errors {

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
  // For storage claims too large to allocate: a distinct address per tensor, 2^47 bytes apart
  // (never dereferenced: the call is refused in phase 1), so tensors do not appear to overlap.
  bool fake_far_data = false;
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
    if (s.fake_far_data) {
      data = reinterpret_cast<void*>(static_cast<uintptr_t>(++fake_count_) << 47);
    } else if (!s.null_data) {
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
  uintptr_t fake_count_ = 0;
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
inline void ExpectError(const Result& r, aclnnStatus status, const std::string& api,
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

}  // namespace conv_errors
