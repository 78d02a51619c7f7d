// Float format helpers of the test support (declared in acl_test_util.h): rounding to f16, bf16,
// f32 and HF32, f16/bf16 bit encoders and decoders, ulps. Written from the IEEE 754 definitions.
// The 8-bit formats (FLOAT8_E4M3FN, HIFLOAT8) are decoded field by field from their definitions
// and encoded by searching the decoded codes for the nearest, independently of libaclnn's code.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>

#include "support/acl_test_util.h"

namespace acltest {

// ---------------------------------------------------------------------------------------------
// dtype helpers

double RoundToFormat(double x, int mant_bits, int emin, int emax) {
  if (!std::isfinite(x) || x == 0.0) return x;
  int e2 = 0;
  std::frexp(x, &e2);  // |x| = m * 2^e2, m in [0.5, 1): the leading bit has weight 2^(e2-1)
  int e = std::max(e2 - 1, emin);  // below emin: subnormal spacing 2^(emin - mant_bits)
  double quantum = std::ldexp(1.0, e - mant_bits);
  double r = std::nearbyint(x / quantum) * quantum;  // default rounding mode: nearest-even
  double max_finite = std::ldexp(2.0 - std::ldexp(1.0, -mant_bits), emax);
  if (std::fabs(r) > max_finite) return std::copysign(std::numeric_limits<double>::infinity(), x);
  return r;
}

double RoundToF16(double x) {
  return RoundToFormat(x, 10, -14, 15);
}
double RoundToBF16(double x) {
  return RoundToFormat(x, 7, -126, 127);
}
double RoundToF32(double x) {
  return RoundToFormat(x, 23, -126, 127);
}
double RoundToHF32(double x) {
  return RoundToFormat(x, 11, -126, 127);
}

double RoundToDtype(double x, aclDataType dtype) {
  switch (dtype) {
    case ACL_FLOAT16:
      return RoundToF16(x);
    case ACL_BF16:
      return RoundToBF16(x);
    case ACL_FLOAT:
      return RoundToF32(x);
    case ACL_FLOAT8_E4M3FN:
      return DecodeE4M3FN(EncodeE4M3FN(x));
    case ACL_HIFLOAT8:
      return DecodeHiF8(EncodeHiF8(x));
    default:
      return x;
  }
}

uint16_t EncodeF16(double x) {
  if (std::isnan(x)) return 0x7E00;
  double r = RoundToF16(x);
  uint16_t sign = std::signbit(r) ? 0x8000 : 0;
  double a = std::fabs(r);
  if (std::isinf(a)) return sign | 0x7C00;
  if (a < std::ldexp(1.0, -14)) {  // subnormal (or zero): a = m * 2^-24
    return sign | static_cast<uint16_t>(std::ldexp(a, 24));
  }
  int e2 = 0;
  std::frexp(a, &e2);
  int e = e2 - 1;
  auto mant = static_cast<uint16_t>(std::ldexp(a, 10 - e) - 1024.0);
  return sign | static_cast<uint16_t>((e + 15) << 10) | mant;
}

double DecodeF16(uint16_t bits) {
  double sign = (bits & 0x8000) ? -1.0 : 1.0;
  int exp = (bits >> 10) & 0x1F;
  int mant = bits & 0x3FF;
  if (exp == 0x1F) return mant ? std::numeric_limits<double>::quiet_NaN() : sign * INFINITY;
  if (exp == 0) return sign * std::ldexp(mant, -24);
  return sign * std::ldexp(1024 + mant, exp - 25);
}

uint16_t EncodeBF16(double x) {
  if (std::isnan(x)) return 0x7FC0;
  auto f = static_cast<float>(RoundToBF16(x));  // exact: bf16 values are floats
  uint32_t u = 0;
  std::memcpy(&u, &f, 4);
  return static_cast<uint16_t>(u >> 16);
}

double DecodeBF16(uint16_t bits) {
  uint32_t u = static_cast<uint32_t>(bits) << 16;
  float f = 0;
  std::memcpy(&f, &u, 4);
  return f;
}

double DecodeE4M3FN(uint8_t bits) {
  const double sign = (bits & 0x80) ? -1.0 : 1.0;
  const int exp = (bits >> 3) & 0xF, mant = bits & 0x7;
  if (exp == 0xF && mant == 0x7) return std::numeric_limits<double>::quiet_NaN();
  if (exp == 0) return sign * std::ldexp(mant, -9);  // subnormal (and signed zero)
  return sign * std::ldexp(8 + mant, exp - 10);      // (1 + mant/8) * 2^(exp - 7)
}

double DecodeHiF8(uint8_t bits) {
  const double sign = (bits & 0x80) ? -1.0 : 1.0;
  const int mag = bits & 0x7F;
  if (mag == 0) return (bits & 0x80) ? std::numeric_limits<double>::quiet_NaN() : 0.0;
  if (mag == 0x6F) return sign * std::numeric_limits<double>::infinity();
  // The dot prefixes after the sign bit: its bits, its length, the exponent width D it encodes.
  struct Dot {
    int prefix, length, exp_width;
  };
  static const Dot kDots[] = {
      {0b11, 2, 4}, {0b10, 2, 3}, {0b01, 2, 2}, {0b001, 3, 1}, {0b0001, 4, 0}};
  for (const Dot& d : kDots) {
    if ((mag >> (7 - d.length)) != d.prefix) continue;
    const int rest = mag & ((1 << (7 - d.length)) - 1);  // exponent field then mantissa
    const int mant_bits = 7 - d.length - d.exp_width;
    const int mant = rest & ((1 << mant_bits) - 1);
    int e = 0;
    if (d.exp_width > 0) {
      const int field = rest >> mant_bits;  // sign bit, then D - 1 magnitude bits
      const int magnitude = (1 << (d.exp_width - 1)) | (field & ((1 << (d.exp_width - 1)) - 1));
      e = (field >> (d.exp_width - 1)) ? -magnitude : magnitude;
    }
    return sign * std::ldexp(1.0 + std::ldexp(mant, -mant_bits), e);
  }
  return sign * std::ldexp(1.0, (mag & 0x7) - 23);  // dot 0000: denormal 2^(M - 23)
}

namespace {

// The non-negative finite values of an 8-bit format with their codes, ascending.
struct Code8 {
  double value;
  uint8_t code;
};
std::vector<Code8> NonNegativeCodes(double (*decode)(uint8_t)) {
  std::vector<Code8> v;
  for (int c = 0; c < 0x80; ++c) {
    const double d = decode(static_cast<uint8_t>(c));
    if (std::isfinite(d)) v.push_back({d, static_cast<uint8_t>(c)});
  }
  std::sort(v.begin(), v.end(), [](const Code8& a, const Code8& b) { return a.value < b.value; });
  return v;
}

// The code of the value nearest to |x| (x finite, below the overflow threshold); a tie goes to
// the even code (ties_away = false) or to the larger magnitude (ties_away = true).
uint8_t NearestMagnitude(const std::vector<Code8>& codes, double x, bool ties_away) {
  const double a = std::fabs(x);
  auto hi = std::lower_bound(codes.begin(), codes.end(), a,
                             [](const Code8& c, double v) { return c.value < v; });
  if (hi == codes.end()) return codes.back().code;  // between max and the overflow threshold
  if (hi->value == a || hi == codes.begin()) return hi->code;
  const auto lo = hi - 1;
  const double below = a - lo->value, above = hi->value - a;
  if (below < above) return lo->code;
  if (above < below) return hi->code;
  if (ties_away) return hi->code;
  return (lo->code & 1) == 0 ? lo->code : hi->code;
}

}  // namespace

uint8_t EncodeE4M3FN(double x) {
  static const std::vector<Code8> codes = NonNegativeCodes(DecodeE4M3FN);
  const uint8_t sign = std::signbit(x) ? 0x80 : 0;
  if (std::isnan(x) || std::fabs(x) > 464.0) return sign | 0x7F;  // 464: halfway 448 .. 480
  return sign | NearestMagnitude(codes, x, /*ties_away=*/false);
}

uint8_t EncodeHiF8(double x) {
  static const std::vector<Code8> codes = NonNegativeCodes(DecodeHiF8);
  if (std::isnan(x)) return 0x80;
  const uint8_t sign = std::signbit(x) ? 0x80 : 0;
  if (std::fabs(x) >= 40960.0) return sign | 0x6F;  // halfway 32768 .. 49152: Inf
  const uint8_t code = NearestMagnitude(codes, x, /*ties_away=*/true);
  return code == 0 ? 0 : sign | code;
}

double UlpOf(double x, aclDataType dtype) {
  int mant = 52, emin = -1022;
  switch (dtype) {
    case ACL_FLOAT16:
      mant = 10, emin = -14;
      break;
    case ACL_BF16:
      mant = 7, emin = -126;
      break;
    case ACL_FLOAT:
      mant = 23, emin = -126;
      break;
    default:
      break;
  }
  int e2 = 0;
  if (x != 0.0) std::frexp(x, &e2);
  int e = (x == 0.0) ? emin : std::max(e2 - 1, emin);
  return std::ldexp(1.0, e - mant);
}

size_t DtypeBytes(aclDataType dtype) {
  switch (dtype) {
    case ACL_FLOAT8_E4M3FN:
    case ACL_HIFLOAT8:
      return 1;
    case ACL_FLOAT16:
    case ACL_BF16:
      return 2;
    case ACL_FLOAT:
      return 4;
    case ACL_DOUBLE:
      return 8;
    default:
      throw std::invalid_argument("acltest: unsupported dtype " + DtypeName(dtype));
  }
}

std::string DtypeName(aclDataType dtype) {
  switch (dtype) {
    case ACL_FLOAT16:
      return "f16";
    case ACL_BF16:
      return "bf16";
    case ACL_FLOAT:
      return "f32";
    case ACL_DOUBLE:
      return "f64";
    case ACL_FLOAT8_E4M3FN:
      return "f8e4m3fn";
    case ACL_HIFLOAT8:
      return "hif8";
    default:
      return "dtype" + std::to_string(static_cast<int>(dtype));
  }
}

std::string ShapeStr(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

int64_t Numel(const std::vector<int64_t>& shape) {
  return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
}

}  // namespace acltest
