// Float format helpers of the test support (declared in acl_test_util.h): rounding to f16, bf16,
// f32 and HF32, f16/bf16 bit encoders and decoders, ulps. Written from the IEEE 754 definitions.
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
