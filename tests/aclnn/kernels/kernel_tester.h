// What the kernel testers of this folder share (XNNPACK's microkernel testers are the model): the
// ISA variants a kernel comes in and whether this process may run each (the CPU module's answer,
// never re-derived here), random inputs, bf16 values, 64-byte aligned buffers, and the error bound
// every computed output is held to.
//
// The bound: a sum of k terms computed in fp32 (products exact or rounded once, in any order or
// tree) lies within gamma(k) * sum |term| of the exact sum, gamma(k) = k u / (1 - k u), u = 2^-24
// (Higham, Accuracy and Stability of Numerical Algorithms, 3.1). The reference is that exact sum,
// in float64 from the same (fp32 or bf16) input values. A missing, doubled or misplaced term moves
// an output by a whole term, far outside the bound, which does not grow with the values' size.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cpu/cpu.h"

namespace kernel_test {

namespace cpu = aclnn_cpu::cpu;

// The instruction sets a kernel variant is compiled for.
enum class Isa { kAvx512, kAvx2, kAvx512Bf16 };

inline const char* IsaName(Isa isa) {
  switch (isa) {
    case Isa::kAvx512:
      return "avx512";
    case Isa::kAvx2:
      return "avx2";
    case Isa::kAvx512Bf16:
      break;
  }
  return "avx512_bf16";
}

// The features a variant needs: the CPU module's tier sets.
inline cpu::FeatureSet IsaFeatures(Isa isa) {
  switch (isa) {
    case Isa::kAvx512:
      return cpu::kAvx512Features;
    case Isa::kAvx2:
      return cpu::kAvx2Features;
    case Isa::kAvx512Bf16:
      break;
  }
  return cpu::kAvx512Bf16Features;
}

// Whether this process may run the variant: the CPU and OS offer its features and the cap
// (ACLNN_CPU_MAX_ISA) allows them.
inline bool Runs(Isa isa) {
  return cpu::may_use(IsaFeatures(isa));
}

inline std::string SkipReason(Isa isa) {
  return std::string("the ") + IsaName(isa) + " variant cannot run here (" + cpu::describe() + ")";
}

// In a TEST_P over Isa (or with an Isa at hand): skips, naming the variant, where it cannot run.
#define KERNEL_TEST_SKIP_UNLESS_RUNS(isa) \
  if (!::kernel_test::Runs(isa)) GTEST_SKIP() << ::kernel_test::SkipReason(isa)

inline std::string IsaParamName(const ::testing::TestParamInfo<Isa>& info) {
  return IsaName(info.param);
}

// bf16 bits of f rounded to nearest even (f finite), and back.
inline uint16_t ToBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7fff + ((u >> 16) & 1);
  return static_cast<uint16_t>(u >> 16);
}
inline float FromBf16(uint16_t b) {
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
// The 32-bit unit of a bf16 pair (lo in the low half, as the kernels read memory) and its halves.
inline uint32_t Pair(uint16_t lo, uint16_t hi) {
  return lo | static_cast<uint32_t>(hi) << 16;
}
inline double Lo(uint32_t unit) {
  return FromBf16(static_cast<uint16_t>(unit & 0xffff));
}
inline double Hi(uint32_t unit) {
  return FromBf16(static_cast<uint16_t>(unit >> 16));
}

// Uniform values in [-1, 1] away from zero (|v| >= 2^-10): no denormal input, product or sum
// (vdpbf16ps treats those as zero), and every term of a sum counts.
class Random {
 public:
  explicit Random(uint32_t seed) : gen_(seed) {}
  float Value() {
    const float v = dist_(gen_);
    return std::fabs(v) < 1.0f / 1024 ? (v < 0 ? -0.5f : 0.5f) : v;
  }
  uint16_t Bf16() { return ToBf16(Value()); }
  int64_t Int(int64_t lo, int64_t hi) {  // in [lo, hi]
    return std::uniform_int_distribution<int64_t>(lo, hi)(gen_);
  }

 private:
  std::mt19937 gen_;
  std::uniform_real_distribution<float> dist_{-1.0f, 1.0f};
};

// n elements of T, 64-byte aligned (the kernels' aligned loads and stores), filled with `fill`.
template <typename T>
class Buffer {
 public:
  explicit Buffer(int64_t n, T fill = T{}) : store_(static_cast<size_t>(n) + 64 / sizeof(T)) {
    const auto at = reinterpret_cast<uintptr_t>(store_.data());
    data_ = store_.data() + (64 - at % 64) % 64 / sizeof(T);
    n_ = n;
    for (int64_t i = 0; i < n; ++i) data_[i] = fill;
  }
  T* data() { return data_; }
  const T* data() const { return data_; }
  T& operator[](int64_t i) { return data_[i]; }
  const T& operator[](int64_t i) const { return data_[i]; }
  int64_t size() const { return n_; }

 private:
  std::vector<T> store_;
  T* data_ = nullptr;
  int64_t n_ = 0;
};

// A quiet NaN for the elements a kernel must not read (a read turns an output into NaN) or must
// not write (checked bit for bit afterwards).
inline float Poison() {
  return std::nanf("0x5a5a");
}
inline bool SameBits(float a, float b) {
  return std::memcmp(&a, &b, 4) == 0;
}

// One output's exact value as the sum of its terms, with the sum of their absolute values and
// their count.
struct Exact {
  double sum = 0, abs = 0;
  int64_t terms = 0;
  void Add(double term) {
    sum += term;
    abs += std::fabs(term);
    ++terms;
  }
  void Add(double a, double b) { Add(a * b); }
};

inline double Gamma(int64_t k) {
  const double u = std::ldexp(1.0, -24);
  return k * u / (1 - k * u);
}

// Collects the outputs outside their bound (or written where they must not be) and reports the
// first few with their count.
class Mismatches {
 public:
  // got within gamma(terms + extra_roundings) * abs of the exact sum.
  void Near(double got, const Exact& want, const std::string& where, int extra_roundings = 0) {
    const double bound = Gamma(want.terms + extra_roundings) * want.abs;
    if (std::fabs(got - want.sum) <= bound) return;
    Note(where, got, want.sum, bound);
  }
  void Equal(double got, double want, const std::string& where) {
    if (got == want) return;
    Note(where, got, want, 0);
  }
  void Untouched(float got, float was, const std::string& where) {
    if (SameBits(got, was)) return;
    Note(where + " (must not be written)", got, was, 0);
  }
  int64_t count() const { return count_; }
  std::string Report() const { return report_.str(); }

 private:
  void Note(const std::string& where, double got, double want, double bound) {
    if (count_++ < 8)
      report_ << "  " << where << ": got " << got << ", want " << want << " (bound " << bound
              << ", error " << std::fabs(got - want) << ")\n";
  }
  int64_t count_ = 0;
  std::ostringstream report_;
};

// Checks a Mismatches at the end of a Test(): none expected; the message names the case.
#define KERNEL_TEST_EXPECT_NONE(mismatches, what) \
  EXPECT_EQ((mismatches).count(), 0) << (what) << "\n" << (mismatches).Report()

}  // namespace kernel_test
