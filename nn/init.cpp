#include "nn/init.h"

#include <cmath>
#include <string>

#include "autograd/grad_mode.h"

namespace aclgrad::nn::init {

double calculate_gain(std::string_view nonlinearity, std::optional<double> param) {
  static constexpr std::string_view kLinear[] = {
      "linear",           "conv1d",           "conv2d",           "conv3d",
      "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "sigmoid"};
  for (std::string_view name : kLinear)
    if (nonlinearity == name) return 1.0;
  if (nonlinearity == "tanh") return 5.0 / 3.0;
  if (nonlinearity == "relu") return std::sqrt(2.0);
  if (nonlinearity == "leaky_relu") {
    const double slope = param.value_or(0.01);
    return std::sqrt(2.0 / (1.0 + slope * slope));
  }
  if (nonlinearity == "selu") return 3.0 / 4.0;
  detail::fail<Error>(std::source_location::current(), "calculate_gain: unsupported nonlinearity '",
                      std::string(nonlinearity), "'");
}

std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& tensor) {
  check<ShapeError>(tensor.dim() >= 2,
                    "calculate_fan_in_and_fan_out: fan in and fan out can not be computed for a "
                    "tensor with fewer than 2 dimensions, got shape ",
                    tensor.sizes());
  int64_t receptive = 1;
  for (int64_t d = 2; d < tensor.dim(); ++d) receptive *= tensor.size(d);
  return {tensor.size(1) * receptive, tensor.size(0) * receptive};
}

const Tensor& uniform_(const Tensor& tensor, double a, double b, Generator* gen) {
  NoGradGuard no_grad;
  return aclgrad::uniform_(tensor, a, b, gen);
}

const Tensor& normal_(const Tensor& tensor, double mean, double std, Generator* gen) {
  NoGradGuard no_grad;
  return aclgrad::normal_(tensor, mean, std, gen);
}

const Tensor& constant_(const Tensor& tensor, Scalar value) {
  NoGradGuard no_grad;
  return tensor.fill_(value);
}

const Tensor& zeros_(const Tensor& tensor) {
  return constant_(tensor, 0);
}

const Tensor& ones_(const Tensor& tensor) {
  return constant_(tensor, 1);
}

namespace {
double kaiming_std(const Tensor& tensor, double a, FanMode mode, std::string_view nonlinearity) {
  const auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(tensor);
  const int64_t fan = mode == FanMode::FanIn ? fan_in : fan_out;
  return calculate_gain(nonlinearity, a) / std::sqrt(static_cast<double>(fan));
}
double xavier_std(const Tensor& tensor, double gain) {
  const auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(tensor);
  return gain * std::sqrt(2.0 / static_cast<double>(fan_in + fan_out));
}
}  // namespace

const Tensor& kaiming_uniform_(const Tensor& tensor, double a, FanMode mode,
                               std::string_view nonlinearity, Generator* gen) {
  if (tensor.numel() == 0) return tensor;  // PyTorch warns and returns
  const double bound = std::sqrt(3.0) * kaiming_std(tensor, a, mode, nonlinearity);
  return init::uniform_(tensor, -bound, bound, gen);
}

const Tensor& kaiming_normal_(const Tensor& tensor, double a, FanMode mode,
                              std::string_view nonlinearity, Generator* gen) {
  if (tensor.numel() == 0) return tensor;
  return init::normal_(tensor, 0.0, kaiming_std(tensor, a, mode, nonlinearity), gen);
}

const Tensor& xavier_uniform_(const Tensor& tensor, double gain, Generator* gen) {
  const double bound = std::sqrt(3.0) * xavier_std(tensor, gain);
  return init::uniform_(tensor, -bound, bound, gen);
}

const Tensor& xavier_normal_(const Tensor& tensor, double gain, Generator* gen) {
  return init::normal_(tensor, 0.0, xavier_std(tensor, gain), gen);
}

}  // namespace aclgrad::nn::init
