#include "nn/pooling.h"

#include "ops/pool.h"

namespace aclgrad::nn {

namespace {

std::string layer_name(const char* base, size_t d) {
  return std::string(base) + std::to_string(d) + "d";
}

}  // namespace

template <size_t D>
MaxPoolNd<D>::MaxPoolNd(const MaxPoolNdOptions<D>& options)
    : Module(layer_name("MaxPool", D)), options(options) {}

template <size_t D>
Tensor MaxPoolNd<D>::forward(const Tensor& input) {
  const auto& o = options;
  const auto k = o.kernel_size().vec(), s = o.stride().vec(), p = o.padding().vec(),
             d = o.dilation().vec();
  if constexpr (D == 1)
    return max_pool1d(input, k, s, p, d, o.ceil_mode());
  else if constexpr (D == 2)
    return max_pool2d(input, k, s, p, d, o.ceil_mode());
  else
    return max_pool3d(input, k, s, p, d, o.ceil_mode());
}

template <size_t D>
std::string MaxPoolNd<D>::extra_repr() const {
  using detail::py_int_or_tuple;
  return "kernel_size=" + py_int_or_tuple(options.kernel_size().vec()) +
         ", stride=" + py_int_or_tuple(options.stride().vec()) +
         ", padding=" + py_int_or_tuple(options.padding().vec()) +
         ", dilation=" + py_int_or_tuple(options.dilation().vec()) +
         ", ceil_mode=" + detail::py_bool(options.ceil_mode());
}

template <size_t D>
AvgPoolNd<D>::AvgPoolNd(const AvgPoolNdOptions<D>& options)
    : Module(layer_name("AvgPool", D)), options(options) {}

template <size_t D>
Tensor AvgPoolNd<D>::forward(const Tensor& input) {
  const auto& o = options;
  const auto k = o.kernel_size().vec(), s = o.stride().vec(), p = o.padding().vec();
  if constexpr (D == 1)
    return avg_pool1d(input, k, s, p, o.ceil_mode(), o.count_include_pad(), o.divisor_override());
  else if constexpr (D == 2)
    return avg_pool2d(input, k, s, p, o.ceil_mode(), o.count_include_pad(), o.divisor_override());
  else
    return avg_pool3d(input, k, s, p, o.ceil_mode(), o.count_include_pad(), o.divisor_override());
}

template <size_t D>
std::string AvgPoolNd<D>::extra_repr() const {
  using detail::py_int_or_tuple;
  return "kernel_size=" + py_int_or_tuple(options.kernel_size().vec()) +
         ", stride=" + py_int_or_tuple(options.stride().vec()) +
         ", padding=" + py_int_or_tuple(options.padding().vec());
}

template class MaxPoolNd<1>;
template class MaxPoolNd<2>;
template class MaxPoolNd<3>;
template class AvgPoolNd<1>;
template class AvgPoolNd<2>;
template class AvgPoolNd<3>;

AdaptiveAvgPool2d::AdaptiveAvgPool2d(const AdaptiveAvgPool2dOptions& options)
    : Module("AdaptiveAvgPool2d"), options(options) {}

Tensor AdaptiveAvgPool2d::forward(const Tensor& input) {
  return adaptive_avg_pool2d(input, options.output_size().vec());
}

std::string AdaptiveAvgPool2d::extra_repr() const {
  return "output_size=" + detail::py_int_or_tuple(options.output_size().vec());
}

}  // namespace aclgrad::nn
