// for_each_strided with Parallel::Yes (map_elementwise, copy_, fill_) on tensors large enough to
// be split over threads: values against float64 references written with direct loops, every
// element visited once, the same bits with 1 and 2 threads, and the serial fallbacks (in-place
// chains through a partially overlapping input, outputs with stride 0).
#include <gtest/gtest.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <utility>
#include <vector>

#include "tensor/creation.h"
#include "tensor/iter.h"
#include "tensor/random.h"

namespace aclgrad {
namespace {

// Runs f inside a oneTBB arena of the given number of threads.
template <typename F>
void with_threads(int threads, F f) {
  tbb::task_arena arena(threads);
  arena.execute(f);
}

// Random float32 values in [-4, 4), reproducible from seed.
Tensor random_floats(const Shape& shape, uint64_t seed) {
  Generator gen(seed);
  Tensor t = rand(shape, Dtype::Float32, &gen);
  float* p = t.data_ptr<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = p[i] * 8 - 4;
  return t;
}

std::vector<uint32_t> bits_of(const Tensor& t) {
  const std::vector<float> v = t.contiguous().to_vector<float>();
  std::vector<uint32_t> out(v.size());
  std::memcpy(out.data(), v.data(), v.size() * sizeof(float));
  return out;
}

static_assert(kParallelGrain == 32768, "the sizes below are chosen for this grain");

// out = a * 0.5 + b over [rows, cols] views, b broadcast along rows. The double reference rounds
// once to float, which equals float arithmetic here (x * 0.5 is exact; a double sum of two floats
// rounded to float is the float sum).
void expect_scaled_add(const Tensor& out, const Tensor& a, const Tensor& b) {
  const int64_t rows = out.size(0), cols = out.size(1);
  map_elementwise<float, float, float>(out, {a, b}, [](float x, float y) { return x * 0.5f + y; });
  const std::vector<double> av = a.contiguous().to_vector<double>();
  const std::vector<double> bv = b.contiguous().to_vector<double>();
  const std::vector<double> got = out.contiguous().to_vector<double>();
  int64_t wrong = 0;
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      const double want = static_cast<float>(av[i * cols + j] * 0.5 + bv[j]);
      wrong += got[i * cols + j] != want;
    }
  }
  EXPECT_EQ(wrong, 0) << "of " << rows * cols << " elements";
}

TEST(ForEachStridedParallel, ContiguousMapMatchesReference) {
  const Tensor a = random_floats({3, 70001}, 1), b = random_floats({70001}, 2);  // 6.4 tasks
  with_threads(2, [&] { expect_scaled_add(empty({3, 70001}), a, b); });
}

TEST(ForEachStridedParallel, TransposedOutputAndStridedInputsMatchReference) {
  // Output [500, 301] transposed (memory order along dim 0), input a a strided slice, b
  // broadcast: runs of 500 elements; the task boundaries (multiples of 32768) cut runs.
  const Tensor a = random_floats({500, 602}, 3).slice(1, 0, 602, 2);  // [500, 301], stride 2
  const Tensor b = random_floats({301}, 4);
  Tensor base = empty({301, 500});
  with_threads(2, [&] { expect_scaled_add(base.t(), a, b); });
}

TEST(ForEachStridedParallel, EveryElementVisitedOnceWithItsOwnIndex) {
  // A [7, 9, 3001] permuted output: 189k elements in runs of 3001 that tasks cut mid-run.
  const int64_t n = 7 * 9 * 3001;
  Tensor index = arange(static_cast<double>(n), Dtype::Int64).view({7, 9, 3001});
  Tensor out = full({3001, 9, 7}, int64_t{-1}, Dtype::Int64).permute({2, 1, 0});
  std::atomic<int64_t> visited{0};
  with_threads(2, [&] {
    for_each_strided(
        out, {index},
        [&](int64_t len, char* o, const char* const* in, const int64_t* s) {
          for (int64_t i = 0; i < len; ++i) {
            std::memcpy(o + i * s[0], in[0] + i * s[1], sizeof(int64_t));
          }
          visited += len;
        },
        Parallel::Yes);
  });
  EXPECT_EQ(visited.load(), n);
  EXPECT_EQ(out.contiguous().to_vector<int64_t>(), index.to_vector<int64_t>());
}

TEST(ForEachStridedParallel, SameBitsWithOneAndTwoThreads) {
  const Tensor a = random_floats({257, 1031}, 5), b = random_floats({1031}, 6);
  auto run = [&](int threads) {
    Tensor out = empty({1031, 257}).t();
    with_threads(threads, [&] {
      map_elementwise<float, float, float>(out, {a, b},
                                           [](float x, float y) { return x * y - 1.0f / y; });
    });
    return bits_of(out);
  };
  EXPECT_EQ(run(1), run(2));
}

