// Optimizers against updates computed by hand in double from PyTorch's documented algorithms
// (not from the code under test), state_dict round trips, validation and zero_grad.
#include <gtest/gtest.h>
#include <tbb/task_arena.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <vector>

#include "autograd/autograd.h"
#include "nn/checkpoint.h"
#include "nn/linear.h"
#include "nn/lr_scheduler.h"
#include "nn/optim.h"
#include "ops/ops.h"
#include "tensor/creation.h"
#include "tensor/random.h"

namespace aclgrad::optim {
namespace {

using Vec = std::vector<double>;

// A leaf parameter holding values.
Tensor param(const Vec& values, Dtype dtype = Dtype::Float64) {
  Tensor p = from_vector(values, {static_cast<int64_t>(values.size())}, dtype);
  p.requires_grad_();
  return p;
}

void set_grad(const Tensor& p, const Vec& g) {
  p.set_grad(from_vector(g, p.sizes(), p.dtype()));
}

void expect_near(const Tensor& p, const Vec& expected, double rel) {
  const Vec got = p.to_vector<double>();
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], expected[i], rel * std::max(1.0, std::abs(expected[i]))) << "element " << i;
  }
}

// Three steps of different gradients; the reference walks the same steps in double.
const std::vector<Vec> kGrads = {{0.5, -1.0, 2.0}, {-0.25, 0.75, 1.5}, {1.0, 0.1, -3.0}};
const Vec kStart = {1.0, -2.0, 0.5};

// SGD as in torch.optim.SGD's documentation.
Vec sgd_reference(const SGDOptions& o, int steps) {
  Vec p = kStart, buf(3, 0.0);
  for (int t = 0; t < steps; ++t) {
    for (int i = 0; i < 3; ++i) {
      double g = o.maximize ? -kGrads[t][i] : kGrads[t][i];
      g += o.weight_decay * p[i];
      if (o.momentum != 0) {
        buf[i] = t == 0 ? g : o.momentum * buf[i] + (1 - o.dampening) * g;
        g = o.nesterov ? g + o.momentum * buf[i] : buf[i];
      }
      p[i] -= o.lr * g;
    }
  }
  return p;
}

// Adam / AdamW as in the documentation: bias-corrected moments m_hat, v_hat.
Vec adam_reference(const AdamOptions& o, bool decoupled, int steps) {
  Vec p = kStart, m(3, 0.0), v(3, 0.0), vmax(3, 0.0);
  for (int t = 1; t <= steps; ++t) {
    for (int i = 0; i < 3; ++i) {
      double g = o.maximize ? -kGrads[t - 1][i] : kGrads[t - 1][i];
      if (decoupled) {
        p[i] -= o.lr * o.weight_decay * p[i];
      } else {
        g += o.weight_decay * p[i];
      }
      m[i] = o.beta1 * m[i] + (1 - o.beta1) * g;
      v[i] = o.beta2 * v[i] + (1 - o.beta2) * g * g;
      const double m_hat = m[i] / (1 - std::pow(o.beta1, t));
      vmax[i] = std::max(vmax[i], v[i]);
      const double v_hat = (o.amsgrad ? vmax[i] : v[i]) / (1 - std::pow(o.beta2, t));
      p[i] -= o.lr * m_hat / (std::sqrt(v_hat) + o.eps);
    }
  }
  return p;
}

void check_sgd(const SGDOptions& o) {
  for (Dtype dtype : {Dtype::Float64, Dtype::Float32}) {
    Tensor p = param(kStart, dtype);
    SGD opt({p}, o);
    for (int t = 0; t < 3; ++t) {
      set_grad(p, kGrads[t]);
      opt.step();
      expect_near(p, sgd_reference(o, t + 1), dtype == Dtype::Float64 ? 1e-14 : 1e-6);
    }
  }
}

TEST(SGD, PlainStepIsLrTimesGrad) {
  check_sgd({.lr = 0.1});
}
TEST(SGD, MomentumFirstStepCopiesGradWithoutDampening) {
  check_sgd({.lr = 0.1, .momentum = 0.9, .dampening = 0.3});
}
TEST(SGD, Momentum) {
  check_sgd({.lr = 0.05, .momentum = 0.8});
}
TEST(SGD, Nesterov) {
  check_sgd({.lr = 0.1, .momentum = 0.9, .nesterov = true});
}
TEST(SGD, WeightDecay) {
  check_sgd({.lr = 0.1, .weight_decay = 0.01});
}
TEST(SGD, WeightDecayMomentumNesterovMaximize) {
  check_sgd({.lr = 0.1, .momentum = 0.5, .weight_decay = 0.1, .nesterov = true, .maximize = true});
}

