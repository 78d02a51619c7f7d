// Differentiable losses with PyTorch's semantics: cross_entropy, nll_loss, mse_loss,
// binary_cross_entropy_with_logits.
//
// Class-index losses take input [N, C] or [N, C, d1, ...] (or an unbatched [C]) and int64
// targets [N] / [N, d1, ...] (or 0-dim). Every loss is composed of differentiable ops
// (log_softmax, a class gather and its scatter adjoint, elementwise ops, sum), so all of them
// support double backward. Class weights and pos_weight are constants (no gradient), as in
// PyTorch; input and (for mse and bce_with_logits) a floating target get gradients.
#pragma once

#include <string_view>

#include "../tensor/tensor.h"

namespace aclgrad {

/// How per-element losses are combined: kept (None), averaged (Mean) or summed (Sum).
enum class Reduction { None, Mean, Sum };
/// "none", "mean" or "sum" (PyTorch's strings); Error otherwise.
Reduction reduction_from_string(std::string_view name);

struct NllLossOptions {
  Reduction reduction = Reduction::Mean;
  /// Targets equal to this contribute 0 and are left out of the mean's denominator.
  int64_t ignore_index = -100;
  /// Optional class weights [C] (same dtype as the input); undefined = all ones.
  Tensor weight{};
};

struct CrossEntropyOptions {
  Reduction reduction = Reduction::Mean;
  int64_t ignore_index = -100;
  /// ε in [0, 1]: loss = (1 - ε)·nll + ε·(mean over classes of -w_c·log p_c).
  double label_smoothing = 0.0;
  Tensor weight{};
};

struct BceWithLogitsOptions {
  Reduction reduction = Reduction::Mean;
  /// Optional per-element weight, broadcast to the input's shape.
  Tensor weight{};
  /// Optional weight of the positive term, broadcast to the input's shape (e.g. [C]).
  Tensor pos_weight{};
};

/// -w[t]·input[n, t, ...] per element (0 where t == ignore_index); Mean divides the sum by the
/// sum of w[t] over the non-ignored targets (NaN if there are none). input holds log-probs.
/// IndexError for a target outside [0, C) that is not ignore_index.
Tensor nll_loss(const Tensor& input, const Tensor& target, const NllLossOptions& options = {});

/// nll_loss(log_softmax(input, class dim), target) with label smoothing (torch's formula). A
/// floating target of the input's shape is read as class probabilities instead:
/// -sum_c w_c·target_c·log p_c per element (Mean divides by the element count N·d1·...).
Tensor cross_entropy(const Tensor& input, const Tensor& target,
                     const CrossEntropyOptions& options = {});

/// (input - target)² reduced; target broadcasts to the input's shape.
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);

/// -w·[p·y·log σ(x) + (1 - y)·log(1 - σ(x))] computed stably as
/// (1 - y)·x + (1 + (p - 1)·y)·log(1 + exp(-x)); target y has the input's shape.
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const BceWithLogitsOptions& options = {});

}  // namespace aclgrad
