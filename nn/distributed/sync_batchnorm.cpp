#include "nn/distributed/sync_batchnorm.h"

#include <algorithm>
#include <utility>

#include "autograd/function.h"
#include "autograd/grad_mode.h"
#include "ops/batch_norm.h"
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
  Shape dims{0};  // every dim but the channels
  for (int64_t d = 2; d < x.dim(); ++d) dims.push_back(d);
  Tensor count = full({1}, static_cast<double>(x.numel() / std::max<int64_t>(c, 1)), x.dtype());
  group_->allreduce_sum(count);
  const double m = count.item<double>();
  check(m > 1, this->type_name(),
        ": expected more than 1 value per channel over all ranks "
        "when training, got input of shape ",
        x.sizes(), " (", m, " values in all)");
  const Tensor mean = div(all_reduce_sum(sum(x, dims, /*keepdim=*/true), *group_), m);
  const Tensor centered = sub(x, mean);
  const Tensor var =
      div(all_reduce_sum(sum(mul(centered, centered), dims, /*keepdim=*/true), *group_), m);
  Tensor y = div(centered, sqrt(add(var, this->options.eps())));
  if (this->weight.defined()) {
    Shape channel(static_cast<size_t>(x.dim()), 1);
    channel[1] = c;
    y = add(mul(y, reshape(this->weight, channel)), reshape(this->bias, channel));
  }
  if (this->is_training() && tracking) {
    NoGradGuard no_grad;
    const Tensor batch_mean = mean.detach().reshape({c}).to(this->running_mean.dtype());
    const Tensor batch_var =
        mul(var.detach().reshape({c}), m / (m - 1)).to(this->running_var.dtype());
    this->running_mean.copy_(add(mul(this->running_mean, 1 - factor), mul(batch_mean, factor)));
    this->running_var.copy_(add(mul(this->running_var, 1 - factor), mul(batch_var, factor)));
  }
  return y;
}

template class SyncBatchNormNd<1>;
template class SyncBatchNormNd<2>;
template class SyncBatchNormNd<3>;

}  // namespace aclgrad::nn
