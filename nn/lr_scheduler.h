// Learning-rate schedulers: StepLR, CosineAnnealingLR, OneCycleLR with PyTorch 1.13's values.
//
//   optim::SGD opt(params, {.lr = 0.1});
//   optim::StepLR sched(opt, /*step_size=*/30, /*gamma=*/0.1);
//   for (epoch...) { train(opt); sched.step(); }
//
// As in PyTorch, constructing a scheduler records each group's "initial_lr" (base_lrs) and takes
// the first step (last_epoch becomes 0, lr set for epoch 0); each step() then increments
// last_epoch and writes the new lr into every parameter group's "lr" option. StepLR and
// CosineAnnealingLR use PyTorch's recursive (chainable) forms, so their values are PyTorch's to
// the last bit, and equal the closed forms to rounding. The scheduler keeps a reference to the
// optimizer, which must outlive it.
//
// Resuming: build the optimizer and scheduler as before, then load the optimizer's state_dict
// (group options incl. "lr" and "initial_lr") and the scheduler's (last_epoch, base_lrs, ...).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "../nn/optim.h"

namespace aclgrad::optim {

class LRScheduler {
 public:
  virtual ~LRScheduler() = default;
  LRScheduler(const LRScheduler&) = delete;
  LRScheduler& operator=(const LRScheduler&) = delete;

  /// Advances one epoch (or one batch, for OneCycleLR) and sets the groups' learning rates.
  void step();
  /// The learning rates the last step() set, one per group.
  const std::vector<double>& get_last_lr() const { return last_lr_; }
  const std::vector<double>& base_lrs() const { return base_lrs_; }
  /// Number of step() calls after construction (0 right after construction).
  int64_t last_epoch() const { return last_epoch_; }
  /// "StepLR", "CosineAnnealingLR", "OneCycleLR".
  const std::string& name() const { return name_; }

  /// Metadata only: "scheduler", "last_epoch", "step_count", "base_lrs.<g>", "last_lr.<g>"
  /// (numbers as shortest round-trip decimals).
  StateDict state_dict() const;
  /// Restores what state_dict() saved; Error if it came from another scheduler kind or a
  /// different number of groups.
  void load_state_dict(const StateDict& dict);

 protected:
  LRScheduler(std::string name, Optimizer& optimizer);
  /// The new lr of every group at last_epoch_ (called by step() after incrementing it).
  virtual std::vector<double> get_lr() = 0;
  /// The first step; derived constructors call it once their own members are set.
  void initial_step() { step(); }

  Optimizer& optimizer_;
  std::vector<double> base_lrs_;
  int64_t last_epoch_ = -1;
  int64_t step_count_ = 0;

 private:
  std::string name_;
  std::vector<double> last_lr_;
};

/// lr = base_lr * gamma^(floor(epoch / step_size)), computed recursively as PyTorch does
/// (multiplied by gamma at every multiple of step_size).
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1);

 protected:
  std::vector<double> get_lr() override;

 private:
  int64_t step_size_;
  double gamma_;
};

/// lr = eta_min + (base_lr - eta_min) * (1 + cos(pi * epoch / T_max)) / 2 (PyTorch's recursive
/// form, which continues past T_max as a cosine of period 2 * T_max).
class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min = 0);

 protected:
  std::vector<double> get_lr() override;

 private:
  int64_t T_max_;
  double eta_min_;
};

struct OneCycleOptions {
  /// Peak lr per group (one value applies to every group).
  std::vector<double> max_lr = {};
  int64_t total_steps = 0;
  double pct_start = 0.3;
  /// "cos" or "linear".
  std::string anneal_strategy = "cos";
  /// Cycles SGD's "momentum" or Adam's "beta1" inversely to the lr (PyTorch's default: on).
  bool cycle_momentum = true;
  double base_momentum = 0.85;
  double max_momentum = 0.95;
  double div_factor = 25;
  double final_div_factor = 1e4;
  bool three_phase = false;
};

/// The 1cycle policy (torch.optim.lr_scheduler.OneCycleLR, stepped once per batch): lr rises
/// from max_lr / div_factor to max_lr over pct_start * total_steps - 1 steps, then anneals to
/// initial_lr / final_div_factor at step total_steps - 1 (with three_phase, back to initial_lr
/// first). Sets the group options "initial_lr", "max_lr", "min_lr" (and "max_momentum",
/// "base_momentum" when cycling momentum). Stepping past total_steps is an Error.
class OneCycleLR : public LRScheduler {
 public:
  OneCycleLR(Optimizer& optimizer, const OneCycleOptions& options);

 protected:
  std::vector<double> get_lr() override;

 private:
  struct Phase {
    double end_step;
    const char* start_lr;
    const char* end_lr;
    const char* start_momentum;
    const char* end_momentum;
  };
  double anneal(double start, double end, double pct) const;

  OneCycleOptions options_;
  std::vector<Phase> phases_;
  bool use_beta1_ = false;
};

}  // namespace aclgrad::optim
