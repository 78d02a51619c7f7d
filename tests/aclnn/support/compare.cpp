#include "support/compare.h"

#include <cmath>
#include <sstream>

#include "support/acl_test_util.h"

namespace acltest {

double Tolerance::At(double scale) const {
  double t = rel * scale;
  if (out_dtype == ACL_FLOAT16 || out_dtype == ACL_BF16) t += UlpOf(scale, out_dtype);
  return t;
}

Tolerance ToleranceFor(aclDataType out_dtype, aclDataType compute) {
  return Tolerance{compute == ACL_DOUBLE && out_dtype == ACL_DOUBLE ? 1e-10 : 1e-5, out_dtype};
}

std::string IndexStr(int64_t linear, const std::vector<int64_t>& shape) {
  std::vector<int64_t> idx(shape.size(), 0);
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] > 0) {
      idx[d] = linear % shape[d];
      linear /= shape[d];
    }
  }
  return ShapeStr(idx);
}

::testing::AssertionResult CompareToReference(const std::string& what,
                                              const std::vector<double>& got,
                                              const naive::Result& want,
                                              const std::vector<int64_t>& shape,
                                              const Tolerance& tol) {
  if (got.size() != want.value.size()) {
    return ::testing::AssertionFailure()
           << what << ": got " << got.size() << " elements, reference has " << want.value.size();
  }
  int64_t bad = 0, worst = -1;
  double worst_ratio = 0;  // |diff| / allowed (inf for a non-finite value or a zero allowance)
  for (size_t i = 0; i < got.size(); ++i) {
    double w = RoundToDtype(want.value[i], tol.out_dtype);
    double diff = std::fabs(got[i] - w);
    double allowed = tol.At(want.scale[i]);
    if (std::isfinite(diff) && diff <= allowed) continue;
    ++bad;
    double ratio = std::isfinite(diff) && allowed > 0 ? diff / allowed : INFINITY;
    if (worst < 0 || ratio > worst_ratio) worst = static_cast<int64_t>(i), worst_ratio = ratio;
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  const size_t i = static_cast<size_t>(worst);
  std::ostringstream os;
  os.precision(10);
  double w = RoundToDtype(want.value[i], tol.out_dtype);
  os << what << " " << ShapeStr(shape) << ": " << bad << " of " << got.size()
     << " elements out of tolerance; worst at " << IndexStr(worst, shape) << ": got " << got[i]
     << ", want " << w << " (unrounded " << want.value[i] << "), |diff| " << std::fabs(got[i] - w)
     << " > allowed " << tol.At(want.scale[i]) << " (scale " << want.scale[i] << ", "
     << DtypeName(tol.out_dtype) << ")";
  return ::testing::AssertionFailure() << os.str();
}

}  // namespace acltest
