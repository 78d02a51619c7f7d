#include "examples/train_fashion_mnist/profile.h"

#include <time.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "autograd/autocast_mode.h"
#include "examples/train_fashion_mnist/trainer.h"
#include "nn/transforms.h"
#include "ops/ops.h"
#include "tensor/creation.h"
#include "tensor/random.h"

namespace aclgrad::fmnist {

namespace {

using Clock = std::chrono::steady_clock;

// CPU time of the whole process (all threads), in ms. On a loaded machine wall time measures
// the other processes too; CPU time measures our work (an idle machine's wall time is between
// cpu / threads and cpu).
double cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return 1e3 * static_cast<double>(ts.tv_sec) + 1e-6 * static_cast<double>(ts.tv_nsec);
}

// Wall and CPU milliseconds since a mark.
struct Mark {
  Clock::time_point wall = Clock::now();
  double cpu = cpu_ms();
};
struct Span {
  double wall = 0, cpu = 0;
  Span& operator+=(const Span& o) { return wall += o.wall, cpu += o.cpu, *this; }
};
Span since(const Mark& m) {
  return {std::chrono::duration<double, std::milli>(Clock::now() - m.wall).count(),
          cpu_ms() - m.cpu};
}

}  // namespace

int run_profile(const Config& config, int64_t batches) {
  check_data_dir(config.data_dir);
  auto train = std::make_shared<data::TensorDataset>(data::load_mnist(config.data_dir, true));
  data::DataLoader loader(
      train,
      {.batch_size = config.batch_size,
       .shuffle = true,
       .seed = config.seed,
       .prefetch = 0,  // synchronous, so "data" is the real cost of making a batch
       .transform = data::transforms::compose({data::transforms::RandomHorizontalFlip(),
                                               data::transforms::Normalize({kMean}, {kStd})})});
  manual_seed(config.seed);
  auto model = make_model(config.dropout);
  optim::AdamWOptions adam;
  adam.lr = config.lr;
  optim::AdamW opt(model->parameters(), adam);
  const Precision precision(config.precision);
  amp::GradScaler scaler({.enabled = precision.loss_scaling});

  // 1. Whole steps (the first one is a warm-up and not counted).
  std::map<std::string, Span> phase;
  const char* order[] = {"data", "forward", "loss", "backward", "optimizer"};
  int64_t counted = 0;
  auto it = loader.begin();
  for (int64_t b = 0; b <= batches && it != loader.end(); ++b) {
    Mark t;
    data::Example batch = *it;
    Span data_ms = since(t);
    Tensor logits, loss;
    Span fwd, loss_ms;
    {
      AutocastGuard autocast(precision.dtype, precision.autocast);
      t = Mark();
      logits = (*model)(batch.data);
      fwd = since(t);
      t = Mark();
      loss = cross_entropy(logits, batch.target);
      loss_ms = since(t);
    }
    t = Mark();
    opt.zero_grad();
    scaler.scale(loss).backward();
    const Span bwd = since(t);
    t = Mark();
    scaler.step(opt);
    scaler.update();
    const Span step_ms = since(t);
    t = Mark();
    ++it;
    data_ms += since(t);
    if (b == 0) continue;
    ++counted;
    phase["data"] += data_ms, phase["forward"] += fwd, phase["loss"] += loss_ms;
    phase["backward"] += bwd, phase["optimizer"] += step_ms;
  }
  Span total;
  for (const auto& [k, v] : phase) total += v;
  const double n = static_cast<double>(counted), bs = static_cast<double>(config.batch_size);
  std::printf(
      "training step, batch %lld, precision %s, mean of %lld steps (wall ms, CPU ms of all "
      "threads):\n",
      static_cast<long long>(config.batch_size), config.precision.c_str(),
      static_cast<long long>(counted));
  for (const char* k : order) {
    std::printf("  %-10s %8.2f wall %8.2f cpu  %5.1f%% of cpu\n", k, phase[k].wall / n,
                phase[k].cpu / n, 100 * phase[k].cpu / total.cpu);
  }
  std::printf(
      "  %-10s %8.2f wall %8.2f cpu  -> %.0f samples/s (wall), %.0f samples per CPU-second\n",
      "total", total.wall / n, total.cpu / n, 1000.0 * bs * n / total.wall,
      1000.0 * bs * n / total.cpu);

  // 2. Layer by layer: forward, then backward of that layer alone with a random gradient.
  std::printf("per layer in %s (forward / backward, ms per batch of %lld; output dtype):\n",
              config.precision.c_str(), static_cast<long long>(config.batch_size));
  Tensor x = loader.batch(0, 0).data;
  std::map<std::string, std::pair<double, double>> by_kind;  // CPU ms
  double sum_f = 0, sum_b = 0;
  const int reps = static_cast<int>(std::max<int64_t>(batches / 2, 2));
  int64_t index = 0;
  for (const auto& layer : *model) {
    Tensor in = x.detach();
    if (index++ > 0) in.requires_grad_(true);  // the first conv needs no input gradient
    Span f, bw;
    Tensor y;
    for (int r = 0; r <= reps; ++r) {
      Mark t;
      {
        AutocastGuard autocast(precision.dtype, precision.autocast);
        y = (*layer)(in);
      }
      const Span fm = since(t);
      Tensor g = randn(y.sizes()).to(y.dtype());
      t = Mark();
      if (y.requires_grad()) y.backward(g);
      const Span bm = since(t);
      if (r > 0) f += fm, bw += bm;
      if (in.requires_grad()) in.zero_grad();
    }
    const double fc = f.cpu / reps, bc = bw.cpu / reps;
    sum_f += fc, sum_b += bc;
    by_kind[layer->type_name()].first += fc, by_kind[layer->type_name()].second += bc;
    std::string name = layer->repr();
    if (name.size() > 44) name = name.substr(0, 41) + "...";
    std::printf("  %-2lld %-44s wall %7.2f / %7.2f  cpu %7.2f / %7.2f  %s\n",
                static_cast<long long>(index - 1), name.c_str(), f.wall / reps, bw.wall / reps, fc,
                bc, dtype_name(y.dtype()));
    x = y.detach();
  }
  std::printf("by layer type (CPU ms forward + backward, share of the layer total):\n");
  for (const auto& [kind, fb] : by_kind) {
    std::printf("  %-12s %8.2f + %8.2f ms  %5.1f%%\n", kind.c_str(), fb.first, fb.second,
                100 * (fb.first + fb.second) / (sum_f + sum_b));
  }
  std::printf("  %-12s %8.2f + %8.2f ms\n", "all layers", sum_f, sum_b);
  return 0;
}

}  // namespace aclgrad::fmnist
