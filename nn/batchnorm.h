// Batch normalisation layers (torch.nn.BatchNorm1d/2d/3d: options, defaults, buffers, repr).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "../nn/module.h"
#include "../nn/options.h"

namespace aclgrad::nn {

struct BatchNormOptions {
  BatchNormOptions(int64_t num_features) : num_features_(num_features) {}  // NOLINT
  /// C, the size of dim 1 of the input.
  ACLGRAD_ARG(int64_t, num_features);
  ACLGRAD_ARG(double, eps) = 1e-5;
  /// Weight of the new batch statistic in the running averages; nullopt = cumulative moving
  /// average (1 / num_batches_tracked).
  ACLGRAD_ARG(std::optional<double>, momentum) = 0.1;
  /// Learnable per-channel weight (init 1) and bias (init 0).
  ACLGRAD_ARG(bool, affine) = true;
  /// Keep running_mean / running_var / num_batches_tracked buffers and use them in eval mode;
  /// without them batch statistics are used in both modes.
  ACLGRAD_ARG(bool, track_running_stats) = true;
};

/// Normalises each channel of [N, C, *] over N and the spatial dims (ops/batch_norm.h).
/// Parameters (affine): weight [C] = 1, bias [C] = 0. Buffers (track_running_stats):
/// running_mean [C] = 0, running_var [C] = 1, num_batches_tracked (int64 scalar) = 0.
/// In training each forward updates the running statistics and increments num_batches_tracked.
/// Input rank: 2 or 3 (BatchNorm1d), 4 (2d), 5 (3d); Error otherwise.
template <size_t D>
class BatchNormNd : public Module {
 public:
  explicit BatchNormNd(const BatchNormOptions& options);
  /// Running statistics back to 0 / 1 and num_batches_tracked to 0.
  void reset_running_stats();
  /// reset_running_stats() and weight = 1, bias = 0.
  void reset_parameters();
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  BatchNormOptions options;
  Tensor weight, bias;                                    // undefined unless affine
  Tensor running_mean, running_var, num_batches_tracked;  // undefined unless tracking

 protected:
  /// For subclasses with another repr name (SyncBatchNorm).
  BatchNormNd(const BatchNormOptions& options, std::string name);
  /// Checks the input rank; in training with running statistics, increments num_batches_tracked.
  /// Returns the running-average factor of this forward (momentum, or 1 / num_batches_tracked).
  double begin_forward(const Tensor& input);
};
using BatchNorm1d = BatchNormNd<1>;
using BatchNorm2d = BatchNormNd<2>;
using BatchNorm3d = BatchNormNd<3>;

extern template class BatchNormNd<1>;
extern template class BatchNormNd<2>;
extern template class BatchNormNd<3>;

}  // namespace aclgrad::nn
