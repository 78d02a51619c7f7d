#include "nn/distributed/sync_batchnorm.h"

#include <algorithm>
#include <utility>

#include "autograd/function.h"
#include "autograd/grad_mode.h"
#include "ops/batch_norm.h"
#include "ops/cast.h"
#include "ops/elementwise.h"
#include "ops/reduction.h"
#include "ops/shape.h"
#include "tensor/creation.h"

namespace aclgrad::nn {

namespace {

// y = Σ_ranks x: every rank's loss depends on every rank's x, so dL/dx = Σ_ranks dL/dy.
struct AllReduceSumBackward final : autograd::Node {
  explicit AllReduceSumBackward(distributed::ProcessGroup& group)
      : Node("AllReduceSumBackward", /*supports_double_backward=*/false), group(group) {}
  autograd::tensor_list apply(autograd::tensor_list&& grads) override {
    Tensor g = grads[0].contiguous().clone();
    group.allreduce_sum(g);
    return {g};
  }
  distributed::ProcessGroup& group;
};

}  // namespace

Tensor all_reduce_sum(const Tensor& x, distributed::ProcessGroup& group) {
  Tensor out = x.detach().contiguous().clone();
  group.allreduce_sum(out);
  if (auto node = autograd::make_node<AllReduceSumBackward>({x}, group)) node->set_history(out);
  return out;
}

template <size_t D>
SyncBatchNormNd<D>::SyncBatchNormNd(const BatchNormOptions& options,
                                    std::shared_ptr<distributed::ProcessGroup> group)
    : BatchNormNd<D>(options, "SyncBatchNorm"), group_(std::move(group)) {
  check<distributed::DistributedError>(group_ != nullptr, "SyncBatchNorm: process group is null");
}

template <size_t D>
Tensor SyncBatchNormNd<D>::forward(const Tensor& x) {
  const double factor = this->begin_forward(x);
  const bool tracking = this->options.track_running_stats();
  if (!this->is_training() && tracking) {
    return batch_norm(x, this->running_mean, this->running_var, this->weight, this->bias, false,
                      factor, this->options.eps());
  }
  const int64_t c = x.size(1);
  check<ShapeError>(c == this->options.num_features(), this->type_name(), ": expected ",
                    this->options.num_features(), " channels (dim 1), got input of shape ",
                    x.sizes());
  // A 16-bit input (autocast) is normalised as BatchNorm does it: the statistics, the all-reduces
  // and the affine step in float32 beside the float32 parameters, the output rounded once to the
  // input's dtype. The casts are recorded, so x's gradient comes back in its own dtype.
  const Dtype x_dtype = x.dtype();
  const bool half = x_dtype == Dtype::Float16 || x_dtype == Dtype::BFloat16;
  const Tensor xc = half ? cast(x, Dtype::Float32) : x;
  Shape dims{0};  // every dim but the channels
  for (int64_t d = 2; d < x.dim(); ++d) dims.push_back(d);
  Tensor count = full({1}, static_cast<double>(x.numel() / std::max<int64_t>(c, 1)),
                      Dtype::Float64);  // exact for any count below 2^53
  group_->allreduce_sum(count);
  const double m = count.item<double>();
  check(m > 1, this->type_name(),
        ": expected more than 1 value per channel over all ranks "
        "when training, got input of shape ",
        x.sizes(), " (", m, " values in all)");
  const Tensor mean = div(all_reduce_sum(sum(xc, dims, /*keepdim=*/true), *group_), m);
  const Tensor centered = sub(xc, mean);
  const Tensor var =
      div(all_reduce_sum(sum(mul(centered, centered), dims, /*keepdim=*/true), *group_), m);
  Tensor y = div(centered, sqrt(add(var, this->options.eps())));
  if (this->weight.defined()) {
    Shape channel(static_cast<size_t>(x.dim()), 1);
    channel[1] = c;
    // (16-bit parameters beside a 16-bit input are widened too, as BatchNorm computes.)
    const Tensor w = half ? cast(this->weight, Dtype::Float32) : this->weight;
    const Tensor b = half ? cast(this->bias, Dtype::Float32) : this->bias;
    y = add(mul(y, reshape(w, channel)), reshape(b, channel));
  }
  if (this->is_training() && tracking) {
    NoGradGuard no_grad;
    const Tensor batch_mean = mean.detach().reshape({c}).to(this->running_mean.dtype());
    const Tensor batch_var =
        mul(var.detach().reshape({c}), m / (m - 1)).to(this->running_var.dtype());
    this->running_mean.copy_(add(mul(this->running_mean, 1 - factor), mul(batch_mean, factor)));
    this->running_var.copy_(add(mul(this->running_var, 1 - factor), mul(batch_var, factor)));
  }
  return half ? cast(y, x_dtype) : y;
}

template class SyncBatchNormNd<1>;
template class SyncBatchNormNd<2>;
template class SyncBatchNormNd<3>;

}  // namespace aclgrad::nn
