// The 16-bit matrix product under matmul/linear (ops/linear.cpp): float16 and bfloat16 operands
// multiplied by libaclnn's aclnnMatmul, which converts them while packing its GEMM panels (no fp32
// copy of an operand), accumulates in fp32 and rounds each output element once.
#pragma once

#include "tensor/tensor.h"

namespace aclgrad::detail {

// out [batch..., n, m] = a [..., n, k] · b [..., k, m]: a and b float16 or bfloat16 of one dtype,
// at least 2-d, shapes already checked (inner sizes equal, batch dims broadcasting to out's);
// out contiguous, of their dtype. Strided and transposed views are read in place.
void matmul16(const Tensor& a, const Tensor& b, const Tensor& out);

}  // namespace aclgrad::detail