TEST(ForEachStridedParallel, InPlaceOnTheSameTensor) {
  Tensor a = random_floats({200000}, 7);
  const std::vector<float> before = a.to_vector<float>();
  with_threads(2,
               [&] { map_elementwise<float, float>(a, {a}, [](float x) { return 2 * x + 1; }); });
  const std::vector<float> after = a.to_vector<float>();
  int64_t wrong = 0;
  for (size_t i = 0; i < before.size(); ++i) wrong += after[i] != 2 * before[i] + 1;
  EXPECT_EQ(wrong, 0);
}

// The (first element, length) of every call of the loop body on a float32 out, sorted.
std::vector<std::pair<int64_t, int64_t>> runs_of(const Tensor& out, const Tensor& in,
                                                 Parallel parallel) {
  std::mutex m;
  std::vector<std::pair<int64_t, int64_t>> runs;
  const char* base = static_cast<const char*>(out.data_ptr());
  for_each_strided(
      out, {in},
      [&](int64_t n, char* o, const char* const* x, const int64_t* st) {
        for (int64_t i = 0; i < n; ++i) {
          *reinterpret_cast<float*>(o + i * st[0]) =
              *reinterpret_cast<const float*>(x[0] + i * st[1]) + 1;
        }
        std::lock_guard<std::mutex> lock(m);
        runs.emplace_back((o - base) / static_cast<int64_t>(sizeof(float)), n);
      },
      parallel);
  std::sort(runs.begin(), runs.end());
  return runs;
}

TEST(ForEachStridedParallel, SplitsIntoGrainAlignedRangesOnlyWhenAllowed) {
  using Runs = std::vector<std::pair<int64_t, int64_t>>;
  const Tensor in = zeros({100000});
  const Runs split{{0, 32768}, {32768, 32768}, {65536, 34464}};  // the last takes the rest
  with_threads(2, [&] {
    EXPECT_EQ(runs_of(empty({100000}), in, Parallel::Yes), split);
    EXPECT_EQ(runs_of(empty({100000}), in, Parallel::No), (Runs{{0, 100000}}));
    EXPECT_EQ(runs_of(empty({65535}), zeros({65535}), Parallel::Yes), (Runs{{0, 65535}}));
  });
  with_threads(1, [&] {
    EXPECT_EQ(runs_of(empty({100000}), in, Parallel::Yes), (Runs{{0, 100000}}));
  });
}

TEST(ForEachStridedParallel, PartiallyOverlappingInputRunsSeriallyInMemoryOrder) {
  // out = a[1:], in = a[:-1]: in memory order each element adds one to the one just written, so
  // a[k] = k; split into tasks, the chain would restart at every task boundary.
  Tensor a = zeros({100000});
  with_threads(2, [&] {
    const auto runs = runs_of(a.narrow(0, 1, 99999), a.narrow(0, 0, 99999), Parallel::Yes);
    EXPECT_EQ(runs.size(), 1u);
  });
  const std::vector<float> v = a.to_vector<float>();
  int64_t wrong = 0;
  for (size_t k = 0; k < v.size(); ++k) wrong += v[k] != static_cast<float>(k);
  EXPECT_EQ(wrong, 0);
}

TEST(ForEachStridedParallel, OutputWithStrideZeroRunsSerially) {
  // Every element of the output is one float: the serial loop leaves the last value + 1.
  Tensor one = zeros({1});
  with_threads(2, [&] {
    const auto runs = runs_of(one.expand({100000}), arange(100000.0), Parallel::Yes);
    EXPECT_EQ(runs.size(), 1u);
  });
  EXPECT_EQ(one.item<float>(), 100000.0f);
}

TEST(ForEachStridedParallel, FillAndCopyOfLargeViews) {
  with_threads(2, [] {
    // fill_ of every other column of [400, 600] (120k elements) leaves the others alone.
    Tensor base = zeros({400, 600}, Dtype::Float64);
    base.slice(1, 1, 600, 2).fill_(3.5);
    const std::vector<double> v = base.to_vector<double>();
    int64_t wrong = 0;
    for (int64_t i = 0; i < 400 * 600; ++i) wrong += v[i] != (i % 2 == 1 ? 3.5 : 0.0);
    EXPECT_EQ(wrong, 0);
    // copy_ with a dtype conversion from a transposed source.
    const Tensor src = random_floats({300, 500}, 8);
    Tensor dst = empty({500, 300}, Dtype::Float64);
    dst.copy_(src.t());
    const std::vector<double> s = src.to_vector<double>(), d = dst.to_vector<double>();
    wrong = 0;
    for (int64_t i = 0; i < 500; ++i) {
      for (int64_t j = 0; j < 300; ++j) wrong += d[i * 300 + j] != s[j * 500 + i];
    }
    EXPECT_EQ(wrong, 0);
  });
}

}  // namespace
}  // namespace aclgrad