TEST(SGD, FirstStepValuesByHand) {
  // lr 0.1, momentum 0.9, dampening 0.5: step 1 buf = g = 0.5 -> p = 1 - 0.05 = 0.95;
  // step 2 buf = 0.9 * 0.5 + 0.5 * (-0.25) = 0.325 -> p = 0.95 - 0.0325 = 0.9175.
  Tensor p = param({1.0});
  SGD opt({p}, {.lr = 0.1, .momentum = 0.9, .dampening = 0.5});
  set_grad(p, {0.5});
  opt.step();
  EXPECT_DOUBLE_EQ(p.item<double>(), 0.95);
  set_grad(p, {-0.25});
  opt.step();
  EXPECT_DOUBLE_EQ(p.item<double>(), 0.9175);
  EXPECT_DOUBLE_EQ(opt.state(p).at("momentum_buffer").item<double>(), 0.325);
}

void check_adam(const AdamOptions& o, bool decoupled) {
  for (Dtype dtype : {Dtype::Float64, Dtype::Float32}) {
    Tensor p = param(kStart, dtype);
    std::unique_ptr<Optimizer> opt;
    if (decoupled) {
      AdamWOptions w;
      static_cast<AdamOptions&>(w) = o;
      opt = std::make_unique<AdamW>(std::vector<Tensor>{p}, w);
    } else {
      opt = std::make_unique<Adam>(std::vector<Tensor>{p}, o);
    }
    for (int t = 0; t < 3; ++t) {
      set_grad(p, kGrads[t]);
      opt->step();
      expect_near(p, adam_reference(o, decoupled, t + 1), dtype == Dtype::Float64 ? 1e-13 : 2e-6);
    }
    EXPECT_EQ(opt->state(p).at("step").item<int64_t>(), 3);
  }
}

TEST(Adam, Defaults) {
  check_adam({}, false);
}
TEST(Adam, LargeLrAndEps) {
  check_adam({.lr = 0.1, .beta1 = 0.8, .beta2 = 0.9, .eps = 0.01}, false);
}
TEST(Adam, CoupledWeightDecay) {
  check_adam({.lr = 0.1, .weight_decay = 0.1}, false);
}
TEST(Adam, Amsgrad) {
  // kGrads shrink at element 0 and 1 between steps, so max(v) differs from v.
  check_adam({.lr = 0.1, .beta2 = 0.5, .amsgrad = true}, false);
}
TEST(Adam, Maximize) {
  check_adam({.lr = 0.1, .maximize = true}, false);
}
TEST(AdamW, DecoupledWeightDecay) {
  check_adam({.lr = 0.1, .weight_decay = 0.1}, true);
}
TEST(AdamW, DecoupledWeightDecayAmsgrad) {
  check_adam({.lr = 0.1, .beta2 = 0.5, .weight_decay = 0.5, .amsgrad = true}, true);
}

// The contiguous path works in blocks with a vectorised sqrt; the strided path element by
// element. Both must give the same bits (600 elements: several blocks plus a ragged tail).
TEST(Adam, ContiguousBlocksMatchTheStridedPath) {
  for (Dtype dtype : {Dtype::Float32, Dtype::Float64}) {
    for (bool amsgrad : {false, true}) {
      Generator gen(17);
      const Tensor init = randn({2, 300}, dtype, &gen);
      Tensor a = init.clone();
      a.requires_grad_();
      Tensor b = init.t().contiguous().detach().t();  // same values, strides [1, 2]
      b.requires_grad_();
      ASSERT_FALSE(b.is_contiguous());
      Adam oa({a}, {.lr = 0.01, .weight_decay = 0.1, .amsgrad = amsgrad});
      Adam ob({b}, {.lr = 0.01, .weight_decay = 0.1, .amsgrad = amsgrad});
      for (int t = 0; t < 3; ++t) {
        const Tensor g = randn({2, 300}, dtype, &gen);
        a.set_grad(g);
        b.set_grad(g);
        oa.step();
        ob.step();
      }
      EXPECT_EQ(a.to_vector<double>(), b.to_vector<double>());
    }
  }
}

