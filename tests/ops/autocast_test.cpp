// Autocast, op by op: every op of the policy table (ops/autocast.cpp) run inside an
// AutocastGuard of bfloat16 and of float16, in two situations: all inputs float32, and the first
// input already 16-bit (an activation) beside float32 parameters. Each case checks
//   - the output dtype, written here from PyTorch 1.13's torch.cpu.amp.autocast (bfloat16; the
//     same lists apply to float16, as PyTorch 2.x does), except conv_transpose*, which PyTorch 1.13
//     keeps in float32 and we run in the lower precision (ops/autocast.h says why);
//   - the forward value against the float32 op on the same (exactly representable) values;
//   - backward: every leaf's gradient has the leaf's dtype (float32 for the parameters) and the
//     float32 op's gradient value, within a tolerance for the dtype.
// scripts/autocast_policy_pytorch.py prints PyTorch's dtypes for the same ops.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>
#include <string>

#include "ops/ops.h"
#include "tests/ops/ops_test_util.h"

namespace aclgrad {
namespace {

using Op = AutocastOp;
using Inputs = std::vector<Tensor>;

// The output dtype a case expects: the autocast dtype, float32, or Bool (comparisons).
enum class Want { kLow, kF32, kBool };

struct InputSpec {
  Shape shape;
  double lo = -1, hi = 1;
};

struct OpCase {
  Op op;
  std::vector<InputSpec> inputs;
  std::function<Tensor(const Inputs&)> run;
  Want all_float32;     // every input float32
  Want first_is_16bit;  // input 0 in the autocast dtype, the others float32
};

Tensor uniform(const InputSpec& s, uint64_t seed) {
  Generator gen(seed);
  return add(mul(rand(s.shape, Dtype::Float32, &gen), s.hi - s.lo), s.lo);
}

const Tensor& class_targets() {
  static const Tensor t = from_vector(std::vector<int64_t>{0, 4, 2, 1, 3, 4}, {6}, Dtype::Int64);
  return t;
}

std::vector<OpCase> op_cases() {
  const Want L = Want::kLow, F = Want::kF32;
  const InputSpec positive{{3, 4}, 0.5, 1.5};
  std::vector<OpCase> c = {
      {Op::kConv1d,
       {{{2, 3, 9}}, {{4, 3, 3}}, {{4}}},
       [](const Inputs& in) { return conv1d(in[0], in[1], in[2], {.padding = 1}); },
       L,
       L},
      {Op::kConv2d,
       {{{2, 3, 6, 6}}, {{4, 3, 3, 3}}, {{4}}},
       [](const Inputs& in) { return conv2d(in[0], in[1], in[2], {.stride = 2, .padding = 1}); },
       L,
       L},
      {Op::kConv3d,
       {{{1, 2, 4, 4, 4}}, {{3, 2, 2, 2, 2}}, {{3}}},
       [](const Inputs& in) { return conv3d(in[0], in[1], in[2]); },
       L,
       L},
      {Op::kConvTranspose1d,
       {{{2, 3, 5}}, {{3, 4, 3}}, {{4}}},
       [](const Inputs& in) { return conv_transpose1d(in[0], in[1], in[2], {.stride = 2}); },
       L,
       L},
      {Op::kConvTranspose2d,
       {{{1, 3, 4, 4}}, {{3, 2, 3, 3}}, {{2}}},
       [](const Inputs& in) { return conv_transpose2d(in[0], in[1], in[2], {.stride = 2}); },
       L,
       L},
      {Op::kConvTranspose3d,
       {{{1, 2, 3, 3, 3}}, {{2, 3, 2, 2, 2}}, {{3}}},
       [](const Inputs& in) { return conv_transpose3d(in[0], in[1], in[2]); },
       L,
       L},
      {Op::kConvTbc,
       {{{5, 2, 3}}, {{3, 3, 4}}, {{4}}},
       [](const Inputs& in) { return conv_tbc(in[0], in[1], in[2], 1); },
       L,
       L},
      {Op::kLinear,
       {{{4, 6}}, {{5, 6}}, {{5}}},
       [](const Inputs& in) { return linear(in[0], in[1], in[2]); },
       L,
       L},
      {Op::kMatmul,
       {{{2, 3, 4}}, {{4, 5}}},
       [](const Inputs& in) { return matmul(in[0], in[1]); },
       L,
       L},
      {Op::kCrossEntropy,
       {{{6, 5}}},
       [](const Inputs& in) { return cross_entropy(in[0], class_targets()); },
       F,
       F},
      {Op::kNllLoss,
       {{{6, 5}}},
       [](const Inputs& in) { return nll_loss(in[0], class_targets()); },
       F,
       F},
      {Op::kMseLoss,
       {{{3, 4}}, {{3, 4}}},
       [](const Inputs& in) { return mse_loss(in[0], in[1]); },
       F,
       F},
      {Op::kBinaryCrossEntropyWithLogits,
       {{{3, 4}}, {{3, 4}, 0, 1}, {{4}, 0.5, 2}},
       [](const Inputs& in) {
         return binary_cross_entropy_with_logits(in[0], in[1], {.pos_weight = in[2]});
       },
       F,
       F},
      {Op::kMaxPool3d,
       {{{1, 2, 4, 4, 4}}},
       [](const Inputs& in) { return max_pool3d(in[0], {2}); },
       F,
       F},
      {Op::kAvgPool3d,
       {{{1, 2, 4, 4, 4}}},
       [](const Inputs& in) { return avg_pool3d(in[0], {2}); },
       F,
       F},
      {Op::kPadReflect,
       {{{2, 3, 5}}},
       [](const Inputs& in) {
         return pad(in[0], {2, 1}, "reflect");
       },
       F,
       F},
      {Op::kPadReplicate,
       {{{1, 2, 4, 4}}},
       [](const Inputs& in) {
         return pad(in[0], {1, 1, 1, 1}, "replicate");
       },
       F,
       F},
      {Op::kAdd, {{{3, 4}}, {{4}}}, [](const Inputs& in) { return add(in[0], in[1]); }, F, F},
      {Op::kSub, {{{3, 4}}, {{4}}}, [](const Inputs& in) { return sub(in[0], in[1]); }, F, F},
      {Op::kMul, {{{3, 4}}, {{4}}}, [](const Inputs& in) { return mul(in[0], in[1]); }, F, F},
      {Op::kDiv,
       {{{3, 4}}, {{4}, 0.5, 1.5}},
       [](const Inputs& in) { return div(in[0], in[1]); },
       F,
       F},
      {Op::kPow, {positive, {{3, 4}}}, [](const Inputs& in) { return pow(in[0], in[1]); }, F, F},
      {Op::kEq,
       {{{3, 4}}, {{3, 4}}},
       [](const Inputs& in) { return eq(in[0], in[1]); },
       Want::kBool,
       Want::kBool},
      {Op::kGt,
       {{{3, 4}}, {{3, 4}}},
       [](const Inputs& in) { return gt(in[0], in[1]); },
       Want::kBool,
       Want::kBool},
      {Op::kLt,
       {{{3, 4}}, {{3, 4}}},
       [](const Inputs& in) { return lt(in[0], in[1]); },
       Want::kBool,
       Want::kBool},
      {Op::kCat,
       {{{2, 3}}, {{4, 3}}},
       [](const Inputs& in) {
         return cat({in[0], in[1]}, 0);
       },
       F,
       F},
      {Op::kStack,
       {{{2, 3}}, {{2, 3}}},
       [](const Inputs& in) {
         return stack({in[0], in[1]}, 1);
       },
       F,
       F},
      // Keep: the input's dtype (float32 parameters beside a 16-bit batch_norm input).
      {Op::kBatchNorm,
       {{{4, 3, 2, 2}}, {{3}, 0.5, 1.5}, {{3}}},
       [](const Inputs& in) { return batch_norm(in[0], {}, {}, in[1], in[2], true); },
       F,
       L},
      {Op::kSoftmax, {{{3, 5}}}, [](const Inputs& in) { return softmax(in[0], 1); }, F, L},
      {Op::kLogSoftmax, {{{3, 5}}}, [](const Inputs& in) { return log_softmax(in[0], 1); }, F, L},
      {Op::kExp, {{{3, 4}}}, [](const Inputs& in) { return exp(in[0]); }, F, L},
      {Op::kLog, {positive}, [](const Inputs& in) { return log(in[0]); }, F, L},
      {Op::kSum, {{{3, 4}}}, [](const Inputs& in) { return sum(in[0]); }, F, L},
      {Op::kMean, {{{3, 4}}}, [](const Inputs& in) { return mean(in[0]); }, F, L},
  };
  return c;
}

Dtype dtype_of(Want w, Dtype low) {
  return w == Want::kLow ? low : w == Want::kF32 ? Dtype::Float32 : Dtype::Bool;
}

// Largest |a - b| over the elements, relative to max(1, max |b|).
double relative_error(const Tensor& a, const Tensor& b) {
  const std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
  double err = 0, scale = 1;
  for (size_t i = 0; i < x.size(); ++i) {
    err = std::max(err, std::fabs(x[i] - y[i]));
    scale = std::max(scale, std::fabs(y[i]));
  }
  return err / scale;
}

// bfloat16 keeps 8 significant bits, float16 11: a few roundings of inputs, products and the
// output stay well inside these (a wrong result is off by O(1)).
double tolerance(Dtype low) {
  return low == Dtype::BFloat16 ? 3e-2 : 4e-3;
}

// sum(out * r) in float32, outside autocast: one scalar whose gradient is r.
Tensor weighted_sum(const Tensor& out, const Tensor& r) {
  return sum(mul(cast(out, Dtype::Float32), r));
}

struct Result {
  Tensor out;
  Inputs grads;
};

// Runs c on leaves with the given values (in autocast when low is set) and backpropagates r.
Result run_case(const OpCase& c, const Inputs& values, std::optional<Dtype> low, const Tensor& r) {
  Inputs leaves;
  for (const Tensor& v : values) leaves.push_back(v.clone().requires_grad_());
  Result res;
  if (low) {
    AutocastGuard autocast(*low);
    res.out = c.run(leaves);
  } else {
    res.out = c.run(leaves);
  }
  if (res.out.is_floating_point()) weighted_sum(res.out, r).backward();
  for (const Tensor& l : leaves) res.grads.push_back(l.grad());
  return res;
}

void check_case(const OpCase& c, Dtype low, bool first_is_16bit) {
  const char* name = autocast_rule(c.op).name;
  SCOPED_TRACE(std::string(name) + (first_is_16bit ? ", input 0 " : ", float32 inputs, ") +
               "in autocast " + dtype_name(low));
  Inputs values;
  uint64_t seed = 100;
  for (const InputSpec& s : c.inputs) values.push_back(uniform(s, seed++));
  // Input 0 rounded to the 16-bit dtype; the reference sees the same values in float32.
  if (first_is_16bit) values[0] = values[0].to(low);
  Inputs ref_values;
  for (const Tensor& v : values) ref_values.push_back(v.to(Dtype::Float32));

  const Tensor ref_out = c.run(ref_values);
  const Tensor r = ref_out.is_floating_point() ? uniform({ref_out.sizes()}, 7) : Tensor();
  const Result got = run_case(c, values, low, r);
  const Result ref = run_case(c, ref_values, std::nullopt, r);

  const Want want = first_is_16bit ? c.first_is_16bit : c.all_float32;
  EXPECT_EQ(got.out.dtype(), dtype_of(want, low));
  ASSERT_EQ(got.out.sizes(), ref.out.sizes());
  EXPECT_LE(relative_error(got.out, ref.out), want == Want::kBool ? 0.0 : tolerance(low));
  for (size_t i = 0; i < values.size(); ++i) {
    if (!got.out.is_floating_point()) break;
    SCOPED_TRACE("gradient of input " + std::to_string(i));
    ASSERT_TRUE(got.grads[i].defined());
    EXPECT_EQ(got.grads[i].dtype(), values[i].dtype());
    EXPECT_LE(relative_error(got.grads[i], ref.grads[i]), tolerance(low));
  }
}

class AutocastPolicy : public ::testing::TestWithParam<Dtype> {};

TEST_P(AutocastPolicy, EveryOpWithFloat32InputsHasPyTorchsDtypeValueAndGradients) {
  for (const OpCase& c : op_cases()) check_case(c, GetParam(), false);
}

TEST_P(AutocastPolicy, EveryOpWithA16BitInputBesideFloat32Parameters) {
  for (const OpCase& c : op_cases()) check_case(c, GetParam(), true);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, AutocastPolicy, ::testing::Values(Dtype::BFloat16, Dtype::Float16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(AutocastPolicyTable, EveryRuleHasACaseAndEveryCaseMatchesItsRule) {
  std::set<Op> covered;
  for (const OpCase& c : op_cases()) {
    covered.insert(c.op);
    // The table's policy implies what a float32 input becomes; the cases say it independently.
    const CastPolicy p = autocast_rule(c.op).policy;
    if (c.all_float32 != Want::kBool) {
      EXPECT_EQ(c.all_float32 == Want::kLow, p == CastPolicy::kLowerPrecision)
          << autocast_rule(c.op).name;
    }
  }
  for (const AutocastRule& rule : autocast_rules()) {
    EXPECT_TRUE(covered.count(rule.op)) << rule.name << " has no test case";
  }
}

TEST(AutocastPolicyTable, Float64IsNeverLoweredAndPromotionTakesTheWiderDtype) {
  AutocastGuard autocast(Dtype::BFloat16);
  const Tensor x = randn({2, 3}, Dtype::Float64), w = randn({4, 3}, Dtype::Float64);
  EXPECT_EQ(linear(x, w).dtype(), Dtype::Float64);
  EXPECT_EQ(mse_loss(x, x).dtype(), Dtype::Float64);
  // Promotion takes the widest: float64 beside float32; float16 beside bfloat16 gives float32
  // (neither holds the other), as torch.promote_types.
  EXPECT_EQ(add(x, randn({3})).dtype(), Dtype::Float64);
  const Tensor h = randn({3}).to(Dtype::Float16), b = randn({3}).to(Dtype::BFloat16);
  EXPECT_EQ(mul(h, b).dtype(), Dtype::Float32);
  EXPECT_EQ(cat({h, b}).dtype(), Dtype::Float32);
  EXPECT_EQ(add(h, h).dtype(), Dtype::Float16);
}

TEST(AutocastPolicyTable, Reflect3dPadKeepsTheInputDtypeAsPyTorch) {
  AutocastGuard autocast(Dtype::BFloat16);
  const Tensor x = randn({1, 2, 3, 3, 3}).to(Dtype::BFloat16);
  EXPECT_EQ(pad(x, {1, 1, 1, 1, 1, 1}, "reflect").dtype(), Dtype::BFloat16);
  EXPECT_EQ(pad(x, {1, 1, 1, 1, 1, 1}, "replicate").dtype(), Dtype::Float32);
  EXPECT_EQ(pad(x, {1, 1}, "constant").dtype(), Dtype::BFloat16);
}

}  // namespace
}  // namespace aclgrad
