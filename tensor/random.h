// Seedable random numbers: Generator, the global default generator, and random factories.
//
// Values depend only on the seed and the sequence of calls on that generator (the bits come from
// std::mt19937_64, whose output the C++ standard fixes; the distributions are our own code, so
// results are identical on every platform and standard library). Each factory holds the
// generator's lock for its whole fill, so concurrent calls do not interleave within a tensor.
#pragma once

#include <cstdint>
#include <mutex>
#include <random>

#include "../tensor/tensor.h"

namespace aclgrad {

class Generator {
 public:
  static constexpr uint64_t kDefaultSeed = 67280421310721ull;

  explicit Generator(uint64_t seed = kDefaultSeed) { manual_seed(seed); }
  /// Copies the state: the copy continues the same sequence independently.
  Generator(const Generator& other);
  Generator& operator=(const Generator& other);

  /// Restarts the sequence from seed.
  void manual_seed(uint64_t seed);
  uint64_t seed() const { return seed_; }

  /// Next 64 random bits. Not locked: callers sharing a generator hold mutex().
  uint64_t next_u64() { return engine_(); }
  /// Uniform in [0, 1) on a grid of 2^-bits (bits <= 53), so that it converts exactly to a float
  /// type with that many significand bits and never rounds up to 1.
  double uniform(int bits = 53) {
    return static_cast<double>(next_u64() >> (64 - bits)) * std::ldexp(1.0, -bits);
  }
  /// Uniform integer in [0, range) without modulo bias (range >= 1).
  uint64_t below(uint64_t range);

  std::mutex& mutex() const { return mutex_; }

 private:
  std::mt19937_64 engine_;
  uint64_t seed_ = kDefaultSeed;
  mutable std::mutex mutex_;
};

/// The generator used when none is passed. Starts from Generator::kDefaultSeed.
Generator& default_generator();
/// Re-seeds the default generator.
void manual_seed(uint64_t seed);

/// Fills t in place with U[low, high) (floating dtypes; DtypeError otherwise). Bumps the version.
const Tensor& uniform_(const Tensor& t, double low = 0, double high = 1, Generator* gen = nullptr);
/// Fills t in place with N(mean, std^2) (Box-Muller in double). Bumps the version.
const Tensor& normal_(const Tensor& t, double mean = 0, double std = 1, Generator* gen = nullptr);

/// U[0, 1) of a floating dtype.
Tensor rand(const Shape& sizes, Dtype dtype = Dtype::Float32, Generator* gen = nullptr);
/// N(0, 1) of a floating dtype.
Tensor randn(const Shape& sizes, Dtype dtype = Dtype::Float32, Generator* gen = nullptr);
/// Integers uniform in [low, high) (Error unless low < high), stored as dtype.
Tensor randint(int64_t low, int64_t high, const Shape& sizes, Dtype dtype = Dtype::Int64,
               Generator* gen = nullptr);

}  // namespace aclgrad
