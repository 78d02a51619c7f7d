// Differentiable softmax and log_softmax over one dim (numerically stable: the row maximum is
// subtracted before exp). Their backward is written with differentiable ops, so double backward
// works. float16/bfloat16 compute in float32; float64 in double.
#pragma once

#include "../tensor/tensor.h"

namespace aclgrad {

/// exp(x - max) / sum(exp(x - max)) along dim (negative allowed); same shape as x. A row that
/// is all -inf gives NaN (as PyTorch).
Tensor softmax(const Tensor& x, int64_t dim);
/// x - max - log(sum(exp(x - max))) along dim; same shape as x.
Tensor log_softmax(const Tensor& x, int64_t dim);

}  // namespace aclgrad
