// Status codes of internal failures (aclnn/CONFORMANCE.md, row "internal failure"): every aclnn
// entry point runs under guard_aclnn, which must give ACLNN_ERR_INNER_NULLPTR (561103), the code
// the documents list for "API internal check error", for anything but a documented argument error:
// host memory exhaustion or a broken invariant. No argument can provoke those through the C API,
// so this test drives the guard itself (compiled from aclnn/src/error.{h,cpp}).
#include <new>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

#include "error.h"

namespace {

using aclnn_cpu::guard_aclnn;

TEST(ConformanceInternal, InternalFailureIs561103) {
  EXPECT_EQ(ACLNN_ERR_INNER_NULLPTR, 561103);
  const aclnnStatus st = guard_aclnn("aclnnConvolutionBackward", []() -> aclnnStatus {
    throw std::logic_error("conv engine reached an unsupported dtype");
  });
  EXPECT_EQ(st, ACLNN_ERR_INNER_NULLPTR);
  EXPECT_EQ(std::string(aclnn_cpu::recent_error()),
            "aclnnConvolutionBackward: internal error: conv engine reached an unsupported dtype");
}

TEST(ConformanceInternal, HostMemoryExhaustionIs561103) {
  const aclnnStatus st =
      guard_aclnn("aclnnConvTbcBackward", []() -> aclnnStatus { throw std::bad_alloc(); });
  EXPECT_EQ(st, ACLNN_ERR_INNER_NULLPTR);
  EXPECT_EQ(std::string(aclnn_cpu::recent_error()), "aclnnConvTbcBackward: out of host memory");
}

TEST(ConformanceInternal, ArgumentErrorsKeepTheirCode) {
  const aclnnStatus st = guard_aclnn("aclnnConvolutionBackward", []() -> aclnnStatus {
    aclnn_cpu::fail(ACLNN_ERR_PARAM_INVALID, "stride[0] = 0 is invalid");
  });
  EXPECT_EQ(st, ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(std::string(aclnn_cpu::recent_error()),
            "aclnnConvolutionBackward: stride[0] = 0 is invalid");
}

}  // namespace