// Parameters above two tasks' worth of elements are updated in parallel (the contiguous block
// path and the strided element path). 150k float64 elements, 3 steps with coupled weight
// decay, with and without amsgrad: both paths against PyTorch's update written element by
// element in double, and the same bits with 1 and 2 threads.
TEST(Adam, LargeParametersMatchTheFormulasWithOneAndTwoThreads) {
  const double lr = 0.01, b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = 0.1;
  for (bool amsgrad : {false, true}) {
    SCOPED_TRACE(amsgrad ? "amsgrad" : "adam");
    Generator gen(23);
    const Tensor init = randn({3, 50000}, Dtype::Float64, &gen);
    std::vector<Tensor> grads;
    for (int t = 0; t < 3; ++t) grads.push_back(randn({3, 50000}, Dtype::Float64, &gen));
    // Reference: g += wd p; m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g²; vmax = max(vmax, v);
    // p -= lr / (1 - b1^t) * m / (sqrt(v or vmax) / sqrt(1 - b2^t) + eps).
    Vec p = init.to_vector<double>(), m(p.size(), 0), v(p.size(), 0), vmax(p.size(), 0);
    for (int t = 1; t <= 3; ++t) {
      const Vec g = grads[t - 1].to_vector<double>();
      for (size_t i = 0; i < p.size(); ++i) {
        const double gi = g[i] + wd * p[i];
        m[i] = b1 * m[i] + (1 - b1) * gi;
        v[i] = b2 * v[i] + (1 - b2) * gi * gi;
        vmax[i] = std::max(vmax[i], v[i]);
        const double denom =
            std::sqrt(amsgrad ? vmax[i] : v[i]) / std::sqrt(1 - std::pow(b2, t)) + eps;
        p[i] -= lr / (1 - std::pow(b1, t)) * m[i] / denom;
      }
    }
    auto run = [&](int threads, bool contiguous) {
      tbb::task_arena arena(threads);
      return arena.execute([&] {
        Tensor x = contiguous ? init.clone() : init.t().contiguous().t();  // strides [1, 3]
        x.requires_grad_();
        EXPECT_EQ(x.is_contiguous(), contiguous);
        Adam opt({x}, {.lr = lr, .weight_decay = wd, .amsgrad = amsgrad});
        for (const Tensor& g : grads) {
          x.set_grad(contiguous ? g : g.t().contiguous().t());
          opt.step();
        }
        return x.contiguous().to_vector<double>();
      });
    };
    const Vec blocks = run(2, true);
    expect_near(from_vector(blocks, {static_cast<int64_t>(blocks.size())}), p, 1e-13);
    EXPECT_EQ(run(1, true), blocks);
    EXPECT_EQ(run(2, false), blocks);
    EXPECT_EQ(run(1, false), blocks);
  }
}

TEST(Adam, FirstStepMovesEachElementByLr) {
  // Step 1: m_hat = g, v_hat = g^2, so p -= lr * g / (|g| + eps) ~= lr * sign(g).
  Tensor p = param({1.0, 1.0});
  Adam opt({p}, {.lr = 0.01});
  set_grad(p, {3.0, -0.5});
  opt.step();
  expect_near(p, {1.0 - 0.01 * 3.0 / (3.0 + 1e-8), 1.0 + 0.01 * 0.5 / (0.5 + 1e-8)}, 1e-15);
}

TEST(AdamW, DefaultWeightDecayIsOneHundredth) {
  Tensor p = param({1.0});
  AdamW opt({p});
  EXPECT_EQ(opt.defaults().at("weight_decay"), 1e-2);
  Adam adam({param({1.0})});
  EXPECT_EQ(adam.defaults().at("weight_decay"), 0.0);
}

