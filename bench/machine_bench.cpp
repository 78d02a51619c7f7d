// What this machine can do, measured the same way as the convolution suite, so the conv numbers
// can be read against a ceiling rather than a datasheet:
//
//   fma_peak/T        T threads each running 24 independent chains of AVX-512 FMAs (no memory):
//                     the fp32 FMA peak. On the 2-core Zen 4 VM we develop on this measured
//                     ~112 GFLOP/s per core (one 512-bit FMA per cycle: Zen 4 splits it over its
//                     two 256-bit FMA pipes), ~225 GFLOP/s for both cores.
//   fma_peak_avx2/T   the same with 256-bit AVX2 FMAs, 12 chains (16 ymm registers; 8 already keep
//                     Zen 3's two FMA pipes and their 4-cycle latency busy): the ceiling of our
//                     AVX2 kernels, and the fp32 peak of an AVX2-only CPU such as Zen 3.
//   openblas_sgemm/n  OpenBLAS SGEMM n x n x n with its own threads (OPENBLAS_NUM_THREADS or all
//                     cores): the reference a tuned GEMM reaches. OpenBLAS picks its kernel at load
//                     time from OPENBLAS_CORETYPE; run once with and once without the variable to
//                     see what it costs (README, "Performance").
//
// Counter GFLOPS. Flags go to Google Benchmark.
#include <benchmark/benchmark.h>
#include <cblas.h>
#include <immintrin.h>

#include <chrono>
#include <thread>
#include <vector>

namespace {

constexpr int kChains = 24;
constexpr int64_t kSteps = 20'000'000;

__attribute__((target("avx512f"))) float fma_chains(int64_t steps) {
  __m512 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps(0.001f * static_cast<float>(i));
  const __m512 a = _mm512_set1_ps(0.999f), b = _mm512_set1_ps(1e-4f);
  for (int64_t s = 0; s < steps; ++s) {
#pragma GCC unroll 24
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_fmadd_ps(a, acc[i], b);
  }
  alignas(64) float lanes[16];
  float sum = 0.0f;
  for (int i = 0; i < kChains; ++i) {
    _mm512_store_ps(lanes, acc[i]);
    sum += lanes[0];
  }
  return sum;
}

constexpr int kChainsAvx2 = 12;

__attribute__((target("avx2,fma"))) float fma_chains_avx2(int64_t steps) {
  __m256 acc[kChainsAvx2];
  for (int i = 0; i < kChainsAvx2; ++i) acc[i] = _mm256_set1_ps(0.001f * static_cast<float>(i));
  const __m256 a = _mm256_set1_ps(0.999f), b = _mm256_set1_ps(1e-4f);
  for (int64_t s = 0; s < steps; ++s) {
#pragma GCC unroll 12
    for (int i = 0; i < kChainsAvx2; ++i) acc[i] = _mm256_fmadd_ps(a, acc[i], b);
  }
  alignas(32) float lanes[8];
  float sum = 0.0f;
  for (int i = 0; i < kChainsAvx2; ++i) {
    _mm256_store_ps(lanes, acc[i]);
    sum += lanes[0];
  }
  return sum;
}

// T threads (state.range(0)) each running `chains` (kSteps steps of `n` chained `lanes`-wide FMAs).
void run_fma_threads(benchmark::State& state, float (*chains)(int64_t), int n, int lanes) {
  const int threads = static_cast<int>(state.range(0));
  double seconds = 0.0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    std::vector<float> sums(static_cast<size_t>(threads));
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&sums, t, chains] { sums[static_cast<size_t>(t)] = chains(kSteps); });
    for (auto& th : pool) th.join();
    benchmark::DoNotOptimize(sums.data());
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  const double flops = 2.0 * lanes * n * static_cast<double>(kSteps) * threads;
  state.counters["GFLOPS"] = flops * 1e-9 * static_cast<double>(state.iterations()) / seconds;
}

void fma_peak(benchmark::State& state) {
  if (!__builtin_cpu_supports("avx512f")) {
    state.SkipWithError("CPU without AVX-512F");
    return;
  }
  run_fma_threads(state, fma_chains, kChains, 16);
}
BENCHMARK(fma_peak)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);

void fma_peak_avx2(benchmark::State& state) {
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
    state.SkipWithError("CPU without AVX2 + FMA");
    return;
  }
  run_fma_threads(state, fma_chains_avx2, kChainsAvx2, 8);
}
BENCHMARK(fma_peak_avx2)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);

void openblas_sgemm(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  std::vector<float> a(static_cast<size_t>(n) * n, 0.5f), b(a.size(), 0.25f), c(a.size());
  double seconds = 0.0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n,
                0.0f, c.data(), n);
    benchmark::DoNotOptimize(c.data());
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  state.counters["GFLOPS"] =
      2.0 * n * n * n * 1e-9 * static_cast<double>(state.iterations()) / seconds;
}
BENCHMARK(openblas_sgemm)->Arg(2048)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
