// Google Benchmark of linear (x · wᵀ, the framework's matmul underneath) in float32 (OpenBLAS
// sgemm), bfloat16 and float16 (libaclnn's aclnnMatmul, operands converted while packed): the
// forward alone and forward + backward (dx = g · w, dw = gᵀ · x, three products).
//
// Cases linear/<pass>/dtype:D/batch:B/in:I/out:O/threads:T, D = 0 float32, 1 bfloat16,
// 2 float16; shapes: the main job's CNN's two linear layers at batch 128 (3136 -> 128,
// 128 -> 10) and a larger square one (1024^3). Each runs inside a oneTBB task_arena of T threads.
// Counters: gflops (2 * B * I * O per product, from the wall time of the timed loop) and wall_ms
// per iteration.
#include <benchmark/benchmark.h>
#include <tbb/task_arena.h>

#include <chrono>

#include "ops/elementwise.h"
#include "ops/linear.h"
#include "tensor/random.h"

namespace {

using namespace aclgrad;

Dtype dtype_of(int64_t code) {
  return code == 1 ? Dtype::BFloat16 : code == 2 ? Dtype::Float16 : Dtype::Float32;
}

void run_linear(benchmark::State& state, bool backward) {
  const Dtype dtype = dtype_of(state.range(0));
  const int64_t batch = state.range(1), in = state.range(2), out = state.range(3);
  tbb::task_arena arena(static_cast<int>(state.range(4)));
  manual_seed(1);
  const Tensor x = randn({batch, in}).to(dtype).requires_grad_(backward);
  const Tensor w = mul(randn({out, in}), 1.0 / 32).to(dtype).requires_grad_(backward);
  const Tensor g = randn({batch, out}).to(dtype);
  auto step = [&] {
    arena.execute([&] {
      const Tensor y = linear(x, w);
      if (backward) y.backward(g);
      benchmark::DoNotOptimize(y.data_ptr());
    });
  };
  for (int i = 0; i < 2; ++i) step();  // warm-up: workspace, thread start
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) step();
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double iters = static_cast<double>(state.iterations());
  const double products = backward ? 3 : 1;
  state.counters["gflops"] = products * 2.0 * batch * in * out * iters / wall * 1e-9;
  state.counters["wall_ms"] = wall * 1e3 / iters;
}

void linear_forward(benchmark::State& state) {
  run_linear(state, false);
}
void linear_forward_backward(benchmark::State& state) {
  run_linear(state, true);
}

void shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"dtype", "batch", "in", "out", "threads"});
  for (int64_t threads : {1, 2})
    for (int64_t dtype : {0, 1, 2})
      for (const auto& [batch, in, out] : {std::tuple<int64_t, int64_t, int64_t>{128, 3136, 128},
                                           {128, 128, 10},
                                           {1024, 1024, 1024}})
        b->Args({dtype, batch, in, out, threads});
  b->Unit(benchmark::kMillisecond);
}

BENCHMARK(linear_forward)->Apply(shapes);
BENCHMARK(linear_forward_backward)->Apply(shapes);

}  // namespace

BENCHMARK_MAIN();