TEST(Optimizer, NonContiguousParameterUsesItsStrides) {
  Tensor base = from_vector(Vec{1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor p = base.t().detach();  // [3, 2], strides [1, 3]
  p.requires_grad_();
  ASSERT_FALSE(p.is_contiguous());
  const Vec p0 = p.contiguous().to_vector<double>();
  SGD opt({p}, {.lr = 0.5, .momentum = 0.9});
  const Tensor g = from_vector(Vec{1, 2, 3, 4, 5, 6}, {3, 2});  // contiguous grad
  p.set_grad(g);
  opt.step();
  opt.step();  // buf = 0.9 g + g = 1.9 g; p = p0 - 0.5 g - 0.95 g
  const Vec got = p.contiguous().to_vector<double>();
  for (size_t i = 0; i < 6; ++i) EXPECT_DOUBLE_EQ(got[i], p0[i] - 1.45 * (i + 1.0));
}

TEST(Optimizer, ParametersWithoutGradAreSkippedAndGetNoState) {
  Tensor a = param({1.0}), b = param({2.0});
  Adam opt({a, b});
  set_grad(a, {1.0});
  opt.step();
  EXPECT_NE(a.item<double>(), 1.0);
  EXPECT_EQ(b.item<double>(), 2.0);
  EXPECT_EQ(opt.find_state(b), nullptr);
  EXPECT_EQ(opt.state_dict().tensors.count("state.1.exp_avg"), 0u);
}

TEST(Optimizer, StepBumpsVersionAndRecordsNoGraph) {
  Tensor p = param({1.0});
  SGD opt({p}, {.lr = 0.1});
  set_grad(p, {1.0});
  const uint64_t v = p.version();
  opt.step();
  EXPECT_GT(p.version(), v);
  EXPECT_TRUE(p.is_leaf());
  EXPECT_TRUE(p.requires_grad());
}

TEST(Optimizer, ParamGroupsFillMissingOptionsFromDefaults) {
  Tensor a = param({1.0}), b = param({1.0});
  SGD opt(std::vector<ParamGroup>{{{a}, {{"lr", 1.0}}}, {{b}, {}}}, {.lr = 0.1, .momentum = 0.5});
  ASSERT_EQ(opt.param_groups().size(), 2u);
  EXPECT_EQ(opt.param_groups()[0].lr(), 1.0);
  EXPECT_EQ(opt.param_groups()[1].lr(), 0.1);
  EXPECT_EQ(opt.param_groups()[0].get("momentum"), 0.5);
  set_grad(a, {1.0});
  set_grad(b, {1.0});
  opt.step();
  EXPECT_DOUBLE_EQ(a.item<double>(), 0.0);
  EXPECT_DOUBLE_EQ(b.item<double>(), 0.9);
}

TEST(Optimizer, ValidatesOptionsAndParameters) {
  Tensor p = param({1.0});
  EXPECT_THROW(SGD({p}, {.lr = -1}), Error);
  EXPECT_THROW(SGD({p}, {.lr = 0.1, .nesterov = true}), Error);  // no momentum
  EXPECT_THROW(SGD({p}, {.lr = 0.1, .momentum = 0.9, .dampening = 0.1, .nesterov = true}), Error);
  EXPECT_THROW(Adam({p}, {.beta1 = 1.0}), Error);
  EXPECT_THROW(Adam({p}, {.eps = -1}), Error);
  EXPECT_THROW(SGD({p, p}), Error);                                          // twice
  EXPECT_THROW(SGD(std::vector<ParamGroup>{{{p}, {{"lrr", 1.0}}}}), Error);  // unknown option
  EXPECT_THROW(SGD(std::vector<Tensor>{}), Error);
  EXPECT_THROW(SGD({from_vector(std::vector<int64_t>{1, 2})}), DtypeError);
  Tensor non_leaf = p * 2.0;
  EXPECT_THROW(SGD({non_leaf}), Error);
  try {
    SGD({p}, {.lr = 0.1, .nesterov = true});
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Nesterov momentum requires a momentum"),
              std::string::npos);
  }
}

TEST(Optimizer, ZeroGradDefaultsToZeroFillLikeTorch113) {
  Tensor p = param({1.0, 2.0});
  SGD opt({p});
  set_grad(p, {3.0, 4.0});
  opt.zero_grad();
  ASSERT_TRUE(p.grad().defined());
  EXPECT_EQ(p.grad().to_vector<double>(), (Vec{0.0, 0.0}));
  opt.zero_grad(/*set_to_none=*/true);
  EXPECT_FALSE(p.grad().defined());
}

TEST(Optimizer, StepWithClosureReturnsItsLoss) {
  Tensor p = param({2.0});
  SGD opt({p}, {.lr = 0.25});
  const Tensor loss = opt.step([&] {
    opt.zero_grad();
    Tensor l = p * p;  // d/dp = 2p = 4
    l.backward();
    return l;
  });
  EXPECT_DOUBLE_EQ(loss.item<double>(), 4.0);
  EXPECT_DOUBLE_EQ(p.item<double>(), 1.0);
}

// Runs `before` steps, round-trips the state into a fresh optimizer over a copy of the
// parameters, then checks both continue bit-identically.
template <typename Make>
void check_round_trip(Make make, Dtype dtype) {
  Tensor a = param(kStart, dtype), b = param({0.5, 0.25}, dtype);
  auto opt = make(std::vector<Tensor>{a, b});
  for (int t = 0; t < 2; ++t) {
    set_grad(a, kGrads[t]);
    set_grad(b, {kGrads[t][0], kGrads[t][2]});
    opt->step();
  }
  opt->param_groups()[0].set_lr(opt->param_groups()[0].lr() * 0.5);  // as a scheduler would
  const StateDict dict = opt->state_dict();
  Tensor a2 = a.detach().clone(), b2 = b.detach().clone();
  a2.requires_grad_();
  b2.requires_grad_();
  auto opt2 = make(std::vector<Tensor>{a2, b2});
  opt2->load_state_dict(dict);
  EXPECT_EQ(opt2->param_groups()[0].lr(), opt->param_groups()[0].lr());
  for (int t = 0; t < 3; ++t) {
    for (auto [x, y] : {std::pair{a, a2}, std::pair{b, b2}}) {
      const Vec g = x.numel() == 3 ? kGrads[2 - t] : Vec{kGrads[t][1], -kGrads[t][0]};
      set_grad(x, g);
      set_grad(y, g);
    }
    opt->step();
    opt2->step();
    EXPECT_EQ(a.to_vector<double>(), a2.to_vector<double>());
    EXPECT_EQ(b.to_vector<double>(), b2.to_vector<double>());
  }
  EXPECT_EQ(opt->state_dict().metadata, opt2->state_dict().metadata);
}

TEST(Optimizer, StateDictRoundTripContinuesBitExactly) {
  for (Dtype dtype : {Dtype::Float32, Dtype::Float64}) {
    check_round_trip(
        [](std::vector<Tensor> ps) {
          return std::make_unique<SGD>(ps,
                                       SGDOptions{.lr = 0.1, .momentum = 0.9, .nesterov = true});
        },
        dtype);
    check_round_trip(
        [](std::vector<Tensor> ps) {
          return std::make_unique<Adam>(ps, AdamOptions{.lr = 0.01, .amsgrad = true});
        },
        dtype);
    check_round_trip([](std::vector<Tensor> ps) { return std::make_unique<AdamW>(ps); }, dtype);
  }
}

TEST(Optimizer, StateDictLayout) {
  Tensor a = param({1.0, 2.0}), b = param({3.0});
  Adam opt(std::vector<ParamGroup>{{{a}, {}}, {{b}, {{"lr", 0.5}}}}, {.lr = 0.1});
  set_grad(a, {1.0, 1.0});
  set_grad(b, {1.0});
  opt.step();
  const StateDict d = opt.state_dict();
  EXPECT_EQ(d.metadata.at("optimizer"), "Adam");
  EXPECT_EQ(d.metadata.at("param_groups"), "2");
  EXPECT_EQ(d.metadata.at("param_groups.0.params"), "0");
  EXPECT_EQ(d.metadata.at("param_groups.1.params"), "1");
  EXPECT_EQ(d.metadata.at("param_groups.0.lr"), "0.1");
  EXPECT_EQ(d.metadata.at("param_groups.1.lr"), "0.5");
  EXPECT_EQ(d.metadata.at("param_groups.0.beta2"), "0.999");
  EXPECT_EQ(d.tensors.at("state.1.step").item<int64_t>(), 1);
  EXPECT_EQ(d.tensors.at("state.0.exp_avg").sizes(), (Shape{2}));
  EXPECT_EQ(d.tensors.count("state.0.max_exp_avg_sq"), 0u);
  // Clones: stepping again does not change the saved dict.
  const double saved = d.tensors.at("state.0.exp_avg").to_vector<double>()[0];
  opt.step();
  EXPECT_EQ(d.tensors.at("state.0.exp_avg").to_vector<double>()[0], saved);
}

TEST(Optimizer, LoadStateDictRejectsMismatchesAndChangesNothing) {
  Tensor a = param({1.0, 2.0});
  SGD sgd({a}, {.lr = 0.1, .momentum = 0.9});
  set_grad(a, {1.0, 1.0});
  sgd.step();
  const StateDict d = sgd.state_dict();
  Adam adam({param({1.0, 2.0})});
  EXPECT_THROW(adam.load_state_dict(d), Error);
  SGD two_params({param({1.0, 2.0}), param({1.0})}, {.lr = 0.2, .momentum = 0.9});
  EXPECT_THROW(two_params.load_state_dict(d), Error);
  SGD other_shape({param({1.0, 2.0, 3.0})}, {.lr = 0.2, .momentum = 0.9});
  EXPECT_THROW(other_shape.load_state_dict(d), ShapeError);
  EXPECT_EQ(other_shape.param_groups()[0].lr(), 0.2);  // unchanged
  StateDict bad = d;
  bad.tensors["state.7.momentum_buffer"] = zeros({2}, Dtype::Float64);
  SGD same({param({1.0, 2.0})}, {.lr = 0.2, .momentum = 0.9});
  EXPECT_THROW(same.load_state_dict(bad), Error);
  bad = d;
  bad.metadata["param_groups.0.lr"] = "fast";
  EXPECT_THROW(same.load_state_dict(bad), Error);
  bad = d;
  bad.metadata.erase("param_groups.0.momentum");
  EXPECT_THROW(same.load_state_dict(bad), Error);
  EXPECT_EQ(same.param_groups()[0].lr(), 0.2);
  same.load_state_dict(d);
  EXPECT_EQ(same.param_groups()[0].lr(), 0.1);
}

// A whole training checkpoint through nn::save/nn::load (safetensors): model, optimizer and
// scheduler state restored into fresh objects continue bit-identically.
TEST(Optimizer, CheckpointThroughSafetensorsContinuesBitExactly) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("aclgrad_optim_ckpt_" + std::to_string(::getpid()) + ".safetensors"))
                               .string();
  const Tensor x = from_vector(Vec{0.5, -1, 2, 0.25, 1.5, -0.75}, {3, 2}, Dtype::Float32);
  const Tensor y = from_vector(Vec{1, 0, -1}, {3, 1}, Dtype::Float32);
  auto train = [&](nn::Linear& model, Optimizer& opt, LRScheduler& sched, int steps) {
    for (int s = 0; s < steps; ++s) {
      opt.zero_grad();
      mse_loss(model.forward(x), y).backward();
      opt.step();
      sched.step();
    }
  };
  manual_seed(3);
  nn::Linear model(2, 1);
  Adam opt(model.parameters(), {.lr = 0.05, .amsgrad = true});
  OneCycleLR sched(opt, {.max_lr = {0.1}, .total_steps = 20});
  train(model, opt, sched, 4);
  StateDict o = opt.state_dict();
  for (const auto& [k, v] : sched.state_dict().metadata) o.metadata[k] = v;
  nn::save(model, path, o.tensors, o.metadata);

  manual_seed(99);  // different initial weights: everything must come from the file
  nn::Linear model2(2, 1);
  Adam opt2(model2.parameters(), {.lr = 0.05, .amsgrad = true});
  OneCycleLR sched2(opt2, {.max_lr = {0.1}, .total_steps = 20});
  const nn::CheckpointExtras extras = nn::load(model2, path);
  opt2.load_state_dict({extras.tensors, extras.metadata});
  sched2.load_state_dict({{}, extras.metadata});
  std::filesystem::remove(path);

  train(model, opt, sched, 5);
  train(model2, opt2, sched2, 5);
  const auto p1 = model.parameters(), p2 = model2.parameters();
  ASSERT_EQ(p1.size(), p2.size());
  for (size_t i = 0; i < p1.size(); ++i) {
    EXPECT_EQ(p1[i].to_vector<float>(), p2[i].to_vector<float>()) << "parameter " << i;
  }
  EXPECT_EQ(sched.get_last_lr(), sched2.get_last_lr());
}

}  // namespace
}  // namespace aclgrad::optim
