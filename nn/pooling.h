// Pooling layers (torch.nn names, options, defaults and reprs): MaxPool1d/2d/3d,
// AvgPool1d/2d/3d, AdaptiveAvgPool2d. Forwards are the ops of ops/pool.h.
//
//   auto pool = std::make_shared<nn::MaxPool2d>(2);                          // 2x2, stride 2
//   auto avg = std::make_shared<nn::AvgPool2d>(nn::AvgPool2dOptions(3).stride(1).padding(1));
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "../nn/module.h"
#include "../nn/options.h"

namespace aclgrad::nn {

template <size_t D>
struct MaxPoolNdOptions {
  /// stride defaults to kernel_size.
  MaxPoolNdOptions(ExpandingArray<D> kernel_size)  // NOLINT: MaxPool2d(2)
      : kernel_size_(kernel_size), stride_(kernel_size) {}
  ACLGRAD_ARG(ExpandingArray<D>, kernel_size);
  ACLGRAD_ARG(ExpandingArray<D>, stride);
  ACLGRAD_ARG(ExpandingArray<D>, padding) = 0;
  ACLGRAD_ARG(ExpandingArray<D>, dilation) = 1;
  ACLGRAD_ARG(bool, ceil_mode) = false;
};
using MaxPool1dOptions = MaxPoolNdOptions<1>;
using MaxPool2dOptions = MaxPoolNdOptions<2>;
using MaxPool3dOptions = MaxPoolNdOptions<3>;

/// Max over each window of [N, C, *spatial] (or unbatched [C, *spatial]).
template <size_t D>
class MaxPoolNd : public Module {
 public:
  explicit MaxPoolNd(const MaxPoolNdOptions<D>& options);
  explicit MaxPoolNd(ExpandingArray<D> kernel_size) : MaxPoolNd(MaxPoolNdOptions<D>(kernel_size)) {}
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  MaxPoolNdOptions<D> options;
};
using MaxPool1d = MaxPoolNd<1>;
using MaxPool2d = MaxPoolNd<2>;
using MaxPool3d = MaxPoolNd<3>;

template <size_t D>
struct AvgPoolNdOptions {
  /// stride defaults to kernel_size.
  AvgPoolNdOptions(ExpandingArray<D> kernel_size)  // NOLINT: AvgPool2d(2)
      : kernel_size_(kernel_size), stride_(kernel_size) {}
  ACLGRAD_ARG(ExpandingArray<D>, kernel_size);
  ACLGRAD_ARG(ExpandingArray<D>, stride);
  ACLGRAD_ARG(ExpandingArray<D>, padding) = 0;
  ACLGRAD_ARG(bool, ceil_mode) = false;
  ACLGRAD_ARG(bool, count_include_pad) = true;
  ACLGRAD_ARG(std::optional<int64_t>, divisor_override);
};
using AvgPool1dOptions = AvgPoolNdOptions<1>;
using AvgPool2dOptions = AvgPoolNdOptions<2>;
using AvgPool3dOptions = AvgPoolNdOptions<3>;

/// Mean over each window (see ops/pool.h for the divisor rules).
template <size_t D>
class AvgPoolNd : public Module {
 public:
  explicit AvgPoolNd(const AvgPoolNdOptions<D>& options);
  explicit AvgPoolNd(ExpandingArray<D> kernel_size) : AvgPoolNd(AvgPoolNdOptions<D>(kernel_size)) {}
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  AvgPoolNdOptions<D> options;
};
using AvgPool1d = AvgPoolNd<1>;
using AvgPool2d = AvgPoolNd<2>;
using AvgPool3d = AvgPoolNd<3>;

struct AdaptiveAvgPool2dOptions {
  AdaptiveAvgPool2dOptions(ExpandingArray<2> output_size)  // NOLINT: AdaptiveAvgPool2d(1)
      : output_size_(output_size) {}
  ACLGRAD_ARG(ExpandingArray<2>, output_size);
};

/// [N, C, H, W] -> [N, C, oH, oW], averaging adaptively sized windows.
class AdaptiveAvgPool2d : public Module {
 public:
  explicit AdaptiveAvgPool2d(const AdaptiveAvgPool2dOptions& options);
  explicit AdaptiveAvgPool2d(ExpandingArray<2> output_size)
      : AdaptiveAvgPool2d(AdaptiveAvgPool2dOptions(output_size)) {}
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  AdaptiveAvgPool2dOptions options;
};

extern template class MaxPoolNd<1>;
extern template class MaxPoolNd<2>;
extern template class MaxPoolNd<3>;
extern template class AvgPoolNd<1>;
extern template class AvgPoolNd<2>;
extern template class AvgPoolNd<3>;

}  // namespace aclgrad::nn
