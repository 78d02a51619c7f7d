// Comparing an operator's output with the float64 reference, with the tolerance policy of the
// aclnn tests stated in one place (ToleranceFor).
#pragma once

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "acl/acl_base.h"
#include "support/naive_conv.h"

namespace acltest {

// Allowed |got - want| for one element whose terms have sum of magnitudes `scale`:
//   rel * scale + (output dtype is FLOAT16/BF16 ? one ulp of the output dtype at `scale` : 0)
struct Tolerance {
  double rel = 0;
  aclDataType out_dtype = ACL_FLOAT;
  double At(double scale) const;
};

// The policy. `compute` is the dtype the operands are multiplied in after promotion (the
// reference is evaluated on operands already rounded the way cubeMathType says, see
// naive::CubeOperandRounding, so only the accumulation and the final store remain):
//  - DOUBLE: 1e-10 * scale. A double sum of n terms errs by about n * 2^-53 * scale; 1e-10 leaves
//    room for any summation order yet catches a single dropped or float-rounded term.
//  - FLOAT / FLOAT16 / BF16 / HF32 / FP16 operands (fp32 accumulation): 1e-5 * scale. fp32
//    accumulation errs by ~sqrt(n) * 2^-24 * scale (n <= a few hundred here), so 1e-5 fails any
//    wrong or missing term (one term is typically >= 1e-3 * scale) and any operand rounded more
//    coarsely than claimed (HF32 would be ~2.4e-4 relative, fp16 ~4.9e-4, bf16 ~3.9e-3).
//  - FLOAT16 / BF16 outputs: the reference is rounded to the output dtype first, plus one ulp of
//    the output dtype at the scale (the fp32 result may land on the other side of a rounding
//    boundary).
Tolerance ToleranceFor(aclDataType out_dtype, aclDataType compute);

// Compares got (decoded output, row-major over `shape`) with want.value rounded to tol.out_dtype.
// On failure the message says `what`, how many elements fail, and the worst one (index, got,
// want, |diff|, allowed, scale). NaN/inf in got always fails (the output sentinel is a NaN).
::testing::AssertionResult CompareToReference(const std::string& what,
                                              const std::vector<double>& got,
                                              const naive::Result& want,
                                              const std::vector<int64_t>& shape,
                                              const Tolerance& tol);

// Multi-index of a row-major linear index, e.g. "[1,0,3,2]".
std::string IndexStr(int64_t linear, const std::vector<int64_t>& shape);

}  // namespace acltest
