// Pooling's plane kernels (internal to ops/), run over every plane of a plan in parallel (oneTBB
// splits the planes when there is enough work). Tensors are contiguous, in the plan's shapes
// ([P, D, H, W] as the user's shape in, [P, D_out, H_out, W_out] out), of one floating dtype
// (idx int64). float16 / bfloat16 planes are widened to float32 in bulk (ops/convert16), computed
// by the float32 kernel and each output rounded once: the float32 op on the widened values,
// rounded. The backwards thus sum a position's gradient in float32 also where windows overlap.
#pragma once

#include "ops/pool_plan.h"
#include "tensor/tensor.h"

namespace aclgrad::pool {

/// y = the sum over each window / its divisor.
void avg_forward_kernel(const PoolPlan& p, const Tensor& x, const Tensor& y);
/// gi = avg_forward's adjoint: gi[pos] = Σ g[o] / divisor over the windows o holding pos.
void avg_adjoint_kernel(const PoolPlan& p, const Tensor& g, const Tensor& gi);
/// y = the max over each window (NaN wins: the last NaN), idx = its flat plane position (-1 and
/// -inf for a window without input positions).
void max_forward_kernel(const PoolPlan& p, const Tensor& x, const Tensor& y, const Tensor& idx);
/// gi[idx[o]] += g[o] per plane, gi zeroed first (windows overlap when stride < kernel).
void max_scatter_kernel(const PoolPlan& p, const Tensor& g, const Tensor& idx, const Tensor& gi);
/// z[o] = gg[idx[o]] per plane (0 where idx is -1).
void max_gather_kernel(const PoolPlan& p, const Tensor& gg, const Tensor& idx, const Tensor& z);

}  // namespace aclgrad::pool
