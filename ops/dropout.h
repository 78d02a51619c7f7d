// Dropout (torch.nn.functional.dropout semantics).
#pragma once

#include "../tensor/random.h"
#include "../tensor/tensor.h"

namespace aclgrad {

/// Inverted dropout: in training, each element of x is kept with probability 1 - p and scaled
/// by 1 / (1 - p), or zeroed; y = x * mask with mask in {0, 1 / (1 - p)}, x's shape and dtype.
/// p must be in [0, 1] (Error otherwise). Returns x itself (same tensor, same history) when not
/// training, when p == 0 or when x is empty; p == 1 gives zeros (gradient zero).
///
/// The mask draws one uniform double per element, in row-major order, from gen (the default
/// generator when null) while holding its lock, so a fixed seed gives the same mask on every
/// platform. Gradient: dL/dx = mask * dL/dy (the saved mask), itself a recorded op, so double
/// backward works.
Tensor dropout(const Tensor& x, double p = 0.5, bool training = true, Generator* gen = nullptr);

}  // namespace aclgrad
