// Differentiable activation functions (PyTorch semantics and defaults).
//
// Double backward: relu, leaky_relu, sigmoid and tanh write their backward with differentiable
// ops (any order). gelu and softplus use a fused backward kernel that is itself differentiable
// once, so second derivatives work and a third-order create_graph is an AutogradError.
#pragma once

#include <string_view>

#include "../tensor/tensor.h"

namespace aclgrad {

/// max(x, 0); NaN stays NaN. The gradient is 0 where the output is <= 0.
Tensor relu(const Tensor& x);
/// x for x > 0, negative_slope * x otherwise.
Tensor leaky_relu(const Tensor& x, double negative_slope = 0.01);
/// 1 / (1 + exp(-x)), computed without overflow for large |x|.
Tensor sigmoid(const Tensor& x);
Tensor tanh(const Tensor& x);
/// x * Phi(x) with the exact erf form (approximate = "none"), or PyTorch's tanh approximation
/// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (approximate = "tanh").
Tensor gelu(const Tensor& x, std::string_view approximate = "none");
/// log(1 + exp(beta x)) / beta, and x itself where beta x > threshold (PyTorch's softplus).
Tensor softplus(const Tensor& x, double beta = 1.0, double threshold = 20.0);

}  // namespace aclgrad
