// The float32 and 16-bit matrix product under matmul/linear (ops/linear.cpp): operands multiplied
// by libaclnn's aclnnMatmul, on its packed GEMM (AVX-512 / AVX2, OpenBLAS at tier none), which
// converts float16 and bfloat16 while packing its panels (no fp32 copy of an operand), accumulates
// in fp32 and rounds each output element once. float64 stays on OpenBLAS (aclnnMatmul has none).
#pragma once

#include "tensor/tensor.h"

namespace aclgrad::detail {

// out [batch..., n, m] = a [..., n, k] · b [..., k, m]: a and b float32, float16 or bfloat16 of
// one dtype,
// at least 2-d, shapes already checked (inner sizes equal, batch dims broadcasting to out's);
// out contiguous, of their dtype. Strided and transposed views are read in place.
void matmul_aclnn(const Tensor& a, const Tensor& b, const Tensor& out);

}  // namespace aclgrad::detail
