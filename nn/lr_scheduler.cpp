// LR schedulers, transcribed from PyTorch 1.13's torch/optim/lr_scheduler.py.
#include "nn/lr_scheduler.h"

#include <cmath>
#include <numbers>

#include "nn/optim_kernel.h"

namespace aclgrad::optim {

using detail::format_double;
using detail::lookup;
using detail::parse_double;

LRScheduler::LRScheduler(std::string name, Optimizer& optimizer)
    : optimizer_(optimizer), name_(std::move(name)) {
  for (ParamGroup& g : optimizer_.param_groups()) {
    g.options.try_emplace("initial_lr", g.lr());  // PyTorch: group.setdefault('initial_lr', lr)
    base_lrs_.push_back(g.get("initial_lr"));
  }
}

void LRScheduler::step() {
  ++step_count_;
  ++last_epoch_;
  const std::vector<double> lrs = get_lr();
  std::vector<ParamGroup>& groups = optimizer_.param_groups();
  check(lrs.size() == groups.size(), name_, ": the optimizer has ", groups.size(),
        " parameter groups but the scheduler was built for ", lrs.size());
  last_lr_.clear();
  for (size_t i = 0; i < groups.size(); ++i) {
    groups[i].set_lr(lrs[i]);
    last_lr_.push_back(lrs[i]);
  }
}

StateDict LRScheduler::state_dict() const {
  StateDict dict;
  dict.metadata["scheduler"] = name_;
  dict.metadata["last_epoch"] = std::to_string(last_epoch_);
  dict.metadata["step_count"] = std::to_string(step_count_);
  for (size_t i = 0; i < base_lrs_.size(); ++i) {
    dict.metadata["base_lrs." + std::to_string(i)] = format_double(base_lrs_[i]);
  }
  for (size_t i = 0; i < last_lr_.size(); ++i) {
    dict.metadata["last_lr." + std::to_string(i)] = format_double(last_lr_[i]);
  }
  return dict;
}

void LRScheduler::load_state_dict(const StateDict& dict) {
  const std::string& kind = lookup(dict.metadata, "scheduler");
  check(kind == name_, "load_state_dict: the state was saved by a ", kind, " scheduler, not ",
        name_);
  std::vector<double> base, last;
  for (size_t i = 0; i < base_lrs_.size(); ++i) {
    const std::string key = "base_lrs." + std::to_string(i);
    base.push_back(parse_double(lookup(dict.metadata, key), key));
    const std::string lkey = "last_lr." + std::to_string(i);
    last.push_back(parse_double(lookup(dict.metadata, lkey), lkey));
  }
  check(dict.metadata.count("base_lrs." + std::to_string(base_lrs_.size())) == 0,
        "load_state_dict: the ", name_, " state has more than ", base_lrs_.size(),
        " parameter groups");
  const double epoch = parse_double(lookup(dict.metadata, "last_epoch"), "last_epoch");
  const double count = parse_double(lookup(dict.metadata, "step_count"), "step_count");
  last_epoch_ = static_cast<int64_t>(epoch);
  step_count_ = static_cast<int64_t>(count);
  base_lrs_ = std::move(base);
  last_lr_ = std::move(last);
}

// ---- StepLR ----

StepLR::StepLR(Optimizer& optimizer, int64_t step_size, double gamma)
    : LRScheduler("StepLR", optimizer), step_size_(step_size), gamma_(gamma) {
  check(step_size > 0, "StepLR: step_size must be positive, got ", step_size);
  initial_step();
}

std::vector<double> StepLR::get_lr() {
  std::vector<double> lrs;
  for (const ParamGroup& g : optimizer_.param_groups()) {
    const bool decay = last_epoch_ != 0 && last_epoch_ % step_size_ == 0;
    lrs.push_back(decay ? g.lr() * gamma_ : g.lr());
  }
  return lrs;
}

// ---- CosineAnnealingLR ----

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min)
    : LRScheduler("CosineAnnealingLR", optimizer), T_max_(T_max), eta_min_(eta_min) {
  check(T_max > 0, "CosineAnnealingLR: T_max must be positive, got ", T_max);
  initial_step();
}

