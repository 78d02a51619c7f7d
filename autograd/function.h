// How to write a differentiable op
// ================================
// An op is a plain function: compute the forward with a kernel (no autograd involved), then, if
// make_node() returns a node, save what the backward needs and attach the node to the outputs.
// The node's apply() turns dL/d(outputs) into dL/d(inputs). Write it with differentiable ops
// (mul, sum_to, ...), not raw kernels, and double backward (create_graph=true) works for free;
// if it must use raw kernels, pass supports_double_backward=false to the Node constructor.
//
//   // y = a * b (broadcasting). ops/elementwise.cpp has the real thing.
//   struct MulBackward final : autograd::Node {
//     MulBackward() : Node("MulBackward") {}
//     size_t a = 0, b = 0;                                   // slots of the saved tensors
//     autograd::tensor_list apply(autograd::tensor_list&& grads) override {
//       const Tensor& g = grads[0];                          // dL/dy, always defined here
//       return {needs_grad(0) ? sum_to(mul(g, saved(b)), input_sizes(0)) : Tensor(),
//               needs_grad(1) ? sum_to(mul(g, saved(a)), input_sizes(1)) : Tensor()};
//     }
//   };
//   Tensor mul(const Tensor& a, const Tensor& b) {
//     Tensor out = mul_kernel(a, b);                        // forward: any kernel
//     if (auto node = autograd::make_node<MulBackward>({a, b})) {   // null unless recording
//       if (node->needs_grad(0)) node->b = node->save(b);   // save only what will be used
//       if (node->needs_grad(1)) node->a = node->save(a);
//       node->set_history(out);                             // out.grad_fn() == node
//     }
//     return out;
//   }
//
// Rules the engine relies on (it checks them and names the node when one is broken):
//   - apply() returns exactly one gradient per forward input, with that input's shape and dtype
//     (input_meta(i)); undefined where !needs_grad(i). Broadcast inputs: reduce with sum_to().
//   - Save tensors with save()/saved() (version-checked, released after backward, no cycles);
//     save an output only after set_history(out). Plain members are fine for shapes/scalars and
//     for tensors without history (e.g. int64 indices); drop big ones in release_state().
//   - set_history() wants a fresh output tensor; to return an input unchanged, return
//     input.detach() (a new tensor over the same data) and set history on that.
//   - Tensor's own view methods (view, reshape, t, expand, ...) are NOT recorded: the result has
//     no history. Use them in kernels or on tensors without history; in a backward formula that
//     must stay differentiable use recorded ops (broadcast_to, sum_to, ...).
//   - Several outputs: call set_history() on each, in order; apply() then gets one gradient per
//     output, some possibly undefined (treat undefined as zeros). Non-floating outputs (indices)
//     get no history.
#pragma once

#include <initializer_list>
#include <memory>
#include <span>
#include <utility>

#include "../autograd/error.h"
#include "../autograd/grad_mode.h"
#include "../autograd/node.h"

namespace aclgrad::autograd {

/// True when an op on these inputs must be recorded: grad mode is on and some input requires
/// grad. (make_node() already checks this.)
bool any_requires_grad(std::span<const Tensor> inputs);
inline bool any_requires_grad(std::initializer_list<Tensor> inputs) {
  return any_requires_grad(std::span<const Tensor>(inputs.begin(), inputs.size()));
}

/// A buffer for a gradient computed elementwise from g (same shape and dtype): g itself when no
/// one else can see it (this handle is the only owner of g and of its storage, which Storage
/// allocated; g is contiguous, does not require grad, has no autograd state, and grad mode is
/// off), else a new uninitialised tensor. Backward kernels whose element i reads only element i
/// of g may write their result into g's buffer this way and spare the memory traffic of a new
/// one (relu's, batch_norm's). This rests on two rules: the engine runs one node at a time, and
/// no code keeps a raw pointer into a gradient once its last handle is gone.
Tensor gradient_buffer(const Tensor& g);

/// A new node T(args...) wired to the given forward inputs (one edge and one TensorMeta per
/// input, in order; undefined tensors allowed for optional inputs), or nullptr when nothing
/// needs recording.
template <typename T, typename... Args>
std::shared_ptr<T> make_node(std::span<const Tensor> inputs, Args&&... args) {
  if (!any_requires_grad(inputs)) return nullptr;
  auto node = std::make_shared<T>(std::forward<Args>(args)...);
  node->set_next_edges(inputs);
  return node;
}
template <typename T, typename... Args>
std::shared_ptr<T> make_node(std::initializer_list<Tensor> inputs, Args&&... args) {
  return make_node<T>(std::span<const Tensor>(inputs.begin(), inputs.size()),
                      std::forward<Args>(args)...);
}

}  // namespace aclgrad::autograd
