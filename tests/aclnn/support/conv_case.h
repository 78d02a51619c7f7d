// One convolution test case (geometry + dtypes + layout + outputMask + cubeMathType) and the
// checks that run it through aclnnConvolutionBackward / aclnnConvolution and compare with the
// naive float64 reference. Shared by the sweep tests.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "acl/acl_base.h"
#include "support/acl_test_util.h"
#include "support/naive_conv.h"

namespace acltest {

struct ConvCase {
  naive::ConvGeom geom;
  bool four_pad = false;  // 2d: pass padding as [top, bottom, left, right] even if symmetric
  aclDataType x_dtype = ACL_FLOAT, w_dtype = ACL_FLOAT, gy_dtype = ACL_FLOAT;
  Layout layout = Layout::kContiguous;  // every input AND output (kExpanded: outputs kPadded)
  std::array<bool, 3> mask{true, true, true};
  bool null_masked = false;  // pass nullptr (rather than a sentinel tensor) for a masked gradBias
  int cube = 0;              // cubeMathType
  bool forward_bias = true;  // aclnnConvolution with a bias tensor (else bias = nullptr)
  uint64_t seed = 1;
  std::string label;  // short geometry label, e.g. "dw3x3s2"
  // Applied to the seeded operand values (row-major gy, x, w) before they are written, e.g. to
  // plant NaN or Inf; the checks then see the edited values.
  std::function<void(std::vector<double>& gy, std::vector<double>& x, std::vector<double>& w)>
      edit_values;

  // The dtype the products are computed in: promotion of gy/x/w (f16+f32 -> f32, bf16+f16 -> f32).
  aclDataType compute_dtype() const;
  // All parameters, for failure messages.
  std::string Describe() const;
  // A GoogleTest-safe name ([A-Za-z0-9_]) saying the same more tersely.
  std::string Name() const;
};
// GoogleTest prints a failing parameter with this.
void PrintTo(const ConvCase& c, std::ostream* os);

// `base` with `edit` applied to a copy of each case (e.g. to set a dtype or a layout).
template <class Edit>
std::vector<ConvCase> Variants(const std::vector<ConvCase>& base, Edit edit) {
  std::vector<ConvCase> out;
  for (size_t i = 0; i < base.size(); ++i) {
    ConvCase c = base[i];
    edit(c, i);
    out.push_back(std::move(c));
  }
  return out;
}

// The padding list handed to the API: dim-2 entries when symmetric (and !four_pad), else the 2d
// form [top, bottom, left, right].
std::vector<int64_t> ApiPadding(const ConvCase& c);

// Runs aclnnConvolutionBackward with fresh seeded data and checks every requested output against
// the reference (on operands rounded per cubeMathType), that requested outputs did not write
// outside their view, and that masked-out outputs were not touched at all.
::testing::AssertionResult CheckConvBackward(const ConvCase& c);

// Runs aclnnConvolutionBackward on the case's seeded (and edited) values; returns the operand
// values as written and the gradients read back (empty when masked out or when the call failed).
struct BackwardValues {
  CallResult result;
  std::vector<double> gy, x, w, grad_input, grad_weight, grad_bias;
};
BackwardValues RunConvBackward(const ConvCase& c);

// Runs aclnnConvolution (with a bias unless !forward_bias) on the same kind of data and checks
// the output.
::testing::AssertionResult CheckConvForward(const ConvCase& c);

// Runs aclnnConvolutionBackward twice on identical fresh data and checks the three gradients are
// bitwise identical (the engine promises a deterministic reduction order).
::testing::AssertionResult CheckConvBackwardDeterministic(const ConvCase& c);

// EXPECTs CheckConvBackward (and CheckConvForward when `forward`) for every case; each failure
// message names its case.
void ExpectAllMatch(const std::vector<ConvCase>& cases, bool forward);

// Convenience constructors for geometries: every spatial vector has geom.spatial() entries.
naive::ConvGeom MakeGeom(std::vector<int64_t> input, std::vector<int64_t> weight,
                         std::vector<int64_t> stride, std::vector<int64_t> pad,
                         std::vector<int64_t> dilation, int64_t groups, bool transposed = false,
                         std::vector<int64_t> output_padding = {});
// 2d with asymmetric padding [top, bottom, left, right].
naive::ConvGeom MakeGeom2dAsym(std::vector<int64_t> input, std::vector<int64_t> weight,
                               std::vector<int64_t> stride, std::array<int64_t, 4> pad,
                               std::vector<int64_t> dilation, int64_t groups,
                               bool transposed = false, std::vector<int64_t> output_padding = {});

// A case for `geom` with defaults (FLOAT, contiguous, all outputs, KEEP_DTYPE).
ConvCase MakeCase(const naive::ConvGeom& geom, std::string label, uint64_t seed);

// Geometry sets of the sweeps.
// The full cross product rank {1,2,3} x transposed x stride {1,2,3} x padding {0, 1, per-dim
// mixed, 2d asymmetric} x dilation {1,2} x groups {1, 2, depthwise, depthwise x2} x output padding
// (transposed: 0 and stride-1) on small odd sizes.
std::vector<ConvCase> GeometricCrossProduct();
// ~30 representative geometries in the spirit of PyTorch's conv tests: odd sizes, kernel larger
// than stride, 1x1 kernels, size-1 dims, kernel == input, batch 1 and 3, odd channel counts.
std::vector<ConvCase> RepresentativeCases();
// A few larger problems (thousands of terms per reduction, long rows, many channels) so that
// tiling, chunking and per-thread partial sums inside the operator are exercised.
std::vector<ConvCase> LargeCases();
// Empty tensors the spec allows: N = 0 (regular and transposed), C_in = 0 (regular).
std::vector<ConvCase> EmptyCases();

}  // namespace acltest
