// Optimizers: the Optimizer base (parameter groups, per-parameter state, zero_grad, state_dict)
// and SGD, Adam, AdamW with PyTorch 1.13's exact update equations (its single-tensor "for-loop"
// implementation, same order of operations), so that the same model, data and seed follow the
// same trajectory as PyTorch to float tolerance.
//
//   optim::SGD opt(model.parameters(), {.lr = 0.1, .momentum = 0.9});
//   for (...) { opt.zero_grad(); loss.backward(); opt.step(); }
//
// Like PyTorch, a parameter group is a list of parameters plus a map of named hyperparameters
// ("lr", "momentum", "beta1", ...). Options missing from a group are filled from the optimizer's
// defaults, and LR schedulers edit group options (e.g. "lr") between steps. Updates run under
// NoGradGuard, in place (each updated tensor's version is bumped), for float32 and float64
// parameters; parameters whose .grad is undefined are skipped (and get no state).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "../tensor/tensor.h"

namespace aclgrad::optim {

/// Named hyperparameters of a group. Booleans are stored as 0/1; Adam's betas as "beta1"/"beta2".
using Options = std::map<std::string, double>;

/// A list of parameters optimized with the same hyperparameters (PyTorch's param_groups entry).
struct ParamGroup {
  std::vector<Tensor> params;
  Options options;

  /// The value of option name; Error naming the option if the group does not have it.
  double get(const std::string& name) const;
  /// Sets (or adds) an option.
  void set(const std::string& name, double value) { options[name] = value; }
  double lr() const { return get("lr"); }
  void set_lr(double lr) { set("lr", lr); }
};

/// Named tensors plus string metadata: what a checkpoint (nn/checkpoint) stores.
struct StateDict {
  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::string> metadata;
};

/// Per-parameter state: named tensors ("momentum_buffer", "exp_avg", "step", ...).
using ParamState = std::map<std::string, Tensor>;

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  /// One update of every parameter that has a gradient.
  virtual void step() = 0;
  /// Re-evaluates the loss with closure (grad mode on), then steps; returns the closure's loss.
  Tensor step(const std::function<Tensor()>& closure);

  /// Clears the gradients of every parameter. The default follows PyTorch 1.13
  /// (set_to_none=false: gradients are zero-filled in place and stay defined); pass true for
  /// PyTorch 2.x behaviour (gradients become undefined, which saves memory and time).
  void zero_grad(bool set_to_none = false);

  /// Adds a group; its missing options are taken from defaults(). Error if a parameter is already
  /// in a group, is not a floating point leaf, or an option is invalid.
  void add_param_group(ParamGroup group);
  std::vector<ParamGroup>& param_groups() { return groups_; }
  const std::vector<ParamGroup>& param_groups() const { return groups_; }
  /// The constructor's options (every option this optimizer understands).
  const Options& defaults() const { return defaults_; }
  /// "SGD", "Adam", "AdamW".
  const std::string& name() const { return name_; }

  /// The state of param (created empty on first use). Parameters are identified by their impl.
  ParamState& state(const Tensor& param) { return state_[param.impl()]; }
  /// nullptr when param has no state yet.
  const ParamState* find_state(const Tensor& param) const;

  /// Everything needed to continue exactly: tensors "state.<i>.<name>" (i counts parameters over
  /// the groups in order; tensors are clones) and metadata "optimizer" (name),
  /// "param_groups" (count), "param_groups.<g>.params" (indices, "0,1,2") and
  /// "param_groups.<g>.<option>" (shortest round-trip decimal of the double).
  StateDict state_dict() const;
  /// Restores state and group options saved by state_dict() of an optimizer of the same kind with
  /// the same group sizes; Error naming the mismatch otherwise (nothing is changed then). State
  /// tensors are copied (converted to each parameter's dtype).
  void load_state_dict(const StateDict& dict);

 protected:
  Optimizer(std::string name, Options defaults);
  /// Throws Error naming the option when a group option is invalid for this optimizer.
  virtual void validate(const Options& options) const = 0;

 private:
  std::string name_;
  Options defaults_;
  std::vector<ParamGroup> groups_;
  std::unordered_map<const TensorImpl*, ParamState> state_;
};

/// torch.optim.SGD's options and defaults (lr has no default in PyTorch; 0.01 here).
struct SGDOptions {
  double lr = 0.01;
  double momentum = 0;
  double dampening = 0;
  double weight_decay = 0;
  bool nesterov = false;
  bool maximize = false;
  Options to_map() const;
};

/// Stochastic gradient descent, PyTorch 1.13 (_single_tensor_sgd), with g = grad (-grad when
/// maximize):
///   g = g + weight_decay * p                      (if weight_decay != 0)
///   buf = g.clone()        on the first step       (if momentum != 0; no dampening then)
///   buf = momentum * buf + (1 - dampening) * g     afterwards
///   g = nesterov ? g + momentum * buf : buf
///   p = p - lr * g
/// State: "momentum_buffer" (only when momentum != 0).
class SGD : public Optimizer {
 public:
  SGD(std::vector<Tensor> params, const SGDOptions& options = {});
  SGD(std::vector<ParamGroup> groups, const SGDOptions& options = {});
  void step() override;
  using Optimizer::step;

 protected:
  void validate(const Options& options) const override;
};

/// torch.optim.Adam / AdamW options. PyTorch's defaults: lr 1e-3, betas (0.9, 0.999), eps 1e-8,
/// weight_decay 0 for Adam and 1e-2 for AdamW (use AdamWOptions for the latter).
struct AdamOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0;
  bool amsgrad = false;
  bool maximize = false;
  Options to_map() const;
};
struct AdamWOptions : AdamOptions {
  AdamWOptions() { weight_decay = 1e-2; }
};

/// Adam, PyTorch 1.13 (_single_tensor_adam), with g = grad (-grad when maximize), t = step:
///   g = g + weight_decay * p                  (Adam, if weight_decay != 0)
///   p = p * (1 - lr * weight_decay)           (AdamW, before the moments)
///   m = m * beta1 + (1 - beta1) * g
///   v = v * beta2 + (1 - beta2) * g * g
///   bc1 = 1 - beta1^t, bc2 = 1 - beta2^t      (in double)
///   vmax = max(vmax, v)                        (amsgrad; v below means vmax then)
///   denom = sqrt(v) / sqrt(bc2) + eps
///   p = p + (-lr / bc1) * m / denom
/// State: "step" (int64 scalar), "exp_avg", "exp_avg_sq", "max_exp_avg_sq" (amsgrad).
class Adam : public Optimizer {
 public:
  Adam(std::vector<Tensor> params, const AdamOptions& options = {});
  Adam(std::vector<ParamGroup> groups, const AdamOptions& options = {});
  void step() override;
  using Optimizer::step;

 protected:
  Adam(std::string name, bool decoupled, std::vector<ParamGroup> groups,
       const AdamOptions& options);
  void validate(const Options& options) const override;

 private:
  bool decoupled_;  // AdamW: decay the parameter instead of adding to the gradient
};

/// AdamW (decoupled weight decay): Adam with p = p * (1 - lr * weight_decay) before the update.
class AdamW : public Adam {
 public:
  AdamW(std::vector<Tensor> params, const AdamWOptions& options = {});
  AdamW(std::vector<ParamGroup> groups, const AdamWOptions& options = {});
};

}  // namespace aclgrad::optim
