// The autocast policy table and the casts at op entry (ops/autocast.h).
#include "ops/autocast.h"

#include <array>

#include "autograd/grad_mode.h"
#include "ops/cast.h"

namespace aclgrad {

namespace {

using P = CastPolicy;
using Op = AutocastOp;

// PyTorch 1.13's CPU lists (aten/src/ATen/autocast_mode.cpp), restricted to the ops we have;
// conv_transpose* moved to the lower precision (see the header).
constexpr std::array kRules{
    // Lower precision: the matrix-product ops, where 16-bit is fast and fp32 accumulation keeps
    // it accurate.
    AutocastRule{Op::kConv1d, "conv1d", P::kLowerPrecision},
    AutocastRule{Op::kConv2d, "conv2d", P::kLowerPrecision},
    AutocastRule{Op::kConv3d, "conv3d", P::kLowerPrecision},
    AutocastRule{Op::kConvTranspose1d, "conv_transpose1d", P::kLowerPrecision},
    AutocastRule{Op::kConvTranspose2d, "conv_transpose2d", P::kLowerPrecision},
    AutocastRule{Op::kConvTranspose3d, "conv_transpose3d", P::kLowerPrecision},
    AutocastRule{Op::kConvTbc, "conv_tbc", P::kLowerPrecision},
    AutocastRule{Op::kLinear, "linear", P::kLowerPrecision},
    AutocastRule{Op::kMatmul, "matmul", P::kLowerPrecision},
    // Float32: losses (a sum of many small terms), and the ops PyTorch's CPU kernels lacked in
    // 16-bit.
    AutocastRule{Op::kCrossEntropy, "cross_entropy", P::kFloat32},
    AutocastRule{Op::kNllLoss, "nll_loss", P::kFloat32},
    AutocastRule{Op::kMseLoss, "mse_loss", P::kFloat32},
    AutocastRule{Op::kBinaryCrossEntropyWithLogits, "binary_cross_entropy_with_logits",
                 P::kFloat32},
    AutocastRule{Op::kMaxPool3d, "max_pool3d", P::kFloat32},
    AutocastRule{Op::kAvgPool3d, "avg_pool3d", P::kFloat32},
    AutocastRule{Op::kPadReflect, "pad_reflect", P::kFloat32},
    AutocastRule{Op::kPadReplicate, "pad_replicate", P::kFloat32},
    // Promote: ops of several tensors that would otherwise refuse mixed dtypes.
    AutocastRule{Op::kAdd, "add", P::kPromote},
    AutocastRule{Op::kSub, "sub", P::kPromote},
    AutocastRule{Op::kMul, "mul", P::kPromote},
    AutocastRule{Op::kDiv, "div", P::kPromote},
    AutocastRule{Op::kPow, "pow", P::kPromote},
    AutocastRule{Op::kEq, "eq", P::kPromote},
    AutocastRule{Op::kGt, "gt", P::kPromote},
    AutocastRule{Op::kLt, "lt", P::kPromote},
    AutocastRule{Op::kCat, "cat", P::kPromote},
    AutocastRule{Op::kStack, "stack", P::kPromote},
    // Keep: run in the input's dtype (float32 inside the 16-bit kernels). batch_norm takes
    // 16-bit input with float32 weight, bias and running statistics.
    AutocastRule{Op::kBatchNorm, "batch_norm", P::kKeep},
    AutocastRule{Op::kSoftmax, "softmax", P::kKeep},
    AutocastRule{Op::kLogSoftmax, "log_softmax", P::kKeep},
    AutocastRule{Op::kExp, "exp", P::kKeep},
    AutocastRule{Op::kLog, "log", P::kKeep},
    AutocastRule{Op::kSum, "sum", P::kKeep},
    AutocastRule{Op::kMean, "mean", P::kKeep},
};

constexpr bool rules_in_enum_order() {
  for (size_t i = 0; i < kRules.size(); ++i)
    if (static_cast<size_t>(kRules[i].op) != i) return false;
  return true;
}
static_assert(rules_in_enum_order(), "kRules must list every AutocastOp once, in enum order");

bool is_16bit(Dtype d) {
  return d == Dtype::Float16 || d == Dtype::BFloat16;
}

// Rank for promotion: any 16-bit < float32 < float64; float16 with bfloat16 gives float32.
Dtype promote(Dtype a, Dtype b) {
  if (a == b) return a;
  if (a == Dtype::Float64 || b == Dtype::Float64) return Dtype::Float64;
  return Dtype::Float32;
}

// source cast to dtype; the lower-precision casts of float32 parameters (leaves that require
// grad, recorded) are cached for the autocast scope, like PyTorch's.
Tensor cast_input(const Tensor& source, Dtype dtype) {
  const bool cacheable = is_16bit(dtype) && source.dtype() == Dtype::Float32 &&
                         source.requires_grad() && source.is_leaf() && GradMode::is_enabled();
  if (!cacheable) return cast(source, dtype);
  Tensor cached = autocast_detail::find_cached_cast(source, dtype);
  if (cached.defined()) return cached;
  Tensor out = cast(source, dtype);
  autocast_detail::store_cached_cast(source, out);
  return out;
}

bool castable(const Tensor& t) {
  return t.defined() && t.is_floating_point();
}

// The dtype op's policy casts its floating inputs to (not kKeep, which casts nothing).
Dtype target_dtype(CastPolicy policy, std::span<const Tensor> inputs) {
  if (policy == P::kLowerPrecision) return AutocastMode::dtype();
  if (policy == P::kFloat32) return Dtype::Float32;
  bool any = false;  // kPromote: the widest floating input
  Dtype widest = Dtype::Float32;
  for (const Tensor& t : inputs) {
    if (!castable(t)) continue;
    widest = any ? promote(widest, t.dtype()) : t.dtype();
    any = true;
  }
  return widest;
}

std::vector<Tensor> cast_inputs(AutocastOp op, std::span<const Tensor> inputs) {
  const CastPolicy policy = autocast_rule(op).policy;
  std::vector<Tensor> out(inputs.begin(), inputs.end());
  if (policy == P::kKeep) return out;
  const Dtype target = target_dtype(policy, inputs);
  for (Tensor& t : out) {
    if (!castable(t) || t.dtype() == target) continue;
    if (policy != P::kPromote && t.dtype() == Dtype::Float64) continue;
    t = cast_input(t, target);
  }
  return out;
}

}  // namespace

std::span<const AutocastRule> autocast_rules() {
  return kRules;
}

const AutocastRule& autocast_rule(AutocastOp op) {
  return kRules.at(static_cast<size_t>(op));
}

namespace autocast {

OpInputs::OpInputs(AutocastOp op, std::initializer_list<Tensor> inputs)
    : OpInputs(op, std::span<const Tensor>(inputs.begin(), inputs.size())) {}

OpInputs::OpInputs(AutocastOp op, std::span<const Tensor> inputs)
    : cast_(cast_inputs(op, inputs)) {}

}  // namespace autocast

}  // namespace aclgrad
