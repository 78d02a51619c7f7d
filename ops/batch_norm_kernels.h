// batch_norm's kernels (internal to ops/): per-channel statistics, the affine normalisation and
// the fused backward's two passes, over x seen as contiguous [N, C, S] (S = product of the spatial
// dims): channel c is N rows of S contiguous values, row (n, c) starting at (n*C + c)*S.
// Statistics accumulate in double. Float32 runs SIMD variants per CPU tier; float16 / bfloat16
// rows are widened a chunk at a time (ops/convert16), the results bit for bit the element-by-
// element definition. Every function runs in parallel over channels or rows.
#pragma once

#include <cstdint>
#include <vector>

#include "tensor/tensor.h"

namespace aclgrad::batch_norm_kernels {

// x as [N, C, S].
struct ChannelGeometry {
  int64_t N = 0, C = 0, S = 1;
  int64_t per_channel() const { return N * S; }  // M
};

ChannelGeometry geometry_of(const Tensor& x);

/// Batch mean and biased variance of every channel of x (contiguous, [N, C, *]).
void channel_stats(const Tensor& x, const ChannelGeometry& g, std::vector<double>& mean,
                   std::vector<double>& var);

/// y = x * scale[c] + shift[c]; x and y contiguous, of one floating dtype.
void apply_affine(const Tensor& x, const Tensor& y, const ChannelGeometry& g,
                  const std::vector<double>& scale, const std::vector<double>& shift);

/// The backward's first pass: sum_g[c] = Σ g and sum_gx[c] = Σ g (x - mean[c]) * invstd[c].
void grad_sums(const Tensor& x, const Tensor& grad, const ChannelGeometry& g,
               const std::vector<double>& mean, const std::vector<double>& invstd,
               std::vector<double>& sum_g, std::vector<double>& sum_gx);

/// The backward's second pass: dx = k (g - a - (x - mean) b) per channel. dx may be grad (each
/// chunk is read before it is written); all contiguous, of x's dtype.
void grad_input(const Tensor& x, const Tensor& grad, const Tensor& dx, const ChannelGeometry& g,
                const std::vector<double>& k, const std::vector<double>& a,
                const std::vector<double>& b, const std::vector<double>& mean);

}  // namespace aclgrad::batch_norm_kernels
