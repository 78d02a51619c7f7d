// gradient_penalty: a WGAN-GP-style critic (Gulrajani et al., 2017) made of convolutions, trained
// to tell "real" images from "fake" ones under a gradient penalty:
//
//   L = mean D(fake) - mean D(real) + lambda * mean (||grad_x D(x_hat)||_2 - 1)^2,
//   x_hat = e * real + (1 - e) * fake,  e ~ U(0, 1) per sample.
//
// The penalty differentiates D's input gradient with respect to D's weights: a backward through
// a backward (create_graph), i.e. conv double backward (ops/conv_acl.h). The data are generated:
// "real" images are smooth blobs, "fake" ones the same blobs with noise and a shift, so the
// critic has something to learn. Every few steps it prints the Wasserstein estimate
// (mean D(real) - mean D(fake)) and the penalty term.
//
//   gradient_penalty --steps 200
//   gradient_penalty --smoke --steps 60   (exit 1 unless the penalty went down and gradgradcheck
//                                          passes on the critic in float64)
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "examples/common/command_line.h"
#include "autograd/engine.h"
#include "autograd/gradcheck.h"
#include "nn/optim.h"
#include "ops/ops.h"
#include "tensor/creation.h"
#include "tensor/random.h"

using namespace aclgrad;
using autograd::tensor_list;

namespace {

constexpr int64_t kSize = 16;  // images [N, 1, 16, 16]

// The critic's parameters: conv 1 -> 8 (3x3, stride 2), conv 8 -> 16 (3x3, stride 2), then a
// linear read-out of the 16 x 4 x 4 features to one score.
struct Critic {
  tensor_list params;  // w1, b1, w2, b2, w3 [1, 256], b3

  static Critic init(Generator& gen, Dtype dtype) {
    auto uniform = [&](const Shape& s, int64_t fan_in) {
      const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
      return sub(mul(rand(s, dtype, &gen), 2 * bound), bound).detach().requires_grad_();
    };
    return Critic{{uniform({8, 1, 3, 3}, 9), uniform({8}, 9), uniform({16, 8, 3, 3}, 72),
                   uniform({16}, 72), uniform({1, 256}, 256), uniform({1}, 256)}};
  }
};

// D(x) for x [N, 1, 16, 16]: one score per sample, [N]. leaky_relu keeps a gradient everywhere.
Tensor critic(const tensor_list& p, const Tensor& x) {
  Tensor h = leaky_relu(conv2d(x, p[0], p[1], {.stride = 2, .padding = 1}), 0.2);  // [N, 8, 8, 8]
  h = leaky_relu(conv2d(h, p[2], p[3], {.stride = 2, .padding = 1}), 0.2);         // [N, 16, 4, 4]
  return reshape(linear(flatten(h, 1), p[4], p[5]), {x.size(0)});
}

// A batch of "real" blobs (a Gaussian bump at a random place) and of "fake" ones (the same kind
// of bump, shifted and noisy).
Tensor blobs(Generator& gen, int64_t n, bool fake) {
  std::vector<float> v(static_cast<size_t>(n * kSize * kSize));
  const std::vector<float> u = rand({n, 3}, Dtype::Float32, &gen).to_vector<float>();
  const std::vector<float> noise =
      randn({n * kSize * kSize}, Dtype::Float32, &gen).to_vector<float>();
  for (int64_t i = 0; i < n; ++i) {
    const double cy = 4 + 8 * u[3 * i], cx = 4 + 8 * u[3 * i + 1], r = 2 + 2 * u[3 * i + 2];
    for (int64_t y = 0; y < kSize; ++y)
      for (int64_t x = 0; x < kSize; ++x) {
        const double d2 =
            (y - cy) * (y - cy) + (x - cx - (fake ? 3 : 0)) * (x - cx - (fake ? 3 : 0));
        const size_t k = static_cast<size_t>((i * kSize + y) * kSize + x);
        v[k] = static_cast<float>(std::exp(-d2 / (2 * r * r)) + (fake ? 0.3 * noise[k] : 0.0));
      }
  }
  return from_vector(v, {n, 1, kSize, kSize}, Dtype::Float32);
}

// mean (||grad_x D(x_hat)||_2 - 1)^2 over the batch, as a differentiable function of the
// critic's parameters (create_graph).
Tensor gradient_penalty(const tensor_list& p, const Tensor& real, const Tensor& fake,
                        Generator& gen) {
  const int64_t n = real.size(0);
  const Tensor e = rand({n, 1, 1, 1}, real.dtype(), &gen);
  const Tensor x_hat = add(mul(e, real), mul(rsub(e, 1.0), fake)).detach().requires_grad_();
  const Tensor d = critic(p, x_hat);
  const Tensor g = autograd::grad({sum(d)}, {x_hat}, {}, std::nullopt, /*create_graph=*/true)[0];
  const Tensor norm = sqrt(add(sum(mul(g, g), {1, 2, 3}), 1e-12));
  const Tensor dev = sub(norm, 1.0);
  return mean(mul(dev, dev));
}

// gradgradcheck of the critic in float64 on two small images: its double backward (the one the
// penalty's gradient uses) against finite differences.
bool check_critic(uint64_t seed) {
  Generator gen(seed);
  const Critic c = Critic::init(gen, Dtype::Float64);
  const Tensor x = rand({2, 1, kSize, kSize}, Dtype::Float64, &gen).requires_grad_();
  tensor_list inputs = {x, c.params[0], c.params[2]};  // input and both conv weights
  return autograd::gradgradcheck(
      [&](const tensor_list& in) {
        tensor_list p = c.params;
        p[0] = in[1], p[2] = in[2];
        return critic(p, in[0]);
      },
      inputs);
}

}  // namespace

