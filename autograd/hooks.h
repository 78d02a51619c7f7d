// Hooks on leaves: code that runs during backward as soon as a leaf's .grad is final for this
// backward (torch.Tensor.register_post_accumulate_grad_hook). DistributedDataParallel uses them
// to start all-reducing a parameter's gradient while the rest of backward still runs.
#pragma once

#include <cstdint>
#include <functional>

#include "../tensor/tensor.h"

namespace aclgrad::autograd {

/// Called with the leaf itself after backward() has accumulated a gradient into leaf.grad().
/// It runs on the thread running backward, inside it: keep it short, and do not start another
/// backward from it. An exception it throws propagates out of backward().
using PostAccumulateGradHook = std::function<void(const Tensor& leaf)>;

/// Registers hook on leaf (a leaf tensor that requires grad; AutogradError otherwise) and returns
/// a handle for remove_post_accumulate_grad_hook. Hooks run in registration order, once per
/// backward() that reaches the leaf (not for autograd::grad, which leaves .grad alone).
uint64_t register_post_accumulate_grad_hook(const Tensor& leaf, PostAccumulateGradHook hook);

/// Removes the hook with this handle from leaf; returns false if it has none (already removed).
bool remove_post_accumulate_grad_hook(const Tensor& leaf, uint64_t handle);

}  // namespace aclgrad::autograd
