// NaN and Inf through aclnnConvolutionBackward, on every registered algorithm (forced with
// ACLNN_CPU_CONV_ALGO) and on the planner's own choice. As in PyTorch (IEEE arithmetic on the
// defining sums): an output whose terms include a NaN is NaN, one whose terms include +Inf (and
// no -Inf or NaN) is +Inf, and every other output is finite and correct. So nothing is zeroed,
// no NaN leaks into an output the special value does not reach (e.g. through the zero lanes of a
// packed tile), and finite inputs whose sum overflows a 16-bit output give Inf, never NaN.
// Where a special value meets explicit zero padding, an algorithm that pads (im2col, the flipped
// data gradient) computes 0 * Inf or 0 * NaN = NaN at outputs whose defining sum lacks that term,
// as PyTorch's own im2col path does; the cases say where they allow that (`pad_nan_in`).
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "aclnn/aclnn_cpu_conv.h"
#include "support/conv_case.h"

namespace {

using acltest::ConvCase;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

enum class Kind { kFinite, kNaN, kPosInf, kNegInf };

Kind KindOf(double v) {
  if (std::isnan(v)) return Kind::kNaN;
  if (std::isinf(v)) return v > 0 ? Kind::kPosInf : Kind::kNegInf;
  return Kind::kFinite;
}

const char* KindName(Kind k) {
  static const char* names[] = {"finite", "NaN", "+Inf", "-Inf"};
  return names[static_cast<int>(k)];
}

// Every element of `got` has the reference's kind; finite ones are within rel_tol of its scale.
// `out_round` rounds the float64 reference to the output dtype (overflowing to Inf as the output
// conversion does).
// With `nan_may_replace_finite`, a finite reference value may come out as NaN instead (the
// padding case above); a special one must still match.
::testing::AssertionResult SameKindsAndValues(const char* name, const std::vector<double>& got,
                                              const naive::Result& ref, double rel_tol,
                                              double (*out_round)(double),
                                              bool nan_may_replace_finite = false) {
  if (got.size() != ref.value.size())
    return ::testing::AssertionFailure()
           << name << ": " << got.size() << " elements, reference " << ref.value.size();
  int special = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double want = out_round(ref.value[i]);
    const Kind kg = KindOf(got[i]), kw = KindOf(want);
    special += kw != Kind::kFinite;
    if (nan_may_replace_finite && kw == Kind::kFinite && kg == Kind::kNaN) continue;
    if (kg != kw)
      return ::testing::AssertionFailure()
             << name << "[" << i << "] is " << KindName(kg) << " (" << got[i]
             << ") but the defining sum gives " << KindName(kw) << " (" << want << ")";
    if (kw == Kind::kFinite && std::fabs(got[i] - want) > rel_tol * ref.scale[i] + 1e-300)
      return ::testing::AssertionFailure()
             << name << "[" << i << "] = " << got[i] << ", reference " << want;
  }
  return ::testing::AssertionSuccess() << special << " special elements";
}

double Identity(double v) {
  return v;
}

struct SpecialCase {
  std::string label;
  ConvCase conv;
  int min_special;  // the planted value must reach at least this many outputs in all
  // The gradient (if any) in which the planted value meets padding in a padding algorithm.
  std::string pad_nan_in;
};

ConvCase Geometry(std::vector<int64_t> input, std::vector<int64_t> weight, int64_t stride,
                  int64_t pad, aclDataType dtype) {
  const size_t n = input.size() - 2;  // the same stride / pad in every spatial dim, dilation 1
  ConvCase c = acltest::MakeCase(
      acltest::MakeGeom(input, weight, std::vector<int64_t>(n, stride),
                        std::vector<int64_t>(n, pad), std::vector<int64_t>(n, 1), 1),
      "special", 7);
  c.x_dtype = c.w_dtype = c.gy_dtype = dtype;
  return c;
}

