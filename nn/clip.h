// Gradient clipping (torch.nn.utils.clip_grad_norm_ / clip_grad_value_). Both act in place on the
// parameters' .grad (parameters without a gradient are skipped), under NoGradGuard, and bump the
// gradients' versions.
#pragma once

#include <limits>
#include <vector>

#include "../tensor/tensor.h"

namespace aclgrad::nn::utils {

/// Scales all gradients together so that their total norm is at most max_norm, as PyTorch:
///   total = norm([norm(g, p) for g in grads], p)   (max |g| for p = inf)
///   coef = max_norm / (total + 1e-6); grads *= coef only if coef < 1.
/// The norm is accumulated in double. norm_type is any p > 0 or infinity. Returns the total norm
/// before clipping (0 when no parameter has a gradient). With error_if_nonfinite, a NaN or
/// infinite total norm throws Error (and no gradient is changed).
double clip_grad_norm_(const std::vector<Tensor>& params, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);

/// Clamps every gradient element into [-clip_value, clip_value].
void clip_grad_value_(const std::vector<Tensor>& params, double clip_value);

/// The infinity norm_type for clip_grad_norm_.
inline constexpr double kInfNorm = std::numeric_limits<double>::infinity();

}  // namespace aclgrad::nn::utils
