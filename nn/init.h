// Parameter initialisation, with PyTorch's formulas (torch.nn.init). Every function fills the
// tensor in place without recording autograd history, bumps its version and returns it. Random
// ones draw from gen, or from the default generator (aclgrad::manual_seed) when gen is null.
//
//   nn::init::kaiming_uniform_(w, std::sqrt(5.0));   // what Linear/Conv do by default
//   nn::init::xavier_normal_(w, nn::init::calculate_gain("tanh"));
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>

#include "../tensor/random.h"
#include "../tensor/tensor.h"

namespace aclgrad::nn::init {

/// Which fan kaiming_* scale by: fan_in keeps the forward variance, fan_out the backward one.
enum class FanMode { FanIn, FanOut };

/// The recommended gain for a nonlinearity: 1 for "linear", "conv1d/2d/3d",
/// "conv_transpose1d/2d/3d" and "sigmoid"; 5/3 for "tanh"; sqrt(2) for "relu";
/// sqrt(2 / (1 + slope^2)) for "leaky_relu" (param = slope, default 0.01); 3/4 for "selu".
/// Error for any other name.
double calculate_gain(std::string_view nonlinearity, std::optional<double> param = std::nullopt);

/// (fan_in, fan_out) of a weight with at least 2 dims: size(1) * receptive and
/// size(0) * receptive, where receptive = product of sizes from dim 2 on. ShapeError for fewer
/// than 2 dims.
std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& tensor);
/// PyTorch's name for calculate_fan_in_and_fan_out.
inline std::pair<int64_t, int64_t> _calculate_fan_in_and_fan_out(const Tensor& tensor) {
  return calculate_fan_in_and_fan_out(tensor);
}

/// U[a, b).
const Tensor& uniform_(const Tensor& tensor, double a = 0.0, double b = 1.0,
                       Generator* gen = nullptr);
/// N(mean, std^2).
const Tensor& normal_(const Tensor& tensor, double mean = 0.0, double std = 1.0,
                      Generator* gen = nullptr);
/// Every element = value.
const Tensor& constant_(const Tensor& tensor, Scalar value);
const Tensor& zeros_(const Tensor& tensor);
const Tensor& ones_(const Tensor& tensor);

/// U(-bound, bound) with bound = gain * sqrt(3 / fan), gain = calculate_gain(nonlinearity, a)
/// (He et al. 2015). With a = sqrt(5) and the default leaky_relu, bound = 1 / sqrt(fan_in):
/// the default of Linear and Conv. An empty tensor is left as is.
const Tensor& kaiming_uniform_(const Tensor& tensor, double a = 0.0, FanMode mode = FanMode::FanIn,
                               std::string_view nonlinearity = "leaky_relu",
                               Generator* gen = nullptr);
/// N(0, std^2) with std = gain / sqrt(fan).
const Tensor& kaiming_normal_(const Tensor& tensor, double a = 0.0, FanMode mode = FanMode::FanIn,
                              std::string_view nonlinearity = "leaky_relu",
                              Generator* gen = nullptr);
/// U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out)) (Glorot & Bengio 2010).
const Tensor& xavier_uniform_(const Tensor& tensor, double gain = 1.0, Generator* gen = nullptr);
/// N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out)).
const Tensor& xavier_normal_(const Tensor& tensor, double gain = 1.0, Generator* gen = nullptr);

}  // namespace aclgrad::nn::init