std::vector<SpecialCase> Cases() {
  std::vector<SpecialCase> cases;
  // Sizes that reach the blocked kernels (channels in multiples of 8, rows of several tiles).
  ConvCase nan_in_x = Geometry({2, 8, 12, 12}, {16, 8, 3, 3}, 1, 1, ACL_FLOAT);
  nan_in_x.edit_values = [](auto&, auto& x, auto&) { x[5 * 144 + 6 * 12 + 7] = kNaN; };
  cases.push_back({"NaN in input (padded)", nan_in_x, 9 * 16, ""});

  // The flipped data gradient pads gradOutput by k - 1: a NaN tap meets those zeros.
  ConvCase nan_in_w = Geometry({2, 8, 12, 12}, {16, 8, 3, 3}, 1, 0, ACL_FLOAT);
  nan_in_w.edit_values = [](auto&, auto&, auto& w) { w[3 * 72 + 2 * 9 + 4] = kNaN; };
  cases.push_back({"NaN in weight", nan_in_w, 2 * 100, "gradInput"});
  ConvCase nan_in_w1x1 = Geometry({2, 16, 7, 7}, {16, 16, 1, 1}, 1, 0, ACL_FLOAT);
  nan_in_w1x1.edit_values = [](auto&, auto&, auto& w) { w[5 * 16 + 9] = kNaN; };
  cases.push_back({"NaN in weight, 1x1", nan_in_w1x1, 2 * 49, ""});

  ConvCase inf_in_gy = Geometry({2, 8, 12, 12}, {16, 8, 3, 3}, 1, 0, ACL_FLOAT);
  inf_in_gy.edit_values = [](auto& gy, auto&, auto&) { gy[100 + 4 * 10 + 5] = kInf; };
  cases.push_back({"+Inf in gradOutput", inf_in_gy, 1 + 8 * 9, ""});

  ConvCase inf_in_x = Geometry({1, 16, 9, 9}, {16, 16, 1, 1}, 2, 0, ACL_FLOAT);
  inf_in_x.edit_values = [](auto&, auto& x, auto&) { x[3 * 81 + 2 * 9 + 4] = -kInf; };
  cases.push_back({"-Inf in input, strided 1x1", inf_in_x, 16, ""});

  ConvCase nan_3d = Geometry({1, 4, 5, 6, 7}, {8, 4, 2, 3, 3}, 1, 1, ACL_FLOAT);
  nan_3d.edit_values = [](auto& gy, auto&, auto&) { gy[2 * 6 * 7 * 8 + 30] = kNaN; };
  cases.push_back({"NaN in gradOutput, 3d", nan_3d, 1, ""});

  // Finite f16 inputs whose sums overflow the f16 output range: Inf, never NaN.
  ConvCase overflow = Geometry({2, 16, 6, 6}, {16, 16, 3, 3}, 1, 0, ACL_FLOAT16);
  overflow.edit_values = [](auto& gy, auto& x, auto& w) {
    for (auto* v : {&gy, &x, &w})
      for (double& e : *v) e = e >= 0 ? 60 : 0.5;  // sums reach 60*60*16*... > 65504
  };
  cases.push_back({"f16 overflow to Inf", overflow, 1, ""});

  ConvCase dw = Geometry({1, 16, 10, 10}, {16, 1, 3, 3}, 1, 0, ACL_FLOAT);
  dw.geom.groups = 16;
  dw.edit_values = [](auto&, auto& x, auto&) { x[9 * 100 + 55] = kNaN; };
  cases.push_back({"NaN in input, depthwise", dw, 9, ""});
  return cases;
}

void CheckSpecialCase(const SpecialCase& sc) {
  const ConvCase& c = sc.conv;
  const acltest::BackwardValues v = acltest::RunConvBackward(c);
  ASSERT_TRUE(v.result.ok()) << v.result.Describe();
  const naive::Grads ref = naive::ConvBackward(c.geom, v.gy, v.x, v.w);
  const bool half = c.x_dtype == ACL_FLOAT16;
  const double tol = half ? 1.0 / 512 : 1e-5;
  double (*out_round)(double) = half ? acltest::RoundToF16 : Identity;
  EXPECT_TRUE(SameKindsAndValues("gradInput", v.grad_input, ref.input, tol, out_round,
                                 sc.pad_nan_in == "gradInput"));
  EXPECT_TRUE(SameKindsAndValues("gradWeight", v.grad_weight, ref.weight, tol, out_round,
                                 sc.pad_nan_in == "gradWeight"));
  EXPECT_TRUE(SameKindsAndValues("gradBias", v.grad_bias, ref.bias, tol, out_round));
  int special = 0;  // the case plants what it says (a test that cannot fail is a defect)
  for (const naive::Result* r : {&ref.input, &ref.weight, &ref.bias})
    for (double e : r->value) special += KindOf(out_round(e)) != Kind::kFinite;
  EXPECT_GE(special, sc.min_special);
}

TEST(ConvSpecialValues, PropagateAsTheDefiningSumOnThePlannersChoice) {
  for (const SpecialCase& sc : Cases()) {
    SCOPED_TRACE(sc.label);
    CheckSpecialCase(sc);
  }
}

TEST(ConvSpecialValues, PropagateAsTheDefiningSumOnEveryAlgorithm) {
  for (int a = 0; a < aclnnCpuConvAlgorithmCount(); ++a) {
    const std::string name = aclnnCpuConvAlgorithmName(a);
    setenv("ACLNN_CPU_CONV_ALGO", name.c_str(), 1);
    for (const SpecialCase& sc : Cases()) {
      SCOPED_TRACE(sc.label + " forced " + name);
      CheckSpecialCase(sc);
    }
  }
  unsetenv("ACLNN_CPU_CONV_ALGO");
}

}  // namespace
