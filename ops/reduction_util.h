// Helpers shared by the reduction files of ops/ (internal).
#pragma once

#include "tensor/tensor.h"

namespace aclgrad::reduction {

/// Wrapped, sorted dims; IndexError when out of range or repeated.
Shape normalize_dims(const char* op, const Shape& dims, int64_t ndim);
/// sizes reduced over (normalized) dims, kept as 1 or removed.
Shape reduced_shape(const Shape& sizes, const Shape& dims, bool keepdim);
/// scale * sum of x over dims, accumulated in float64, returned in x's dtype (no autograd).
Tensor sum_kernel(const char* op, const Tensor& x, const Shape& dims, bool keepdim, double scale);

}  // namespace aclgrad::reduction
