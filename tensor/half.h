// float16 (IEEE binary16) and bfloat16 storage types with correctly rounded conversions.
//
// Both are storage formats: arithmetic converts to float (exact) and the result back (round to
// nearest, ties to even). Conversions are plain bit manipulation so they do not depend on the CPU
// (F16C / AVX512-BF16 are only used by the tests, as an independent reference). They handle
// infinities, NaN (kept NaN, made quiet, sign and top payload bits kept), subnormals and overflow
// to infinity. Conversions from double round once, directly to the target (no double rounding).
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace aclgrad {

namespace detail {

inline float half_bits_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) {  // inf, or NaN made quiet
    return std::bit_cast<float>(sign | 0x7f800000u | (mant ? 0x400000u | (mant << 13) : 0u));
  }
  if (exp == 0) {  // zero or subnormal: mant * 2^-24, exact in float
    const float v = static_cast<float>(mant) * 0x1p-24f;
    return sign ? -v : v;
  }
  return std::bit_cast<float>(sign | ((exp + 112u) << 23) | (mant << 13));
}

inline uint16_t float_to_half_bits(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) {  // inf stays inf; NaN stays NaN (quiet, top payload bits kept)
    return sign | (ax == 0x7f800000u ? 0x7c00u : 0x7e00u | ((ax >> 13) & 0x3ffu));
  }
  if (ax >= 0x477ff000u) return sign | 0x7c00u;  // >= 65520 = 65504 + half ulp: rounds to inf
  if (ax >= 0x38800000u) {                       // normal half (>= 2^-14)
    // Re-bias the exponent, then round the 13 dropped bits to nearest even; a carry out of the
    // mantissa correctly bumps the exponent.
    const uint32_t odd = (ax >> 13) & 1u;
    return sign | static_cast<uint16_t>((ax - 0x38000000u + 0xfffu + odd) >> 13);
  }
  // Subnormal half or zero: result = round(value / 2^-24) with value = m * 2^(e - 150).
  const uint32_t e = ax >> 23;
  if (e < 102) return sign;  // below 2^-25 (half of the smallest subnormal): rounds to zero
  const uint32_t m = (ax & 0x7fffffu) | 0x800000u;
  const uint32_t shift = 126 - e;  // 14..24
  uint32_t r = m >> shift;
  const uint32_t rem = m & ((1u << shift) - 1);
  const uint32_t halfway = 1u << (shift - 1);
  if (rem > halfway || (rem == halfway && (r & 1u))) ++r;  // may carry into the smallest normal
  return sign | static_cast<uint16_t>(r);
}

inline float bf16_bits_to_float(uint16_t b) {
  return std::bit_cast<float>(static_cast<uint32_t>(b) << 16);
}

inline uint16_t float_to_bf16_bits(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // NaN
  // Round the low 16 bits to nearest even; overflow carries into the exponent up to inf.
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

// double -> float rounding to odd (truncate, then set the last bit if inexact). Rounding that
// result to a format with at least 2 fewer mantissa bits gives the correctly rounded value.
inline float double_to_float_round_odd(double d) {
  if (std::isnan(d)) return static_cast<float>(d);
  float f = static_cast<float>(d);
  if (static_cast<double>(f) == d) return f;
  if (std::fabs(static_cast<double>(f)) > std::fabs(d)) {
    f = std::nextafter(f, 0.0f);  // truncate toward zero (inf -> FLT_MAX)
  }
  return std::bit_cast<float>(std::bit_cast<uint32_t>(f) | 1u);
}

}  // namespace detail

/// IEEE 754 binary16 value (dtype float16).
struct Half {
  uint16_t bits = 0;

  Half() = default;
  explicit Half(float f) : bits(detail::float_to_half_bits(f)) {}
  explicit Half(double d)
      : bits(detail::float_to_half_bits(detail::double_to_float_round_odd(d))) {}
  static Half from_bits(uint16_t b) {
    Half h;
    h.bits = b;
    return h;
  }
  operator float() const { return detail::half_bits_to_float(bits); }
};

/// bfloat16 value (the top 16 bits of a float32; dtype bfloat16).
struct BFloat16 {
  uint16_t bits = 0;

  BFloat16() = default;
  explicit BFloat16(float f) : bits(detail::float_to_bf16_bits(f)) {}
  explicit BFloat16(double d)
      : bits(detail::float_to_bf16_bits(detail::double_to_float_round_odd(d))) {}
  static BFloat16 from_bits(uint16_t b) {
    BFloat16 h;
    h.bits = b;
    return h;
  }
  operator float() const { return detail::bf16_bits_to_float(bits); }
};

static_assert(sizeof(Half) == 2 && sizeof(BFloat16) == 2);

}  // namespace aclgrad
