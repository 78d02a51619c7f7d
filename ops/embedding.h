// Embedding lookup: rows of a weight matrix gathered by int64 indices (torch.nn.functional.
// embedding), differentiable w.r.t. the weight to any order.
#pragma once

#include <cstdint>
#include <optional>

#include "../tensor/tensor.h"

namespace aclgrad {

/// out[..., :] = weight[indices[...], :]: weight [N, D] (floating), indices int64 of any shape,
/// out [*indices.shape, D]. IndexError naming the position when an index is outside [0, N).
/// padding_idx (may be negative, counted from N) only changes the backward: the gradient of
/// that row is always 0 (the forward still reads whatever the row holds).
/// Backward: grad_weight = embedding_dense_backward(grad, indices, N, padding_idx).
Tensor embedding(const Tensor& weight, const Tensor& indices,
                 std::optional<int64_t> padding_idx = std::nullopt);

/// The weight gradient of embedding: zeros [num_weights, D] with grad[..., :] added into row
/// indices[...] (rows that repeat accumulate; the padding_idx row stays 0). grad has shape
/// [*indices.shape, D]. Differentiable w.r.t. grad (its own gradient is a gather).
Tensor embedding_dense_backward(const Tensor& grad, const Tensor& indices, int64_t num_weights,
                                std::optional<int64_t> padding_idx = std::nullopt);

}  // namespace aclgrad
