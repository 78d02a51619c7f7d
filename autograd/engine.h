// Running the graph backwards: autograd::backward (accumulates into leaves' .grad) and
// autograd::grad (returns the gradients instead), as in torch::autograd.
//
// The engine counts, for every node reachable from the outputs, how many edges lead into it,
// then runs nodes from a ready stack as their counts reach zero, summing the gradients that
// arrive for the same output. It never recurses, so graphs of any depth work. Every gradient a
// node returns is checked against the shape and dtype recorded for that input.
#pragma once

#include <optional>
#include <vector>

#include "../autograd/node.h"

namespace aclgrad::autograd {

/// Computes the gradients of `tensors` w.r.t. the graph leaves and accumulates them into each
/// leaf's .grad (and into non-leaves that called retain_grad()). grad_tensors[i] is dL/d
/// tensors[i]; it may be omitted (empty list or undefined entry) for one-element tensors and
/// means 1. retain_graph defaults to create_graph; without it, the graph's saved tensors are
/// released and a second backward through it is an AutogradError. create_graph records the
/// backward itself so the resulting gradients can be differentiated again.
void backward(const tensor_list& tensors, const tensor_list& grad_tensors = {},
              std::optional<bool> retain_graph = std::nullopt, bool create_graph = false);

/// Returns d(sum_i <grad_outputs[i], outputs[i]>)/d inputs[j] for every input, without touching
/// any .grad. An input the outputs do not depend on is an AutogradError unless allow_unused, in
/// which case its gradient is an undefined tensor. Defaults as in backward().
tensor_list grad(const tensor_list& outputs, const tensor_list& inputs,
                 const tensor_list& grad_outputs = {},
                 std::optional<bool> retain_graph = std::nullopt, bool create_graph = false,
                 bool allow_unused = false);

}  // namespace aclgrad::autograd
