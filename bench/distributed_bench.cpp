// Google Benchmark of distributed training on MPI, run under mpirun (rank 0 reports):
//
//   mpirun -np 2 build/bench/distributed_bench --benchmark_filter=allreduce
//   mpirun -np 1 build/bench/distributed_bench --benchmark_filter=train_step   # threads 1 and 2
//   mpirun -np 2 build/bench/distributed_bench --benchmark_filter='train_step.*threads:1'
//
// allreduce_mpi/bytes:N      blocking MPI_Allreduce of N bytes of float32 (what osu_allreduce
//                            measures), the library's own ceiling;
// allreduce_group/bytes:N    ProcessGroup::allreduce_sum (MPI_Iallreduce polled with MPI_Test,
//                            the path DistributedDataParallel takes).
//   Counters: algbw_GBps = bytes / time; busbw_GBps = algbw * 2 (n - 1) / n, the bytes each
//   rank moves in a ring all-reduce per second (nccl-tests' convention).
// train_step/global_batch:B/threads:T   one training step of the example CNN
//   (examples/train_fashion_mnist's make_model; Adam) on a global batch of B split over the n
//   ranks, each rank running T threads (a oneTBB arena), wrapped in DistributedDataParallel
//   (25 MB buckets). Counters: samples_per_s (global), wall_ms per step, grad_bytes all-reduced
//   per step, wait_ms (time backward waited for all-reduces after the last gradient),
//   samples_per_cpu_s (global samples per CPU second summed over the ranks' processes: on a
//   machine shared with other jobs, the fairer measure of the work and its overhead), and, on
//   paper, the time a ring all-reduce of grad_bytes between 2 machines would take on a
//   10/25/100 Gbit/s link (bandwidth term only: 2 (m - 1) / m * bytes / rate with m = 2).
//
// Every case runs a fixed number of iterations (ranks must call the same collectives).
#include <benchmark/benchmark.h>
#include <mpi.h>
#include <sys/resource.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <chrono>
#include <utility>
#include <vector>

#include "examples/train_fashion_mnist/model.h"
#include "nn/distributed/distributed_data_parallel.h"
#include "nn/optim.h"
#include "ops/loss.h"
#include "tensor/creation.h"
#include "tensor/random.h"

namespace {

using namespace aclgrad;
using Clock = std::chrono::steady_clock;

// User + system CPU time of this process (all its threads), in seconds.
double process_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + 1e-6 * t.tv_usec; };
  return seconds(u.ru_utime) + seconds(u.ru_stime);
}

std::shared_ptr<distributed::ProcessGroup> group() {
  return distributed::ProcessGroup::init();
}

void set_bandwidth(benchmark::State& state, double bytes, double seconds_per_op) {
  const double n = group()->size();
  const double algbw = bytes / seconds_per_op / 1e9;
  state.counters["algbw_GBps"] = algbw;
  state.counters["busbw_GBps"] = algbw * 2 * (n - 1) / n;
  state.counters["us_per_op"] = seconds_per_op * 1e6;
}

// Times `op` over the state's iterations on every rank, aligned by a barrier.
template <typename Op>
double seconds_per_op(benchmark::State& state, Op op) {
  op();  // warm-up (connection set-up, first-touch of the buffer)
  group()->barrier();
  const auto start = Clock::now();
  for (auto _ : state) op();
  const double wall = std::chrono::duration<double>(Clock::now() - start).count();
  return wall / static_cast<double>(state.iterations());
}

void allreduce_mpi(benchmark::State& state) {
  const int64_t bytes = state.range(0);
  Tensor t = ones({bytes / 4});
  const double s = seconds_per_op(state, [&] {
    MPI_Allreduce(MPI_IN_PLACE, t.data_ptr(), static_cast<int>(t.numel()), MPI_FLOAT, MPI_SUM,
                  MPI_COMM_WORLD);
  });
  set_bandwidth(state, static_cast<double>(bytes), s);
}

