// nn::SyncBatchNorm: BatchNorm whose training statistics are taken over the whole global batch,
// across the ranks of a process group (torch.nn.SyncBatchNorm). Use it instead of BatchNorm when
// each rank's share of the batch is too small for good statistics; it costs three all-reduces
// in forward and two in backward per layer.
//
// Training forward, per channel, with M = the number of values over all ranks:
//   mean = allreduce(Σ x) / M,  var = allreduce(Σ (x - mean)²) / M   (biased; the running
//   variance gets var M / (M - 1)), y = (x - mean) / sqrt(var + eps) weight + bias.
// The all-reduces are differentiable (all_reduce_sum below: its backward all-reduces the
// gradient), so backward gives every rank its share of the global batch's gradient. A float16 or
// bfloat16 input (autocast) takes float32 parameters, as BatchNorm does: the statistics, the
// all-reduces and the affine step run in float32 and y is rounded once to the input's dtype
// (torch.nn.SyncBatchNorm under autocast). Eval mode is plain BatchNorm with the running
// statistics. Same parameters and buffers as BatchNorm, so
// checkpoints are interchangeable.
#pragma once

#include <cstddef>
#include <memory>

#include "../../nn/batchnorm.h"
#include "../../nn/distributed/process_group.h"

namespace aclgrad::nn {

/// The sum of x over the ranks of group, on every rank; differentiable: dL/dx = the sum over
/// ranks of dL/dy (every rank must run the matching backward). x: float32/float64.
Tensor all_reduce_sum(const Tensor& x, distributed::ProcessGroup& group);

template <size_t D>
class SyncBatchNormNd : public BatchNormNd<D> {
 public:
  SyncBatchNormNd(const BatchNormOptions& options,
                  std::shared_ptr<distributed::ProcessGroup> group);
  Tensor forward(const Tensor& input) override;

 private:
  std::shared_ptr<distributed::ProcessGroup> group_;
};
using SyncBatchNorm1d = SyncBatchNormNd<1>;
using SyncBatchNorm2d = SyncBatchNormNd<2>;
using SyncBatchNorm3d = SyncBatchNormNd<3>;

extern template class SyncBatchNormNd<1>;
extern template class SyncBatchNormNd<2>;
extern template class SyncBatchNormNd<3>;

}  // namespace aclgrad::nn
