// Batch normalisation (torch.nn.functional.batch_norm semantics and defaults).
#pragma once

#include "../tensor/tensor.h"

namespace aclgrad {

/// y = (x - mean) / sqrt(var + eps) * weight + bias, per channel c = dim 1 of x.
///
/// x: [N, C, *] (at least 2 dims; float32 or float64, float16/bfloat16 compute in float32).
/// running_mean, running_var: C elements each, any floating dtype, or undefined tensors (then
/// training must be true). weight, bias: [C] in x's dtype (or float32 beside a float16/bfloat16
/// x: mixed precision, their gradients then float32 too), or undefined (weight 1, bias 0).
///
/// training: mean and the biased variance are taken over N and the spatial dims (M values per
/// channel; M == 1 is an Error, M == 0 gives an empty output), and the running statistics, when
/// given, are updated in place without recording (their version is bumped):
///   running_mean = (1 - momentum) running_mean + momentum mean,
///   running_var  = (1 - momentum) running_var  + momentum var * M / (M - 1)   (unbiased).
/// Otherwise (eval) mean/var are the running statistics, which are left unchanged.
///
/// Gradients for x, weight and bias, with x̂ = (x - mean) / sqrt(var + eps), g = dL/dy:
///   dbias = Σ g, dweight = Σ g x̂ (sums over everything but dim 1);
///   training: dx = weight / sqrt(var + eps) (g - Σg / M - x̂ Σ(g x̂) / M);
///   eval:     dx = weight / sqrt(var + eps) g.
/// A first backward runs one fused kernel; with create_graph the same formulas are built from
/// differentiable ops (statistics recomputed from x), so double backward works to any order.
/// Running statistics never receive gradients (Error if they require grad).
Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight = Tensor(), const Tensor& bias = Tensor(),
                  bool training = false, double momentum = 0.1, double eps = 1e-5);

}  // namespace aclgrad
