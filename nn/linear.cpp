#include "nn/linear.h"

#include <cmath>

#include "nn/init.h"
#include "ops/dropout.h"
#include "ops/linear.h"
#include "ops/shape.h"
#include "tensor/creation.h"

namespace aclgrad::nn {

Linear::Linear(const LinearOptions& options) : Module("Linear"), options(options) {
  check(options.in_features() >= 0 && options.out_features() >= 0,
        "Linear: in_features and out_features must be >= 0, got ", options.in_features(), " and ",
        options.out_features());
  weight = register_parameter("weight", empty({options.out_features(), options.in_features()}));
  if (options.bias()) bias = register_parameter("bias", empty({options.out_features()}));
  reset_parameters();
}

void Linear::reset_parameters(Generator* gen) {
  init::kaiming_uniform_(weight, std::sqrt(5.0), init::FanMode::FanIn, "leaky_relu", gen);
  if (bias.defined()) {
    const int64_t fan_in = init::calculate_fan_in_and_fan_out(weight).first;
    const double bound = fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0;
    init::uniform_(bias, -bound, bound, gen);
  }
}

Tensor Linear::forward(const Tensor& input) {
  return linear(input, weight, bias);
}

std::string Linear::extra_repr() const {
  return "in_features=" + std::to_string(options.in_features()) +
         ", out_features=" + std::to_string(options.out_features()) +
         ", bias=" + detail::py_bool(bias.defined());
}

Flatten::Flatten(const FlattenOptions& options) : Module("Flatten"), options(options) {}

Tensor Flatten::forward(const Tensor& input) {
  return flatten(input, options.start_dim(), options.end_dim());
}

std::string Flatten::extra_repr() const {
  return "start_dim=" + std::to_string(options.start_dim()) +
         ", end_dim=" + std::to_string(options.end_dim());
}

Dropout::Dropout(const DropoutOptions& options) : Module("Dropout"), options(options) {
  check(options.p() >= 0.0 && options.p() <= 1.0,
        "Dropout: probability has to be between 0 and 1, but got ", options.p());
}

Tensor Dropout::forward(const Tensor& input) {
  return dropout(input, options.p(), is_training());
}

std::string Dropout::extra_repr() const {
  return "p=" + detail::py_number(options.p()) + ", inplace=False";
}

}  // namespace aclgrad::nn
