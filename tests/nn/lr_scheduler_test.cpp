// LR schedulers against their closed-form values (written here from the formulas in PyTorch's
// documentation), momentum cycling, multiple groups and state round trips.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "autograd/autograd.h"
#include "nn/lr_scheduler.h"
#include "tensor/creation.h"

namespace aclgrad::optim {
namespace {

constexpr double kPi = std::numbers::pi;

Tensor leaf() {
  Tensor p = zeros({2}, Dtype::Float64);
  p.requires_grad_();
  return p;
}

void expect_rel(double got, double expected, double rel, int step) {
  EXPECT_NEAR(got, expected, rel * std::abs(expected) + 1e-300) << "at step " << step;
}

TEST(StepLR, DecaysByGammaEveryStepSize) {
  SGD opt({leaf()}, {.lr = 0.1});
  StepLR sched(opt, 3, 0.5);
  for (int e = 0; e <= 12; ++e) {
    const double expected = 0.1 * std::pow(0.5, e / 3);
    expect_rel(sched.get_last_lr()[0], expected, 1e-15, e);
    expect_rel(opt.param_groups()[0].lr(), expected, 1e-15, e);
    EXPECT_EQ(sched.last_epoch(), e);
    sched.step();
  }
}

TEST(StepLR, EveryGroupFromItsOwnBaseLr) {
  Tensor a = leaf(), b = leaf();
  SGD opt(std::vector<ParamGroup>{{{a}, {}}, {{b}, {{"lr", 1.0}}}}, {.lr = 0.1});
  StepLR sched(opt, 2);
  EXPECT_EQ(sched.base_lrs(), (std::vector<double>{0.1, 1.0}));
  for (int e = 1; e <= 5; ++e) sched.step();
  expect_rel(sched.get_last_lr()[0], 0.1 * 0.01, 1e-14, 5);
  expect_rel(sched.get_last_lr()[1], 1.0 * 0.01, 1e-14, 5);
  EXPECT_EQ(opt.param_groups()[1].get("initial_lr"), 1.0);
}

TEST(CosineAnnealingLR, FollowsTheClosedFormIncludingPastTMax) {
  const double base = 0.1, eta_min = 0.001;
  const int T = 10;
  Adam opt({leaf()}, {.lr = base});
  CosineAnnealingLR sched(opt, T, eta_min);
  for (int e = 0; e <= 3 * T + 3; ++e) {
    const double expected = eta_min + (base - eta_min) * (1 + std::cos(kPi * e / T)) / 2;
    expect_rel(sched.get_last_lr()[0], expected, 1e-12, e);
    sched.step();
  }
}

TEST(CosineAnnealingLR, HitsEtaMinAtTMax) {
  SGD opt({leaf()}, {.lr = 1.0});
  CosineAnnealingLR sched(opt, 4);
  for (int e = 0; e < 4; ++e) sched.step();
  EXPECT_NEAR(sched.get_last_lr()[0], 0.0, 1e-16);
  sched.step();  // epoch 5: (1 - cos(pi / 4)) / 2
  expect_rel(sched.get_last_lr()[0], (1 - std::cos(kPi / 4)) / 2, 1e-14, 5);
}

// OneCycle's schedule written from the documentation: warm up from max/div over
// pct_start * total - 1 steps, then anneal to max/div/final_div at total - 1.
double one_cycle_lr(int step, double max_lr, int total, bool cos) {
  const double initial = max_lr / 25, min_lr = initial / 1e4;
  const double warm_end = 0.3 * total - 1;
  auto anneal = [&](double a, double b, double pct) {
    return cos ? b + (a - b) * (1 + std::cos(kPi * pct)) / 2 : a + (b - a) * pct;
  };
  if (step <= warm_end) return anneal(initial, max_lr, step / warm_end);
  return anneal(max_lr, min_lr, (step - warm_end) / (total - 1 - warm_end));
}

TEST(OneCycleLR, CosineScheduleAndMomentum) {
  SGD opt({leaf()}, {.lr = 0.5, .momentum = 0.9});
  OneCycleLR sched(opt, {.max_lr = {1.0}, .total_steps = 100});
  // cos annealing at pct 0 is 1 + (0.04 - 1) / 2 * 2 = 0.040000000000000036 (PyTorch's value too)
  EXPECT_NEAR(sched.get_last_lr()[0], 0.04, 1e-16);
  EXPECT_DOUBLE_EQ(opt.param_groups()[0].get("momentum"), 0.95);
  for (int s = 0; s < 100; ++s) {
    expect_rel(sched.get_last_lr()[0], one_cycle_lr(s, 1.0, 100, true), 1e-13, s);
    if (s == 29) {
      EXPECT_DOUBLE_EQ(sched.get_last_lr()[0], 1.0);
      EXPECT_DOUBLE_EQ(opt.param_groups()[0].get("momentum"), 0.85);
    }
    if (s + 1 < 100) sched.step();
  }
  EXPECT_NEAR(sched.get_last_lr()[0], 4e-6, 1e-18);
  EXPECT_NEAR(opt.param_groups()[0].get("momentum"), 0.95, 1e-15);
  sched.step();  // step 100 == total_steps is still allowed (as in PyTorch)
  EXPECT_THROW(sched.step(), Error);
}

TEST(OneCycleLR, LinearAnnealing) {
  SGD opt({leaf()}, {.lr = 0.5, .momentum = 0.9});
  OneCycleLR sched(opt, {.max_lr = {2.0}, .total_steps = 50, .anneal_strategy = "linear"});
  for (int s = 0; s < 50; ++s) {
    expect_rel(sched.get_last_lr()[0], one_cycle_lr(s, 2.0, 50, false), 1e-13, s);
    if (s + 1 < 50) sched.step();
  }
}

TEST(OneCycleLR, ThreePhaseReturnsToInitialLrThenToMin) {
  SGD opt({leaf()}, {.lr = 0.5, .momentum = 0.9});
  OneCycleLR sched(opt, {.max_lr = {1.0}, .total_steps = 100, .three_phase = true});
  for (int s = 1; s <= 99; ++s) {
    sched.step();
    if (s == 29) expect_rel(sched.get_last_lr()[0], 1.0, 1e-15, s);
    if (s == 58) expect_rel(sched.get_last_lr()[0], 0.04, 1e-13, s);
    if (s == 43) {  // halfway down the second phase (pct 0.5 of 29 -> 58 is 43.5; use exact)
      const double pct = (43.0 - 29) / 29;
      expect_rel(sched.get_last_lr()[0], 0.04 + (1 - 0.04) * (1 + std::cos(kPi * pct)) / 2, 1e-13,
                 s);
    }
  }
  EXPECT_NEAR(sched.get_last_lr()[0], 4e-6, 1e-18);
  EXPECT_NEAR(opt.param_groups()[0].get("momentum"), 0.95, 1e-15);
}

TEST(OneCycleLR, CyclesAdamBeta1AndPerGroupMaxLr) {
  Tensor a = leaf(), b = leaf();
  Adam opt(std::vector<ParamGroup>{{{a}, {}}, {{b}, {}}});
  OneCycleLR sched(opt, {.max_lr = {1.0, 0.5}, .total_steps = 10, .pct_start = 0.5});
  EXPECT_DOUBLE_EQ(opt.param_groups()[0].get("beta1"), 0.95);
  EXPECT_NEAR(opt.param_groups()[1].lr(), 0.02, 1e-16);
  for (int s = 1; s <= 4; ++s) sched.step();
  EXPECT_DOUBLE_EQ(sched.get_last_lr()[1], 0.5);
  EXPECT_DOUBLE_EQ(opt.param_groups()[1].get("beta1"), 0.85);
  EXPECT_EQ(opt.param_groups()[1].get("beta2"), 0.999);
}

TEST(OneCycleLR, WithoutMomentumCyclingLeavesMomentumAlone) {
  SGD opt({leaf()}, {.lr = 0.5, .momentum = 0.3});
  OneCycleLR sched(opt, {.max_lr = {1.0}, .total_steps = 10, .cycle_momentum = false});
  sched.step();
  EXPECT_EQ(opt.param_groups()[0].get("momentum"), 0.3);
}

TEST(OneCycleLR, RejectsBadOptions) {
  SGD opt({leaf()}, {.lr = 0.5});
  EXPECT_THROW(OneCycleLR(opt, {.max_lr = {1.0}, .total_steps = 0}), Error);
  EXPECT_THROW(OneCycleLR(opt, {.max_lr = {1.0}, .total_steps = 10, .pct_start = 1.5}), Error);
  EXPECT_THROW(OneCycleLR(opt, {.max_lr = {1.0}, .total_steps = 10, .anneal_strategy = "exp"}),
               Error);
  EXPECT_THROW(OneCycleLR(opt, {.max_lr = {1.0, 2.0}, .total_steps = 10}), Error);
  EXPECT_THROW(StepLR(opt, 0), Error);
  EXPECT_THROW(CosineAnnealingLR(opt, 0), Error);
}

// Save optimizer + scheduler mid-run, restore into fresh objects, continue identically.
TEST(LRScheduler, StateDictRoundTripContinuesExactly) {
  Tensor p = leaf();
  SGD opt({p}, {.lr = 0.1, .momentum = 0.9});
  OneCycleLR sched(opt, {.max_lr = {1.0}, .total_steps = 40});
  for (int s = 0; s < 13; ++s) sched.step();
  const StateDict opt_state = opt.state_dict(), sched_state = sched.state_dict();
  EXPECT_EQ(sched_state.metadata.at("last_epoch"), "13");

  Tensor q = leaf();
  SGD opt2({q}, {.lr = 0.1, .momentum = 0.9});
  OneCycleLR sched2(opt2, {.max_lr = {1.0}, .total_steps = 40});
  opt2.load_state_dict(opt_state);
  sched2.load_state_dict(sched_state);
  EXPECT_EQ(sched2.last_epoch(), 13);
  EXPECT_EQ(sched2.get_last_lr(), sched.get_last_lr());
  for (int s = 0; s < 20; ++s) {
    sched.step();
    sched2.step();
    EXPECT_EQ(sched.get_last_lr(), sched2.get_last_lr());
    EXPECT_EQ(opt.param_groups()[0].get("momentum"), opt2.param_groups()[0].get("momentum"));
  }
  StepLR other(opt2, 3);
  EXPECT_THROW(other.load_state_dict(sched_state), Error);
}

TEST(LRScheduler, CosineRoundTripKeepsTheRecursion) {
  SGD opt({leaf()}, {.lr = 0.1});
  CosineAnnealingLR sched(opt, 7, 0.01);
  for (int s = 0; s < 5; ++s) sched.step();
  SGD opt2({leaf()}, {.lr = 0.1});
  CosineAnnealingLR sched2(opt2, 7, 0.01);
  opt2.load_state_dict(opt.state_dict());
  sched2.load_state_dict(sched.state_dict());
  for (int s = 0; s < 10; ++s) {
    sched.step();
    sched2.step();
    EXPECT_EQ(sched.get_last_lr(), sched2.get_last_lr());
  }
}

}  // namespace
}  // namespace aclgrad::optim
