// The autograd state of a tensor (the concrete AutogradMeta behind Tensor::autograd_meta()).
// Internal to autograd/: ops use Tensor's methods and autograd/function.h instead.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "autograd/hooks.h"
#include "autograd/node.h"

namespace aclgrad::autograd {

struct AutogradMetaImpl final : AutogradMeta, std::enable_shared_from_this<AutogradMetaImpl> {
  Tensor grad;
  /// True when `grad` is a buffer autograd allocated and nobody else aliases, so it may be
  /// accumulated into in place.
  bool grad_owned = false;
  std::shared_ptr<Node> grad_fn;  // null for a leaf
  uint32_t output_nr = 0;
  std::weak_ptr<Node> grad_accumulator;  // the leaf's AccumulateGrad while a graph holds it
  bool retains_grad = false;
  /// (handle, hook) run by AccumulateGrad after each accumulation (autograd/hooks.h).
  std::vector<std::pair<uint64_t, PostAccumulateGradHook>> post_accumulate_hooks;
};

/// t's autograd state, or nullptr if it never had any.
inline AutogradMetaImpl* meta_of(const Tensor& t) {
  // Only autograd/ installs AutogradMeta objects, and they are all AutogradMetaImpl.
  return static_cast<AutogradMetaImpl*>(t.autograd_meta());
}

/// t's autograd state, created on first use.
AutogradMetaImpl& ensure_meta(const Tensor& t);

/// meta.grad += g. The first time, stores a dense copy of g (recorded in grad mode, so
/// create_graph keeps the history); later, accumulates in place when the buffer is ours and has
/// no history and grad mode is off, out of place (recorded) otherwise.
void accumulate_into(AutogradMetaImpl& meta, const Tensor& g);

/// a + b for two gradients of equal shape and dtype; recorded (differentiable) in grad mode.
Tensor add_gradients(const Tensor& a, const Tensor& b);

}  // namespace aclgrad::autograd
