// Differentiable reductions (sum, mean, max, min) and the broadcast pair sum_to/broadcast_to.
//
// dims may be negative and must not repeat; keepdim keeps reduced dims as size 1. Sums and means
// accumulate in float64 and round once to the input dtype. Every backward is written with
// differentiable ops, so all of them support double backward.
#pragma once

#include <tuple>

#include "../tensor/tensor.h"

namespace aclgrad {

/// Sum of all elements (a 0-dim tensor).
Tensor sum(const Tensor& x);
/// Sum over dims (non-empty).
Tensor sum(const Tensor& x, const Shape& dims, bool keepdim = false);
/// Mean of all elements (NaN for an empty tensor, like PyTorch).
Tensor mean(const Tensor& x);
Tensor mean(const Tensor& x, const Shape& dims, bool keepdim = false);

/// Largest element (0-dim); NaN if any element is NaN; Error on an empty tensor. The gradient is
/// shared evenly among tied maxima (PyTorch's max()).
Tensor max(const Tensor& x);
Tensor min(const Tensor& x);
/// (values, int64 indices) of the largest element along dim. Ties give the first index and NaN
/// wins (first NaN), like PyTorch's max(dim); the gradient flows to that index only.
std::tuple<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim = false);
std::tuple<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim = false);

/// Sums x down to `shape`, which must broadcast to x's shape: leading dims are summed away and
/// dims where shape has 1 are summed with keepdim. Returns x itself when shapes are equal. This
/// is the gradient of broadcasting, used by every broadcasting op's backward.
Tensor sum_to(const Tensor& x, const Shape& shape);
/// x broadcast (stride 0, no copy) to `shape`; the gradient is sum_to. Returns x itself when
/// shapes are equal.
Tensor broadcast_to(const Tensor& x, const Shape& shape);

}  // namespace aclgrad
