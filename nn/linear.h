// Linear, Identity, Flatten and Dropout layers (torch.nn names, options, defaults and reprs).
#pragma once

#include <cstdint>
#include <string>

#include "../nn/module.h"
#include "../nn/options.h"
#include "../tensor/random.h"

namespace aclgrad::nn {

struct LinearOptions {
  LinearOptions(int64_t in_features, int64_t out_features)
      : in_features_(in_features), out_features_(out_features) {}
  ACLGRAD_ARG(int64_t, in_features);
  ACLGRAD_ARG(int64_t, out_features);
  /// Whether to learn an additive bias.
  ACLGRAD_ARG(bool, bias) = true;
};

/// y = x·weightᵀ + bias: x [..., in_features] -> [..., out_features].
/// Parameters: weight [out_features, in_features], bias [out_features] (if options.bias()).
/// Init (PyTorch's reset_parameters): weight kaiming_uniform_(a = √5), i.e.
/// U(-1/√in_features, 1/√in_features); bias U(-1/√in_features, 1/√in_features).
class Linear : public Module {
 public:
  explicit Linear(const LinearOptions& options);
  Linear(int64_t in_features, int64_t out_features)
      : Linear(LinearOptions(in_features, out_features)) {}
  /// Re-draws weight and bias with the default init, from gen (default generator when null).
  void reset_parameters(Generator* gen = nullptr);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  LinearOptions options;
  Tensor weight;
  Tensor bias;  // undefined without bias
};

/// Returns its input (a placeholder, e.g. to remove a layer from a Sequential).
class Identity : public Module {
 public:
  Identity() : Module("Identity") {}
  Tensor forward(const Tensor& input) override { return input; }
};

struct FlattenOptions {
  FlattenOptions() = default;
  ACLGRAD_ARG(int64_t, start_dim) = 1;
  ACLGRAD_ARG(int64_t, end_dim) = -1;
};

/// Merges dims [start_dim, end_dim] (default: all but the batch dim): [N, C, H, W] -> [N, C·H·W].
class Flatten : public Module {
 public:
  explicit Flatten(const FlattenOptions& options = {});
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  FlattenOptions options;
};

struct DropoutOptions {
  DropoutOptions(double p = 0.5) : p_(p) {}  // NOLINT: Dropout(0.2)
  /// Probability of zeroing an element, in [0, 1].
  ACLGRAD_ARG(double, p);
};

/// In training, zeroes each element with probability p and scales the rest by 1 / (1 - p);
/// in eval mode returns the input. Masks come from the default generator (manual_seed).
class Dropout : public Module {
 public:
  explicit Dropout(const DropoutOptions& options = {});
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  DropoutOptions options;
};

}  // namespace aclgrad::nn
