// libaclnn's 8-bit float conversions (aclnn/src/conv/engine/float8.h, compiled in from the
// library's sources) against the test support's independent definitions (support/float_formats.cpp:
// field-by-field decoders, encoders that search the 256 decoded codes for the nearest) and
// against values worked out by hand from the format definitions:
//   FLOAT8_E4M3FN (OCP FP8): S.EEEE.MMM, bias 7, subnormals M * 2^-9, NaN S.1111.111, max 448;
//     round to nearest even, |x| > 464 (rounds past 448) and Inf give NaN.
//   HIFLOAT8 (arXiv 2409.16626): dot-coded exponent width, tapered mantissa, denormals
//     2^(M-23); 0x00 zero, 0x80 NaN, 0x6F/0xEF Inf, max 2^15; round to nearest, ties away from
//     zero, |x| >= 40960 gives Inf.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "conv/engine/float8.h"
#include "support/acl_test_util.h"

namespace {

using aclnn_cpu::conv::e4m3fn_to_float;
using aclnn_cpu::conv::float_to_e4m3fn;
using aclnn_cpu::conv::float_to_hif8;
using aclnn_cpu::conv::hif8_to_float;

struct Format {
  const char* name;
  float (*decode)(uint8_t);       // libaclnn
  uint8_t (*encode)(float);       // libaclnn
  double (*ref_decode)(uint8_t);  // test support
  uint8_t (*ref_encode)(double);  // test support
};
constexpr float DecodeE4(uint8_t b) {
  return e4m3fn_to_float(b);
}
constexpr uint8_t EncodeE4(float f) {
  return float_to_e4m3fn(f);
}
constexpr float DecodeHi(uint8_t b) {
  return hif8_to_float(b);
}
constexpr uint8_t EncodeHi(float f) {
  return float_to_hif8(f);
}
const Format kE4m3fn{"FLOAT8_E4M3FN", DecodeE4, EncodeE4, acltest::DecodeE4M3FN,
                     acltest::EncodeE4M3FN};
const Format kHif8{"HIFLOAT8", DecodeHi, EncodeHi, acltest::DecodeHiF8, acltest::EncodeHiF8};

class Float8 : public ::testing::TestWithParam<Format> {};

std::string Hex(int code) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02X", code);
  return buf;
}

// Every code decodes to the value of the format's definition (sign of zero included) and
// encodes back to itself; the NaN codes decode to NaN and encode back to themselves.
TEST_P(Float8, EveryCodeDecodesAsDefinedAndRoundTrips) {
  const Format& f = GetParam();
  int nans = 0;
  for (int c = 0; c < 256; ++c) {
    SCOPED_TRACE(Hex(c));
    const auto code = static_cast<uint8_t>(c);
    const float v = f.decode(code);
    const double want = f.ref_decode(code);
    if (std::isnan(want)) {
      ++nans;
      EXPECT_TRUE(std::isnan(v));
    } else {
      EXPECT_EQ(static_cast<double>(v), want);
      EXPECT_EQ(std::signbit(v), std::signbit(want));
    }
    EXPECT_EQ(f.encode(v), code) << "decoded value " << v;
  }
  EXPECT_EQ(nans, f.name == std::string("HIFLOAT8") ? 1 : 2);  // 0x80; 0x7F and 0xFF
}

// Values between every pair of neighbouring codes (the midpoint, one float either side of it,
// points a quarter in) and log-uniform random floats over and beyond each range encode to the
// nearest code with the stated tie and overflow rules (the support's search encoder).
TEST_P(Float8, RoundingMatchesTheNearestCodeSearch) {
  const Format& f = GetParam();
  std::vector<double> values;
  for (int c = 0; c < 256; ++c) {
    const double v = f.ref_decode(static_cast<uint8_t>(c));
    if (std::isfinite(v)) values.push_back(v);
  }
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  std::vector<float> probes;
  for (size_t i = 0; i + 1 < values.size(); ++i) {
    const double lo = values[i], hi = values[i + 1];
    const auto mid = static_cast<float>((lo + hi) / 2);  // exact: at most 5 significant bits
    probes.insert(probes.end(),
                  {mid, std::nextafter(mid, -INFINITY), std::nextafter(mid, INFINITY),
                   static_cast<float>(lo + (hi - lo) / 4), static_cast<float>(hi - (hi - lo) / 4)});
  }
  std::mt19937_64 gen(12);
  std::uniform_real_distribution<double> exponent(-30.0, 18.0);
  for (int i = 0; i < 200000; ++i) {
    const double m = std::ldexp(1.0, static_cast<int>(std::floor(exponent(gen))));
    const auto x = static_cast<float>(m * (1.0 + std::generate_canonical<double, 53>(gen)));
    probes.push_back(i % 2 ? x : -x);
  }
  const float inf = std::numeric_limits<float>::infinity();
  probes.insert(probes.end(), {0.0f, -0.0f, inf, -inf, 1e-30f, -1e-30f, 3e38f, -3e38f,
                               std::numeric_limits<float>::denorm_min()});
  int mismatches = 0;
  for (float x : probes) {
    const uint8_t got = f.encode(x), want = f.ref_encode(x);
    if (got != want && ++mismatches <= 10)
      ADD_FAILURE() << f.name << ": " << x << " (" << std::hexfloat << x << std::defaultfloat
                    << ") encodes to " << Hex(got) << ", nearest code is " << Hex(want);
  }
  EXPECT_EQ(mismatches, 0) << "of " << probes.size() << " values";
}

