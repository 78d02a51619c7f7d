// Pooling over the trailing 1, 2 or 3 spatial dims (PyTorch semantics and defaults).
//
// Inputs are batched [N, C, *spatial] (N may be 0) or unbatched [C, *spatial], float32 or
// float64 (float16/bfloat16 compute in float32); spatial is [L] (1d), [H, W] (2d) or [D, H, W]
// (3d), all non-zero. Outputs are [N, C, *out] or [C, *out], contiguous, in x's dtype.
//
// Window parameters are lists with one entry per spatial dim, or a single entry used for all of
// them (`max_pool2d(x, {2})` is a 2x2 window). stride = {} means stride = kernel_size. Per dim,
// with kernel k, stride s, padding p, dilation d (avg pools have d = 1):
//   out = floor((in + 2p - d(k-1) - 1 + (ceil_mode ? s-1 : 0)) / s) + 1,
//   and with ceil_mode the last window must start inside the input or the left padding:
//   if (out-1)s >= in + p then out -= 1.
// Output position o covers the input positions o*s - p + j*d, j < k; positions outside the input
// are padding (-inf for max, 0 for avg). Rules (Error otherwise, message naming op and values):
// k, s, d >= 1; p >= 0; max: p <= (d(k-1)+1)/2 (half the effective kernel); avg: p <= k/2;
// every out >= 1.
//
// Gradients: max pooling routes each output's gradient to the input position that won (ties go
// to the first position in row-major window order; a NaN wins, the last NaN in window order);
// avg pooling spreads it evenly over the window's input positions. Both backwards are recorded
// linear ops (the max one scatters/gathers at the saved indices, the avg one is the adjoint of
// the forward), so double backward works to any order. Work is split over the N*C planes with
// oneTBB; each plane is computed serially, so results are deterministic.
#pragma once

#include <cstdint>
#include <optional>
#include <tuple>

#include "../tensor/tensor.h"

namespace aclgrad {

// ---- max pooling ----
/// [N, C, L] -> [N, C, L_out] (or unbatched [C, L] -> [C, L_out]).
Tensor max_pool1d(const Tensor& x, const Shape& kernel_size, const Shape& stride = {},
                  const Shape& padding = {0}, const Shape& dilation = {1}, bool ceil_mode = false);
/// [N, C, H, W] -> [N, C, H_out, W_out] (or unbatched [C, H, W]).
Tensor max_pool2d(const Tensor& x, const Shape& kernel_size, const Shape& stride = {},
                  const Shape& padding = {0}, const Shape& dilation = {1}, bool ceil_mode = false);
/// [N, C, D, H, W] -> [N, C, D_out, H_out, W_out] (or unbatched [C, D, H, W]).
Tensor max_pool3d(const Tensor& x, const Shape& kernel_size, const Shape& stride = {},
                  const Shape& padding = {0}, const Shape& dilation = {1}, bool ceil_mode = false);

/// (values, indices): indices (int64, shape of values) are flat positions in each input plane,
/// d*H*W + h*W + w (PyTorch's return_indices=True); -1 for a window with no input position in
/// it (possible with dilation), whose value is -inf.
std::tuple<Tensor, Tensor> max_pool1d_with_indices(const Tensor& x, const Shape& kernel_size,
                                                   const Shape& stride = {},
                                                   const Shape& padding = {0},
                                                   const Shape& dilation = {1},
                                                   bool ceil_mode = false);
std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& x, const Shape& kernel_size,
                                                   const Shape& stride = {},
                                                   const Shape& padding = {0},
                                                   const Shape& dilation = {1},
                                                   bool ceil_mode = false);
std::tuple<Tensor, Tensor> max_pool3d_with_indices(const Tensor& x, const Shape& kernel_size,
                                                   const Shape& stride = {},
                                                   const Shape& padding = {0},
                                                   const Shape& dilation = {1},
                                                   bool ceil_mode = false);

// ---- average pooling ----
// Each output is the window's sum divided by: divisor_override if given (non-zero); else, with
// count_include_pad, the window size clipped to the padded input (in + p at the right end, which
// a ceil_mode window may cross); else the number of input positions in the window.

/// [N, C, L] -> [N, C, L_out]. (PyTorch's avg_pool1d has no divisor_override; ours does.)
Tensor avg_pool1d(const Tensor& x, const Shape& kernel_size, const Shape& stride = {},
                  const Shape& padding = {0}, bool ceil_mode = false, bool count_include_pad = true,
                  std::optional<int64_t> divisor_override = std::nullopt);
/// [N, C, H, W] -> [N, C, H_out, W_out].
Tensor avg_pool2d(const Tensor& x, const Shape& kernel_size, const Shape& stride = {},
                  const Shape& padding = {0}, bool ceil_mode = false, bool count_include_pad = true,
                  std::optional<int64_t> divisor_override = std::nullopt);
/// [N, C, D, H, W] -> [N, C, D_out, H_out, W_out].
Tensor avg_pool3d(const Tensor& x, const Shape& kernel_size, const Shape& stride = {},
                  const Shape& padding = {0}, bool ceil_mode = false, bool count_include_pad = true,
                  std::optional<int64_t> divisor_override = std::nullopt);

/// [N, C, H, W] -> [N, C, oH, oW] (or unbatched [C, H, W]); output_size = {oH, oW} or {o}
/// for both, each >= 0. Output i along a dim of input size n averages the input positions
/// [floor(i*n/o), ceil((i+1)*n/o)).
Tensor adaptive_avg_pool2d(const Tensor& x, const Shape& output_size);

}  // namespace aclgrad
