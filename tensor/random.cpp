#include "tensor/random.h"

#include <cmath>
#include <numbers>

#include "tensor/creation.h"
#include "tensor/iter.h"

namespace aclgrad {

Generator::Generator(const Generator& other) {
  std::lock_guard lock(other.mutex_);
  engine_ = other.engine_;
  seed_ = other.seed_;
}

Generator& Generator::operator=(const Generator& other) {
  if (this == &other) return *this;
  std::scoped_lock lock(mutex_, other.mutex_);
  engine_ = other.engine_;
  seed_ = other.seed_;
  return *this;
}

void Generator::manual_seed(uint64_t seed) {
  seed_ = seed;
  engine_.seed(seed);
}

uint64_t Generator::below(uint64_t range) {
  // Reject the first (2^64 mod range) values so every residue is equally likely.
  const uint64_t threshold = (0 - range) % range;
  uint64_t x;
  do x = next_u64();
  while (x < threshold);
  return x % range;
}

Generator& default_generator() {
  static Generator gen;
  return gen;
}

void manual_seed(uint64_t seed) {
  Generator& gen = default_generator();
  std::lock_guard lock(gen.mutex());
  gen.manual_seed(seed);
}

namespace {

// Calls next() once per element of t, in memory order, storing convert<T>(value).
template <typename T, typename Next>
void fill_with(const Tensor& t, Next&& next) {
  for_each_strided(t, {}, [&](int64_t n, char* o, const char* const*, const int64_t* s) {
    for (int64_t i = 0; i < n; ++i) *reinterpret_cast<T*>(o + i * s[0]) = convert<T>(next());
  });
  t.bump_version();
}

template <typename T>
int significand_bits() {
  if constexpr (std::is_same_v<T, double>)
    return 53;
  else if constexpr (std::is_same_v<T, Half>)
    return 11;
  else if constexpr (std::is_same_v<T, BFloat16>)
    return 8;
  else
    return 24;
}

}  // namespace

const Tensor& uniform_(const Tensor& t, double low, double high, Generator* gen) {
  check(low <= high, "uniform_: low ", low, " must not exceed high ", high);
  Generator& g = gen ? *gen : default_generator();
  std::lock_guard lock(g.mutex());
  dispatch_floating_dtype(t.dtype(), "uniform_", [&]<typename T>() {
    const int bits = significand_bits<T>();
    if (low == 0 && high == 1) {
      fill_with<T>(t, [&] { return g.uniform(bits); });  // exact on T's grid, never 1
    } else {
      fill_with<T>(t, [&] { return low + (high - low) * g.uniform(); });
    }
  });
  return t;
}

const Tensor& normal_(const Tensor& t, double mean, double std, Generator* gen) {
  check(std >= 0, "normal_: std ", std, " must be non-negative");
  Generator& g = gen ? *gen : default_generator();
  std::lock_guard lock(g.mutex());
  dispatch_floating_dtype(t.dtype(), "normal_", [&]<typename T>() {
    bool have_spare = false;
    double spare = 0;
    fill_with<T>(t, [&] {
      if (have_spare) {
        have_spare = false;
        return mean + std * spare;
      }
      // Box-Muller: u1 in (0, 1] keeps the log finite.
      const double u1 = 1.0 - g.uniform();
      const double u2 = g.uniform();
      const double r = std::sqrt(-2.0 * std::log(u1));
      const double theta = 2.0 * std::numbers::pi * u2;
      spare = r * std::sin(theta);
      have_spare = true;
      return mean + std * (r * std::cos(theta));
    });
  });
  return t;
}

Tensor rand(const Shape& sizes, Dtype dtype, Generator* gen) {
  check<DtypeError>(is_floating_point(dtype), "rand: expected a floating point dtype, got ", dtype);
  Tensor t = empty(sizes, dtype);
  uniform_(t, 0, 1, gen);
  return t;
}

Tensor randn(const Shape& sizes, Dtype dtype, Generator* gen) {
  check<DtypeError>(is_floating_point(dtype), "randn: expected a floating point dtype, got ",
                    dtype);
  Tensor t = empty(sizes, dtype);
  normal_(t, 0, 1, gen);
  return t;
}

Tensor randint(int64_t low, int64_t high, const Shape& sizes, Dtype dtype, Generator* gen) {
  check(low < high, "randint: low ", low, " must be less than high ", high);
  Tensor t = empty(sizes, dtype);
  Generator& g = gen ? *gen : default_generator();
  std::lock_guard lock(g.mutex());
  // high - low computed in unsigned arithmetic: exact for any int64 pair with low < high.
  const uint64_t range = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
  dispatch_dtype(dtype, [&]<typename T>() {
    fill_with<T>(t,
                 [&] { return static_cast<int64_t>(static_cast<uint64_t>(low) + g.below(range)); });
  });
  return t;
}

}  // namespace aclgrad