INSTANTIATE_TEST_SUITE_P(Formats, Float8, ::testing::Values(kE4m3fn, kHif8),
                         [](const auto& info) { return std::string(info.param.name); });

// Worked out by hand from the OCP definition (S.EEEE.MMM, bias 7).
TEST(Float8E4m3fn, HandComputedEncodings) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const struct {
    float x;
    int code;
  } cases[] = {
      {1.0f, 0x38},                    // 0.0111.000
      {-1.0f, 0xB8},                   //
      {448.0f, 0x7E},                  // 0.1111.110: max finite (1.75 * 2^8)
      {-448.0f, 0xFE},                 //
      {464.0f, 0x7E},                  // halfway 448 .. 480: tie to even (110), not NaN
      {464.00003f, 0x7F},              // past the halfway point: rounds to 480 = NaN code
      {1000.0f, 0x7F},                 // overflow: NaN
      {-1000.0f, 0xFF},                //
      {inf, 0x7F},                     // no infinities
      {-inf, 0xFF},                    //
      {nan, 0x7F},                     //
      {std::ldexp(1.0f, -9), 0x01},    // smallest subnormal
      {std::ldexp(7.0f, -9), 0x07},    // largest subnormal
      {std::ldexp(1.0f, -6), 0x08},    // smallest normal
      {std::ldexp(1.0f, -10), 0x00},   // halfway 0 .. 2^-9: tie to even = +0
      {-std::ldexp(1.0f, -10), 0x80},  // -0 keeps its sign
      {std::ldexp(1.5f, -10), 0x01},   // nearer 2^-9
      {std::ldexp(3.0f, -10), 0x02},   // halfway 1 .. 2 (x 2^-9): tie to even 2
      {std::ldexp(15.0f, -10), 0x08},  // halfway 7 .. 8 (x 2^-9): even 8, the smallest normal
      {1.0625f, 0x38},                 // halfway 1 .. 1.125: even 1.0
      {1.1875f, 0x3A},                 // halfway 1.125 .. 1.25: even 1.25 (010)
      {-0.0f, 0x80},                   //
      {0.0f, 0x00},                    //
  };
  for (const auto& c : cases) {
    EXPECT_EQ(float_to_e4m3fn(c.x), c.code) << c.x;
    EXPECT_EQ(acltest::EncodeE4M3FN(c.x), c.code) << c.x;
  }
  EXPECT_EQ(e4m3fn_to_float(0x7E), 448.0f);
  EXPECT_EQ(e4m3fn_to_float(0x01), std::ldexp(1.0f, -9));
  EXPECT_TRUE(std::signbit(e4m3fn_to_float(0x80)));
}

// Worked out by hand from the HiFloat8 definition (sign, dot, sign-magnitude exponent with an
// implicit leading 1, mantissa).
TEST(Float8Hifloat8, HandComputedEncodings) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const struct {
    float x;
    int code;
  } cases[] = {
      {1.0f, 0x08},                   // dot 0001, E = 0, M = 000
      {-1.0f, 0x88},                  //
      {1.5f, 0x0C},                   // M = 100
      {2.0f, 0x10},                   // dot 001, E = +1
      {0.5f, 0x18},                   // dot 001, E = -1
      {4.0f, 0x20},                   // dot 01, E = +2 (sign 0, magnitude 1|0)
      {12.0f, 0x2C},                  // dot 01, E = +3, M = 100
      {16.0f, 0x40},                  // dot 10, E = +4
      {0.0625f, 0x50},                // dot 10, E = -4
      {256.0f, 0x60},                 // dot 11, E = +8
      {32768.0f, 0x6E},               // dot 11, E = +15, M = 0: max finite
      {std::ldexp(1.0f, -15), 0x7E},  // dot 11, E = -15: smallest normal
      {std::ldexp(1.5f, -15), 0x7F},  //
      {std::ldexp(1.0f, -16), 0x07},  // denormal M = 7
      {std::ldexp(1.0f, -22), 0x01},  // denormal M = 1: smallest
      {std::ldexp(1.0f, -23), 0x01},  // halfway 0 .. 2^-22: ties away
      {std::nextafter(std::ldexp(1.0f, -23), 0.0f), 0x00},  // just below: 0
      {-std::ldexp(1.0f, -24), 0x00},                       // the one zero, no sign
      {std::ldexp(1.5f, -17), 0x07},                        // halfway 2^-17 .. 2^-16: away
      {1.0625f, 0x09},                                      // halfway 1 .. 1.125: away
      {-1.0625f, 0x89},                                     //
      {18.0f, 0x41},       // halfway 16 .. 20 (2 mantissa bits): away
      {40960.0f, 0x6F},    // halfway 32768 .. 49152: away = Inf
      {40959.996f, 0x6E},  //
      {-40960.0f, 0xEF},   //
      {inf, 0x6F},         //
      {-inf, 0xEF},        //
      {nan, 0x80},         //
      {-0.0f, 0x00},       //
  };
  for (const auto& c : cases) {
    EXPECT_EQ(float_to_hif8(c.x), c.code) << c.x;
    EXPECT_EQ(acltest::EncodeHiF8(c.x), c.code) << c.x;
  }
  EXPECT_EQ(hif8_to_float(0x6E), 32768.0f);
  EXPECT_TRUE(std::isinf(hif8_to_float(0xEF)) && hif8_to_float(0xEF) < 0);
  EXPECT_TRUE(std::isnan(hif8_to_float(0x80)));
}

}  // namespace
