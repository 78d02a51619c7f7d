// One ConvTbc case (geometry + layout of every tensor) and the checks that run it through
// aclnnConvTbcBackward / aclnnConvTbc (with bias) and compare with the naive float64 reference,
// including that outputs wrote nothing outside their views. The reference rounds the operands as
// the dtype and cubeMathType make the kernels round them.
#pragma once

#include <gtest/gtest.h>

#include "support/acl_test_util.h"
#include "support/naive_conv.h"

namespace acltest {

struct TbcCase {
  naive::TbcGeom g;
  Layout layout = Layout::kContiguous;
  aclDataType dtype = ACL_FLOAT;  // of every tensor
  int cube = 0;                   // cubeMathType (1: HF32, 2: USE_FP16 operand rounding)
};

::testing::AssertionResult CheckTbcBackward(const TbcCase& c);
::testing::AssertionResult CheckTbcForward(const TbcCase& c);

}  // namespace acltest