int main(int argc, char** argv) {
  examples::CommandLine cli{"WGAN-GP-style convolutional critic trained with a gradient penalty"};
  int steps = 200, batch = 64;
  double lambda = 10, lr = 1e-3;
  uint64_t seed = 1;
  bool smoke = false;
  cli.option("--steps", steps, "training steps", examples::ValueCheck::positive());
  cli.option("--batch-size", batch, "samples per step (real and fake each)",
             examples::ValueCheck::positive());
  cli.option("--lambda", lambda, "gradient penalty weight", examples::ValueCheck::non_negative());
  cli.option("--lr", lr, "Adam learning rate", examples::ValueCheck::positive());
  cli.option("--seed", seed, "random seed");
  cli.flag("--smoke", smoke,
           "exit 1 unless the penalty went down and gradgradcheck passes on the critic");
  if (auto status = cli.parse(argc, argv)) return *status;

  Generator gen(seed);
  Critic c = Critic::init(gen, Dtype::Float32);
  optim::Adam opt(c.params, {.lr = lr, .beta1 = 0.5, .beta2 = 0.9});  // WGAN-GP's betas
  std::vector<double> penalties;
  for (int step = 1; step <= steps; ++step) {
    const Tensor real = blobs(gen, batch, false), fake = blobs(gen, batch, true);
    const Tensor wasserstein = sub(mean(critic(c.params, real)), mean(critic(c.params, fake)));
    const Tensor penalty = gradient_penalty(c.params, real, fake, gen);
    const Tensor loss = add(neg(wasserstein), mul(penalty, lambda));
    opt.zero_grad();
    loss.backward();  // reaches the weights through the penalty's conv double backward
    opt.step();
    penalties.push_back(penalty.item<double>());
    if (step == 1 || step % 20 == 0 || step == steps)
      std::printf("step %4d  wasserstein estimate %8.4f  gradient penalty %8.5f\n", step,
                  wasserstein.item<double>(), penalties.back());
  }
  if (!smoke) return 0;
  // The penalty starts far from zero (a random critic's input gradients are far from unit norm)
  // and training pulls it down: compare the first and last tenth of the steps.
  const size_t tenth = std::max<size_t>(1, penalties.size() / 10);
  double first = 0, last = 0;
  for (size_t i = 0; i < tenth; ++i)
    first += penalties[i], last += penalties[penalties.size() - 1 - i];
  const bool down = last < first;
  const bool grads_ok = check_critic(seed);
  std::printf("smoke: penalty %s (first %.5f, last %.5f); gradgradcheck %s\n",
              down ? "went down" : "did NOT go down", first / tenth, last / tenth,
              grads_ok ? "passed" : "FAILED");
  return down && grads_ok ? 0 : 1;
}
