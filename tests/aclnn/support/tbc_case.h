// One ConvTbc case (geometry + layout of every tensor) and the checks that run it through
// aclnnConvTbcBackward / aclnnConvTbc (with bias) and compare with the naive float64 reference,
// including that outputs wrote nothing outside their views.
#pragma once

#include <gtest/gtest.h>

#include "support/acl_test_util.h"
#include "support/naive_conv.h"

namespace acltest {

struct TbcCase {
  naive::TbcGeom g;
  Layout layout = Layout::kContiguous;
};

::testing::AssertionResult CheckTbcBackward(const TbcCase& c);
::testing::AssertionResult CheckTbcForward(const TbcCase& c);

}  // namespace acltest
