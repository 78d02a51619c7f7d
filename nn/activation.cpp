#include "nn/activation.h"

#include "ops/activation.h"
#include "ops/softmax.h"

namespace aclgrad::nn {

Tensor ReLU::forward(const Tensor& input) {
  return relu(input);
}

LeakyReLU::LeakyReLU(LeakyReLUOptions options) : Module("LeakyReLU"), options(options) {}

Tensor LeakyReLU::forward(const Tensor& input) {
  return leaky_relu(input, options.negative_slope());
}

std::string LeakyReLU::extra_repr() const {
  return "negative_slope=" + detail::py_number(options.negative_slope());
}

Tensor Sigmoid::forward(const Tensor& input) {
  return sigmoid(input);
}

Tensor Tanh::forward(const Tensor& input) {
  return tanh(input);
}

GELU::GELU(GELUOptions options) : Module("GELU"), options(std::move(options)) {
  check(this->options.approximate() == "none" || this->options.approximate() == "tanh",
        "GELU: approximate must be 'none' or 'tanh', got '", this->options.approximate(), "'");
}

Tensor GELU::forward(const Tensor& input) {
  return gelu(input, options.approximate());
}

std::string GELU::extra_repr() const {
  return "approximate='" + options.approximate() + "'";
}

Softplus::Softplus(SoftplusOptions options) : Module("Softplus"), options(options) {}

Tensor Softplus::forward(const Tensor& input) {
  return softplus(input, options.beta(), options.threshold());
}

std::string Softplus::extra_repr() const {
  return "beta=" + detail::py_number(options.beta()) +
         ", threshold=" + detail::py_number(options.threshold());
}

Softmax::Softmax(SoftmaxOptions options) : Module("Softmax"), options(options) {}

Tensor Softmax::forward(const Tensor& input) {
  return softmax(input, options.dim());
}

std::string Softmax::extra_repr() const {
  return "dim=" + std::to_string(options.dim());
}

LogSoftmax::LogSoftmax(SoftmaxOptions options) : Module("LogSoftmax"), options(options) {}

Tensor LogSoftmax::forward(const Tensor& input) {
  return log_softmax(input, options.dim());
}

std::string LogSoftmax::extra_repr() const {
  return "dim=" + std::to_string(options.dim());
}

}  // namespace aclgrad::nn
