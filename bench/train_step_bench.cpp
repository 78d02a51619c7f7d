// Google Benchmark of one training step of the main job's CNN (examples/train_fashion_mnist's
// make_model: Conv+BN+ReLU+MaxPool x2, Linear+ReLU+Dropout, Linear): zero_grad, forward,
// cross-entropy, backward and an Adam step (lr 1e-3) on a fixed random batch [B, 1, 28, 28] with
// random labels in 0..9 (seeded), model in training mode.
//
// Cases train_step/batch:B/threads:T/bf16:P run inside a oneTBB task_arena of T threads (every
// parallel kernel and libaclnn's executors size themselves from the calling arena). Counters, from
// the wall time of the timed loop (the work runs on TBB threads, so the main thread's CPU time is
// not the denominator): samples_per_s and wall_ms per step; and samples_per_cpu_s from the CPU time
// of the whole process (on a machine shared with other jobs, the fairer measure of the work
// itself, exact for 1 thread). bf16:1 runs forward and loss under AutocastGuard(BFloat16)
// (PyTorch's torch.autocast("cpu", torch.bfloat16); parameters and Adam stay fp32).
// bench/train_step_pytorch.py runs the same step in PyTorch, alternating with this binary.
#include <benchmark/benchmark.h>
#include <sys/resource.h>
#include <tbb/task_arena.h>

#include <chrono>

#include "autograd/autocast_mode.h"
#include "examples/train_fashion_mnist/model.h"
#include "nn/optim.h"
#include "ops/loss.h"
#include "tensor/random.h"

namespace {

using namespace aclgrad;

// User + system CPU time of the whole process (all threads), in seconds.
double process_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + 1e-6 * t.tv_usec; };
  return seconds(u.ru_utime) + seconds(u.ru_stime);
}

void train_step(benchmark::State& state) {
  const int64_t batch = state.range(0);
  const int threads = static_cast<int>(state.range(1));
  const bool bf16 = state.range(2) != 0;
  tbb::task_arena arena(threads);
  manual_seed(1);  // weights, data, labels and dropout masks: the same for every run
  auto model = fmnist::make_model(0.25);
  model->train();
  optim::Adam opt(model->parameters(), {.lr = 1e-3});
  const Tensor x = randn({batch, 1, 28, 28});
  const Tensor y = randint(0, 10, {batch});
  auto step = [&] {
    arena.execute([&] {
      opt.zero_grad();
      Tensor loss;
      {
        AutocastGuard autocast(Dtype::BFloat16, bf16);
        loss = cross_entropy((*model)(x), y);
      }
      loss.backward();
      opt.step();
    });
  };
  for (int i = 0; i < 3; ++i) step();  // warm-up: optimizer state, allocator, thread start
  const double cpu_start = process_cpu_seconds();
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) step();
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double cpu = process_cpu_seconds() - cpu_start;
  const double iters = static_cast<double>(state.iterations());
  state.counters["samples_per_s"] = static_cast<double>(batch) * iters / wall;
  state.counters["wall_ms"] = wall * 1e3 / iters;
  state.counters["samples_per_cpu_s"] = static_cast<double>(batch) * iters / cpu;
}

BENCHMARK(train_step)
    ->ArgNames({"batch", "threads", "bf16"})
    ->ArgsProduct({{64, 128}, {2, 1}, {0, 1}})
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
