// A recorded dtype conversion: torch's x.to(dtype) as autograd sees it (Tensor::to is the
// unrecorded copy). Autocast inserts these in front of the ops it runs in another precision.
#pragma once

#include "../tensor/tensor.h"

namespace aclgrad {

/// x converted to dtype (round to nearest even for the narrowing floating casts), or x itself
/// when it already has dtype. Floating to floating casts are differentiable to any order: the
/// gradient is cast back to x's dtype. A cast from or to a non-floating dtype is not recorded.
Tensor cast(const Tensor& x, Dtype dtype);

}  // namespace aclgrad
