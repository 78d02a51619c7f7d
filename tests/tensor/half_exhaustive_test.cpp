// float16 and bfloat16 conversions checked exhaustively over all 65536 bit patterns, and on a
// dense sample of float bit patterns plus every rounding tie, against independent references:
// the CPU's F16C instructions for float16 (this file is compiled with -mf16c), and exact
// arithmetic in double, written here from the definition of the formats, for bfloat16 and for
// rounding from double.
#include <gtest/gtest.h>
#include <immintrin.h>

#include <bit>
#include <cfloat>
#include <cmath>
#include <vector>

#include "tensor/creation.h"
#include "tensor/half.h"

namespace aclgrad {
namespace {

uint32_t bits(float f) {
  return std::bit_cast<uint32_t>(f);
}
float from_bits(uint32_t b) {
  return std::bit_cast<float>(b);
}

// ---- float16: F16C reference ----

uint16_t ref_f16(float f) {
  return _cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT);
}
bool is_half_nan(uint16_t h) {
  return (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0;
}

// Compares float -> half of the library with F16C: bit-exact, except that a NaN only has to stay
// a NaN with its sign.
void expect_f16_matches(float f) {
  const uint16_t got = detail::float_to_half_bits(f);
  const uint16_t want = ref_f16(f);
  if (std::isnan(f)) {
    EXPECT_TRUE(is_half_nan(got)) << std::hex << bits(f) << " -> " << got;
    EXPECT_EQ(got & 0x8000, want & 0x8000) << std::hex << bits(f);
  } else {
    ASSERT_EQ(got, want) << "float bits 0x" << std::hex << bits(f) << " (" << f << ")";
  }
}

// The F16C reference needs the instructions at run time; a CPU without them skips these tests
// instead of dying of SIGILL.
#define ACLGRAD_REQUIRE_F16C() \
  if (!__builtin_cpu_supports("f16c")) GTEST_SKIP() << "CPU lacks F16C (the float16 reference)"

TEST(HalfExhaustive, HalfToFloatMatchesF16cForAllPatterns) {
  ACLGRAD_REQUIRE_F16C();
  for (uint32_t h = 0; h < 65536; ++h) {
    const float got = detail::half_bits_to_float(static_cast<uint16_t>(h));
    const float want = _cvtsh_ss(static_cast<uint16_t>(h));
    if (is_half_nan(static_cast<uint16_t>(h))) {
      ASSERT_TRUE(std::isnan(got)) << std::hex << h;
      ASSERT_EQ(std::signbit(got), std::signbit(want)) << std::hex << h;
    } else {
      ASSERT_EQ(bits(got), bits(want)) << "half bits 0x" << std::hex << h;
    }
  }
}

TEST(HalfExhaustive, FloatToHalfRoundTripsAllPatterns) {
  ACLGRAD_REQUIRE_F16C();
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = _cvtsh_ss(static_cast<uint16_t>(h));
    if (is_half_nan(static_cast<uint16_t>(h))) {
      ASSERT_TRUE(is_half_nan(detail::float_to_half_bits(f))) << std::hex << h;
    } else {
      ASSERT_EQ(detail::float_to_half_bits(f), h) << std::hex << h;
    }
  }
}

TEST(HalfExhaustive, FloatToHalfMatchesF16cOnEveryTieAndItsNeighbours) {
  ACLGRAD_REQUIRE_F16C();
  for (uint32_t h = 0; h < 65536; ++h) {
    if ((h & 0x7fff) >= 0x7c00) continue;  // inf / NaN have no next value
    // Midpoint between h and the next larger magnitude (exact in float: 12 significant bits).
    const double a = _cvtsh_ss(static_cast<uint16_t>(h));
    const double next = (h & 0x7fff) == 0x7bff ? std::copysign(65536.0, a)  // past 65504
                                               : _cvtsh_ss(static_cast<uint16_t>(h + 1));
    const float mid = static_cast<float>((a + next) / 2);
    ASSERT_EQ(static_cast<double>(mid), (a + next) / 2);
    expect_f16_matches(mid);
    expect_f16_matches(std::nextafter(mid, INFINITY));
    expect_f16_matches(std::nextafter(mid, -INFINITY));
  }
}

TEST(HalfExhaustive, FloatToHalfMatchesF16cOnDenseFloatSample) {
  ACLGRAD_REQUIRE_F16C();
  // Every 61st float bit pattern (70 million, all exponents and both signs), plus specials.
  for (uint64_t b = 0; b < (uint64_t{1} << 32); b += 61)
    expect_f16_matches(from_bits(static_cast<uint32_t>(b)));
  const std::vector<float> specials{0.0f,
                                    -0.0f,
                                    INFINITY,
                                    -INFINITY,
                                    FLT_MAX,
                                    -FLT_MAX,
                                    FLT_MIN,
                                    FLT_TRUE_MIN,
                                    65504.0f,
                                    65519.996f,
                                    65520.0f,
                                    -65520.0f,
                                    0x1p-24f,
                                    0x1p-25f,
                                    0x1.000002p-25f,
                                    0x1p-14f,
                                    0x1.ffcp-15f,
                                    1e-8f,
                                    from_bits(0x7fc00000),
                                    from_bits(0xffc00001),
                                    from_bits(0x7f800001),  // signalling
                                    from_bits(0x7fbfe000)};
  for (float f : specials) expect_f16_matches(f);
}

TEST(HalfExhaustive, TensorConversionToFloat16MatchesF16c) {
  ACLGRAD_REQUIRE_F16C();
  std::vector<float> v;
  for (uint64_t b = 0; b < (uint64_t{1} << 32); b += 65521)
    v.push_back(from_bits(static_cast<uint32_t>(b)));
  const Tensor h = from_vector(v).to(Dtype::Float16);
  const Half* p = h.data_ptr<Half>();
  for (size_t i = 0; i < v.size(); ++i) {
    if (std::isnan(v[i])) continue;
    ASSERT_EQ(p[i].bits, ref_f16(v[i])) << std::hex << bits(v[i]);
  }
}

// ---- exact reference: rounding a double to a binary format with p significant bits ----

struct Format {
  int p;     // significant bits, implicit bit included
  int emin;  // exponent of the smallest normal
  int emax;  // exponent of the largest finite
};
constexpr Format kBF16{8, -126, 127};
constexpr Format kF16{11, -14, 15};

// Round to nearest, ties to even, with gradual underflow and overflow to infinity: scale so that
// one unit in the last place of v's binade is 1, round to an integer, scale back. All exact.
double ref_round(double v, Format f) {
  if (std::isnan(v) || std::isinf(v) || v == 0) return v;
  int e;
  std::frexp(std::fabs(v), &e);              // |v| = m * 2^e, m in [0.5, 1)
  const int lead = std::max(e - 1, f.emin);  // exponent of v's leading bit (or emin)
  const double ulp = std::ldexp(1.0, lead - (f.p - 1));
  const double r = std::nearbyint(v / ulp) * ulp;  // default rounding mode: ties to even
  const double max_finite = std::ldexp(2.0 - std::ldexp(1.0, 1 - f.p), f.emax);
  if (std::fabs(r) > max_finite) return std::copysign(INFINITY, v);
  return r;
}

// bfloat16 bits -> value from the definition (sign, 8-bit exponent bias 127, 7-bit fraction).
double ref_bf16_value(uint16_t b) {
  const double sign = (b & 0x8000) ? -1.0 : 1.0;
  const int e = (b >> 7) & 0xff;
  const int m = b & 0x7f;
  if (e == 0xff) return m ? NAN : sign * INFINITY;
  if (e == 0) return sign * std::ldexp(m, -126 - 7);
  return sign * std::ldexp(128 + m, e - 127 - 7);
}

bool is_bf16_nan(uint16_t b) {
  return (b & 0x7f80) == 0x7f80 && (b & 0x7f) != 0;
}

void expect_bf16_rounds(float f) {
  const uint16_t got = detail::float_to_bf16_bits(f);
  if (std::isnan(f)) {
    ASSERT_TRUE(is_bf16_nan(got)) << std::hex << bits(f);
    return;
  }
  const double want = ref_round(f, kBF16);
  ASSERT_EQ(ref_bf16_value(got), want) << "float bits 0x" << std::hex << bits(f);
  ASSERT_EQ(std::signbit(ref_bf16_value(got)), std::signbit(f)) << std::hex << bits(f);
}

TEST(BFloat16Exhaustive, ToFloatMatchesDefinitionForAllPatterns) {
  for (uint32_t b = 0; b < 65536; ++b) {
    const float got = detail::bf16_bits_to_float(static_cast<uint16_t>(b));
    if (is_bf16_nan(static_cast<uint16_t>(b))) {
      ASSERT_TRUE(std::isnan(got)) << std::hex << b;
    } else {
      ASSERT_EQ(static_cast<double>(got), ref_bf16_value(static_cast<uint16_t>(b)))
          << std::hex << b;
      ASSERT_EQ(std::signbit(got), (b & 0x8000) != 0) << std::hex << b;
    }
  }
}

TEST(BFloat16Exhaustive, FromFloatRoundTripsAllPatterns) {
  for (uint32_t b = 0; b < 65536; ++b) {
    const float f = static_cast<float>(ref_bf16_value(static_cast<uint16_t>(b)));
    if (is_bf16_nan(static_cast<uint16_t>(b))) {
      ASSERT_TRUE(is_bf16_nan(detail::float_to_bf16_bits(f)));
    } else {
      const float signed_f = std::copysign(f, (b & 0x8000) ? -1.0f : 1.0f);  // keeps -0
      ASSERT_EQ(detail::float_to_bf16_bits(signed_f), b) << std::hex << b;
    }
  }
}

TEST(BFloat16Exhaustive, FromFloatRoundsTiesAndNeighboursLikeExactArithmetic) {
  for (uint32_t b = 0; b < 65536; ++b) {
    if ((b & 0x7fff) >= 0x7f80) continue;
    const double a = ref_bf16_value(static_cast<uint16_t>(b));
    const double next = (b & 0x7fff) == 0x7f7f ? std::copysign(0x1p128, a)  // past the max
                                               : ref_bf16_value(static_cast<uint16_t>(b + 1));
    const double mid_d = (a + next) / 2;
    if (std::fabs(mid_d) > FLT_MAX) continue;  // the top tie is not a float
    const float mid = static_cast<float>(mid_d);
    ASSERT_EQ(static_cast<double>(mid), mid_d);
    expect_bf16_rounds(mid);
    expect_bf16_rounds(std::nextafter(mid, INFINITY));
    expect_bf16_rounds(std::nextafter(mid, -INFINITY));
  }
}

TEST(BFloat16Exhaustive, FromFloatMatchesExactArithmeticOnDenseSample) {
  // Every 251st float bit pattern (17 million; the exact reference is slower than F16C).
  for (uint64_t b = 0; b < (uint64_t{1} << 32); b += 251)
    expect_bf16_rounds(from_bits(static_cast<uint32_t>(b)));
  for (float f : {FLT_MAX, -FLT_MAX, FLT_TRUE_MIN, FLT_MIN, INFINITY, -INFINITY, 0.0f, -0.0f,
                  from_bits(0x7f800001), from_bits(0xffc00000)}) {
    expect_bf16_rounds(f);
  }
}

// ---- from double: rounded once (no double rounding through float) ----

TEST(DoubleToHalfTypes, MatchExactArithmeticNearEveryTie) {
  ACLGRAD_REQUIRE_F16C();
  for (uint32_t h = 0; h < 0x7c00; ++h) {  // positive finite halves; sign is symmetric
    const double a = _cvtsh_ss(static_cast<uint16_t>(h));
    const double next = h == 0x7bff ? 65536.0 : _cvtsh_ss(static_cast<uint16_t>(h + 1));
    const double mid = (a + next) / 2;
    for (double d : {mid, mid + mid * 0x1p-40, mid - mid * 0x1p-40, -mid, -(mid + mid * 0x1p-40)}) {
      const double got = static_cast<float>(Half(d));
      ASSERT_EQ(got, ref_round(d, kF16)) << d;
    }
  }
  for (uint32_t b = 0; b < 0x7f80; ++b) {
    const double a = ref_bf16_value(static_cast<uint16_t>(b));
    const double next = b == 0x7f7f ? 0x1p128 : ref_bf16_value(static_cast<uint16_t>(b + 1));
    const double mid = (a + next) / 2;
    for (double d : {mid, mid + mid * 0x1p-40, mid - mid * 0x1p-40, -mid}) {
      const double got = static_cast<float>(BFloat16(d));
      ASSERT_EQ(got, ref_round(d, kBF16)) << d;
    }
  }
}

}  // namespace
}  // namespace aclgrad