std::vector<double> CosineAnnealingLR::get_lr() {
  constexpr double pi = std::numbers::pi;
  const double T = static_cast<double>(T_max_), e = static_cast<double>(last_epoch_);
  std::vector<double> lrs;
  const std::vector<ParamGroup>& groups = optimizer_.param_groups();
  for (size_t i = 0; i < groups.size(); ++i) {
    const double lr = groups[i].lr();
    if (last_epoch_ == 0) {
      lrs.push_back(lr);
    } else if ((last_epoch_ - 1 - T_max_) % (2 * T_max_) == 0) {  // zero under any sign rule
      lrs.push_back(lr + (base_lrs_[i] - eta_min_) * (1 - std::cos(pi / T)) / 2);
    } else {
      lrs.push_back((1 + std::cos(pi * e / T)) / (1 + std::cos(pi * (e - 1) / T)) *
                        (lr - eta_min_) +
                    eta_min_);
    }
  }
  return lrs;
}

// ---- OneCycleLR ----

OneCycleLR::OneCycleLR(Optimizer& optimizer, const OneCycleOptions& options)
    : LRScheduler("OneCycleLR", optimizer), options_(options) {
  const OneCycleOptions& o = options_;
  std::vector<ParamGroup>& groups = optimizer_.param_groups();
  check(o.total_steps > 0, "OneCycleLR: expected positive total_steps, got ", o.total_steps);
  check(o.pct_start >= 0 && o.pct_start <= 1,
        "OneCycleLR: expected pct_start between 0 and 1, got ", o.pct_start);
  check(o.anneal_strategy == "cos" || o.anneal_strategy == "linear",
        "OneCycleLR: anneal_strategy must be 'cos' or 'linear', got '", o.anneal_strategy, "'");
  check(o.max_lr.size() == 1 || o.max_lr.size() == groups.size(), "OneCycleLR: expected ",
        groups.size(), " values for max_lr, got ", o.max_lr.size());
  const double total = static_cast<double>(o.total_steps);
  if (o.three_phase) {
    phases_ = {
        {o.pct_start * total - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum"},
        {2 * o.pct_start * total - 2, "max_lr", "initial_lr", "base_momentum", "max_momentum"},
        {total - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum"}};
  } else {
    phases_ = {{o.pct_start * total - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum"},
               {total - 1, "max_lr", "min_lr", "base_momentum", "max_momentum"}};
  }
  for (size_t i = 0; i < groups.size(); ++i) {
    const double max_lr = o.max_lr.size() == 1 ? o.max_lr[0] : o.max_lr[i];
    groups[i].set("initial_lr", max_lr / o.div_factor);
    groups[i].set("max_lr", max_lr);
    groups[i].set("min_lr", groups[i].get("initial_lr") / o.final_div_factor);
    base_lrs_[i] = groups[i].get("initial_lr");
  }
  if (o.cycle_momentum) {
    const Options& d = optimizer_.defaults();
    check(d.count("momentum") != 0 || d.count("beta1") != 0, "OneCycleLR: optimizer ",
          optimizer_.name(), " must support momentum with the cycle_momentum option enabled");
    use_beta1_ = d.count("beta1") != 0;
    for (ParamGroup& g : groups) {
      g.set(use_beta1_ ? "beta1" : "momentum", o.max_momentum);
      g.set("max_momentum", o.max_momentum);
      g.set("base_momentum", o.base_momentum);
    }
  }
  initial_step();
}

double OneCycleLR::anneal(double start, double end, double pct) const {
  if (options_.anneal_strategy == "cos") {
    const double cos_out = std::cos(std::numbers::pi * pct) + 1;
    return end + (start - end) / 2.0 * cos_out;
  }
  return (end - start) * pct + start;
}

std::vector<double> OneCycleLR::get_lr() {
  check(last_epoch_ <= options_.total_steps, "OneCycleLR: tried to step ", last_epoch_ + 1,
        " times; the specified number of total steps is ", options_.total_steps);
  const double step_num = static_cast<double>(last_epoch_);
  std::vector<double> lrs;
  for (ParamGroup& g : optimizer_.param_groups()) {
    double start_step = 0, lr = 0, momentum = 0;
    for (size_t i = 0; i < phases_.size(); ++i) {
      const Phase& ph = phases_[i];
      if (step_num <= ph.end_step || i + 1 == phases_.size()) {
        const double pct = (step_num - start_step) / (ph.end_step - start_step);
        lr = anneal(g.get(ph.start_lr), g.get(ph.end_lr), pct);
        if (options_.cycle_momentum) {
          momentum = anneal(g.get(ph.start_momentum), g.get(ph.end_momentum), pct);
        }
        break;
      }
      start_step = ph.end_step;
    }
    lrs.push_back(lr);
    if (options_.cycle_momentum) g.set(use_beta1_ ? "beta1" : "momentum", momentum);
  }
  return lrs;
}

}  // namespace aclgrad::optim
