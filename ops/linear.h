// Differentiable matrix products: matmul (PyTorch's rules) and linear, on OpenBLAS and libaclnn.
//
// float32 and float64 run sgemm/dgemm; float16/bfloat16 run libaclnn's aclnnMatmul, which converts
// the operands while packing its GEMM panels (no float32 copies), accumulates in float32 and rounds
// each result once. Both operands must have the same dtype. Transposed views are handed to BLAS as
// transposed operands (no copy); other non-contiguous matrices are copied once. The backward is
// written with matmul itself, so double backward works.
#pragma once

#include "../tensor/tensor.h"

namespace aclgrad {

/// Matrix product with torch.matmul's rules:
///   [k]·[k] -> [] (dot);  [n, k]·[k] -> [n];  [k]·[k, m] -> [m];  [n, k]·[k, m] -> [n, m];
///   batched: [..., n, k]·[..., k, m] -> [broadcast(...), n, m], where a 1-d operand is promoted
///   to [1, k] (left) or [k, 1] (right) and the added dim is removed from the result.
/// ShapeError when the inner sizes differ, the batch dims do not broadcast or an operand is 0-d;
/// DtypeError for mixed or non-floating dtypes.
Tensor matmul(const Tensor& a, const Tensor& b);

/// x·weightᵀ + bias: x [..., in_features], weight [out_features, in_features], bias
/// [out_features] or undefined (no bias) -> [..., out_features].
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());

}  // namespace aclgrad