void allreduce_group(benchmark::State& state) {
  const int64_t bytes = state.range(0);
  Tensor t = ones({bytes / 4});
  const double s = seconds_per_op(state, [&] { group()->allreduce_sum(t); });
  set_bandwidth(state, static_cast<double>(bytes), s);
}

void train_step(benchmark::State& state) {
  const int64_t global_batch = state.range(0);
  const int threads = static_cast<int>(state.range(1));
  const int ranks = group()->size();
  if (global_batch % ranks != 0) {
    state.SkipWithError("global batch not divisible by the number of ranks");
    return;
  }
  tbb::task_arena arena(threads);
  manual_seed(1);
  auto model = fmnist::make_model(0.25);
  auto ddp = std::make_shared<nn::DistributedDataParallel>(model, group());
  optim::Adam opt(model->parameters(), {.lr = 1e-3});
  Generator gen(100 + static_cast<uint64_t>(group()->rank()));
  const Tensor x = randn({global_batch / ranks, 1, 28, 28}, Dtype::Float32, &gen);
  const Tensor y = randint(0, 10, {global_batch / ranks}, Dtype::Int64, &gen);
  double wait = 0;
  const double cpu_start = process_cpu_seconds();
  const double s = seconds_per_op(state, [&] {
    arena.execute([&] {
      opt.zero_grad();
      Tensor loss = cross_entropy((*ddp)(x), y);
      loss.backward();
      opt.step();
    });
    wait += ddp->last_backward_stats().wait.count();
  });
  Tensor cpu = full({1}, process_cpu_seconds() - cpu_start, Dtype::Float64);
  group()->allreduce_sum(cpu);  // CPU seconds of all ranks (warm-up step included)
  const double steps = static_cast<double>(state.iterations() + 1);
  state.counters["samples_per_cpu_s"] =
      static_cast<double>(global_batch) * steps / cpu.item<double>();
  double grad_bytes = 0;
  for (const Tensor& p : model->parameters()) grad_bytes += static_cast<double>(p.numel() * 4);
  state.counters["ranks"] = ranks;
  state.counters["samples_per_s"] = static_cast<double>(global_batch) / s;
  state.counters["wall_ms"] = s * 1e3;
  state.counters["grad_bytes"] = grad_bytes;
  state.counters["wait_ms"] = wait * 1e3 / static_cast<double>(state.iterations() + 1);
  for (double gbit : {10.0, 25.0, 100.0}) {
    const double seconds = grad_bytes / (gbit * 1e9 / 8);  // 2 (m - 1) / m = 1 for m = 2
    state.counters["paper_" + std::to_string(static_cast<int>(gbit)) + "Gbit_ms"] = seconds * 1e3;
  }
}

BENCHMARK(train_step)
    ->ArgNames({"global_batch", "threads"})
    ->ArgsProduct({{128}, {1, 2}})
    ->Iterations(10)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// Ranks other than 0 run the same cases silently.
class NullReporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

}  // namespace

int main(int argc, char** argv) {
  // 1 KB .. 64 MB; iterations move ~256 MB per case (between 10 and 2000).
  for (int64_t bytes = 1024; bytes <= (64 << 20); bytes *= 4) {
    const int64_t iterations = std::clamp<int64_t>((256 << 20) / bytes, 10, 2000);
    using Case = std::pair<const char*, void (*)(benchmark::State&)>;
    for (const Case& c :
         {Case{"allreduce_mpi", allreduce_mpi}, Case{"allreduce_group", allreduce_group}}) {
      benchmark::RegisterBenchmark(c.first, c.second)
          ->ArgName("bytes")
          ->Arg(bytes)
          ->Iterations(iterations)
          ->UseRealTime();
    }
  }
  benchmark::Initialize(&argc, argv);
  auto g = group();
  if (g->rank() == 0) {
    benchmark::RunSpecifiedBenchmarks();
  } else {
    NullReporter quiet;
    benchmark::RunSpecifiedBenchmarks(&quiet);
  }
  benchmark::Shutdown();
  return 0;
}
