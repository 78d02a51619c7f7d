// Activation layers (torch.nn names, options and reprs): ReLU, LeakyReLU, Sigmoid, Tanh, GELU,
// Softplus, Softmax, LogSoftmax. Each forward is the functional op of ops/activation.h or
// ops/softmax.h; they have no parameters.
#pragma once

#include <string>

#include "../nn/module.h"
#include "../nn/options.h"

namespace aclgrad::nn {

class ReLU : public Module {
 public:
  ReLU() : Module("ReLU") {}
  Tensor forward(const Tensor& input) override;
};

struct LeakyReLUOptions {
  LeakyReLUOptions(double negative_slope = 0.01) : negative_slope_(negative_slope) {}  // NOLINT
  ACLGRAD_ARG(double, negative_slope);
};

/// x for x > 0, negative_slope * x otherwise.
class LeakyReLU : public Module {
 public:
  explicit LeakyReLU(LeakyReLUOptions options = {});
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  LeakyReLUOptions options;
};

class Sigmoid : public Module {
 public:
  Sigmoid() : Module("Sigmoid") {}
  Tensor forward(const Tensor& input) override;
};

class Tanh : public Module {
 public:
  Tanh() : Module("Tanh") {}
  Tensor forward(const Tensor& input) override;
};

struct GELUOptions {
  GELUOptions(std::string approximate = "none") : approximate_(std::move(approximate)) {}  // NOLINT
  /// "none" (exact erf form) or "tanh".
  ACLGRAD_ARG(std::string, approximate);
};

class GELU : public Module {
 public:
  explicit GELU(GELUOptions options = {});
  explicit GELU(const std::string& approximate) : GELU(GELUOptions(approximate)) {}
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  GELUOptions options;
};

struct SoftplusOptions {
  SoftplusOptions() = default;
  ACLGRAD_ARG(double, beta) = 1.0;
  ACLGRAD_ARG(double, threshold) = 20.0;
};

/// log(1 + exp(beta x)) / beta (x itself where beta x > threshold).
class Softplus : public Module {
 public:
  explicit Softplus(SoftplusOptions options = {});
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  SoftplusOptions options;
};

struct SoftmaxOptions {
  SoftmaxOptions(int64_t dim) : dim_(dim) {}  // NOLINT
  ACLGRAD_ARG(int64_t, dim);
};

/// softmax over options.dim (which PyTorch also requires in practice).
class Softmax : public Module {
 public:
  explicit Softmax(SoftmaxOptions options);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  SoftmaxOptions options;
};

class LogSoftmax : public Module {
 public:
  explicit LogSoftmax(SoftmaxOptions options);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  SoftmaxOptions options;
};

}  // namespace aclgrad::nn
