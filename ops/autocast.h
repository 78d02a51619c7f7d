// The autocast policy: in which dtype each op runs inside an AutocastGuard
// (autograd/autocast_mode.h). One table, in autocast.cpp; an op's entry point consults it:
//
//   Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
//     if (autocast::is_active()) {
//       const autocast::OpInputs in(AutocastOp::kLinear, {x, weight, bias});
//       return linear(in[0], in[1], in[2]);   // autocast off inside: nothing is cast twice
//     }
//     ...
//
// The policy is PyTorch's CPU autocast (torch.cpu.amp.autocast, 1.13; scripts/
// autocast_policy_pytorch.py prints PyTorch's output dtypes next to this table), with one
// change: transposed convolutions run in the lower precision like the others, as the issue asks
// and as PyTorch 2.x does (1.13 keeps them in float32). Ops not in the table (relu, softmax,
// sum, exp, max_pool2d, ...) run in their input's dtype, as in PyTorch; their 16-bit kernels
// compute in float32 and round once.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <vector>

#include "../autograd/autocast_mode.h"
#include "../tensor/tensor.h"

namespace aclgrad {

/// What an op does with its floating inputs inside autocast. Float64 inputs are never cast by
/// kLowerPrecision or kFloat32 (PyTorch's rule); undefined and non-floating inputs never are.
enum class CastPolicy : uint8_t {
  kLowerPrecision,  // float32 / other 16-bit inputs to the autocast dtype
  kFloat32,         // 16-bit inputs to float32
  kPromote,         // every floating input to the widest floating dtype among them
  kKeep,            // nothing cast: runs in its input's dtype (listed for documentation)
};

/// The ops the table names.
enum class AutocastOp : uint8_t {
  kConv1d,
  kConv2d,
  kConv3d,
  kConvTranspose1d,
  kConvTranspose2d,
  kConvTranspose3d,
  kConvTbc,
  kLinear,
  kMatmul,
  kCrossEntropy,
  kNllLoss,
  kMseLoss,
  kBinaryCrossEntropyWithLogits,
  kMaxPool3d,
  kAvgPool3d,
  kPadReflect,
  kPadReplicate,
  kAdd,
  kSub,
  kMul,
  kDiv,
  kPow,
  kEq,
  kGt,
  kLt,
  kCat,
  kStack,
  kBatchNorm,
  kSoftmax,
  kLogSoftmax,
  kExp,
  kLog,
  kSum,
  kMean,
};

struct AutocastRule {
  AutocastOp op;
  const char* name;  // PyTorch's name of the op ("conv2d", "cross_entropy", ...)
  CastPolicy policy;
};

/// The whole table, one rule per AutocastOp, in enum order.
std::span<const AutocastRule> autocast_rules();
const AutocastRule& autocast_rule(AutocastOp op);

namespace autocast {

/// True when autocast is on for this thread (and not suspended by an op already casting).
inline bool is_active() {
  return AutocastMode::is_enabled();
}

/// An op's inputs cast by its policy (recorded casts, so gradients flow back in each input's own
/// dtype; lower-precision casts of float32 parameters are cached for the autocast scope), and
/// autocast suspended while this object lives, for the op's body.
class OpInputs {
 public:
  OpInputs(AutocastOp op, std::initializer_list<Tensor> inputs);
  OpInputs(AutocastOp op, std::span<const Tensor> inputs);
  const Tensor& operator[](size_t i) const { return cast_[i]; }
  const std::vector<Tensor>& all() const { return cast_; }

 private:
  std::vector<Tensor> cast_;
  autocast_detail::Suspend suspend_;  // declared last: the casts above run with autocast on
};

}  // namespace autocast

}  // namespace aclgrad
