#include "nn/batchnorm.h"

#include "autograd/grad_mode.h"
#include "nn/init.h"
#include "ops/batch_norm.h"
#include "tensor/creation.h"

namespace aclgrad::nn {

template <size_t D>
BatchNormNd<D>::BatchNormNd(const BatchNormOptions& options)
    : BatchNormNd(options, "BatchNorm" + std::to_string(D) + "d") {}

template <size_t D>
BatchNormNd<D>::BatchNormNd(const BatchNormOptions& options, std::string name)
    : Module(std::move(name)), options(options) {
  const int64_t c = options.num_features();
  check(c > 0, type_name(), ": num_features must be positive, got ", c);
  if (options.affine()) {
    weight = register_parameter("weight", empty({c}));
    bias = register_parameter("bias", empty({c}));
  }
  if (options.track_running_stats()) {
    running_mean = register_buffer("running_mean", empty({c}));
    running_var = register_buffer("running_var", empty({c}));
    num_batches_tracked = register_buffer("num_batches_tracked", zeros({}, Dtype::Int64));
  }
  reset_parameters();
}

template <size_t D>
void BatchNormNd<D>::reset_running_stats() {
  if (!options.track_running_stats()) return;
  init::zeros_(running_mean);
  init::ones_(running_var);
  init::zeros_(num_batches_tracked);
}

template <size_t D>
void BatchNormNd<D>::reset_parameters() {
  reset_running_stats();
  if (options.affine()) {
    init::ones_(weight);
    init::zeros_(bias);
  }
}

template <size_t D>
double BatchNormNd<D>::begin_forward(const Tensor& input) {
  const int64_t dim = input.dim();
  if constexpr (D == 1) {
    check<ShapeError>(dim == 2 || dim == 3, type_name(), ": expected 2D or 3D input (got ", dim,
                      "D input)");
  } else {
    check<ShapeError>(dim == static_cast<int64_t>(D) + 2, type_name(), ": expected ", D + 2,
                      "D input (got ", dim, "D input)");
  }
  double factor = options.momentum().value_or(0.0);
  const bool tracking = options.track_running_stats();
  if (is_training() && tracking) {
    NoGradGuard no_grad;
    const int64_t n = num_batches_tracked.item<int64_t>() + 1;
    num_batches_tracked.fill_(n);
    if (!options.momentum()) factor = 1.0 / static_cast<double>(n);
  }
  return factor;
}

template <size_t D>
Tensor BatchNormNd<D>::forward(const Tensor& input) {
  const double factor = begin_forward(input);
  const bool tracking = options.track_running_stats();
  // Batch statistics in training, or always without running statistics.
  const bool use_batch_stats = is_training() || !tracking;
  return batch_norm(input, tracking ? running_mean : Tensor(), tracking ? running_var : Tensor(),
                    weight, bias, use_batch_stats, factor, options.eps());
}

template <size_t D>
std::string BatchNormNd<D>::extra_repr() const {
  return std::to_string(options.num_features()) + ", eps=" + detail::py_number(options.eps()) +
         ", momentum=" +
         (options.momentum() ? detail::py_number(*options.momentum()) : std::string("None")) +
         ", affine=" + detail::py_bool(options.affine()) +
         ", track_running_stats=" + detail::py_bool(options.track_running_stats());
}

template class BatchNormNd<1>;
template class BatchNormNd<2>;
template class BatchNormNd<3>;

}  // namespace aclgrad::nn
