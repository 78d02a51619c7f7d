// Bit-exact conversions between float and the two 8-bit float formats Ascend910_95 computes a
// transposed convolution's gradInput in (aclnnConvolutionBackward, 002 dtype constraint). Every
// 8-bit value is exactly a float (and a fp16), so decoding is exact; the encoders round once.
//
// FLOAT8_E4M3FN (OCP 8-bit Floating Point Specification, E4M3): S.EEEE.MMM, bias 7, subnormals
//   M * 2^-9 at E = 0, no infinities, NaN = S.1111.111, max finite 448 = 0.1111.110. Encoding
//   rounds to nearest, ties to even; a magnitude whose rounded value exceeds 448 (|x| > 464), an
//   infinity and a NaN all give NaN with x's sign (the OCP non-saturating mode, PyTorch's
//   float8_e4m3fn conversion). -0 is kept.
//
// HIFLOAT8 (Luo et al., "Ascend HiFloat8 Format for Deep Learning", arXiv 2409.16626): sign bit,
//   then a prefix-coded "dot" field giving the exponent width D, a sign-magnitude exponent of D
//   bits whose magnitude has an implicit leading 1 (so |E| in [2^(D-1), 2^D - 1]), and the
//   remaining bits of mantissa (tapered precision):
//     dot 11   D = 4  |E| in 8..15  1 mantissa bit
//     dot 10   D = 3  |E| in 4..7   2 mantissa bits
//     dot 01   D = 2  |E| in 2..3   3 mantissa bits
//     dot 001  D = 1  |E| = 1       3 mantissa bits
//     dot 0001 D = 0  E = 0         3 mantissa bits
//     dot 0000 denormal: the 3 low bits M = 1..7 give 2^(M - 23) (2^-22 .. 2^-16)
//   Special codes: 0x00 = 0 (the only zero), 0x80 = NaN, 0x6F / 0xEF = +/-Inf (the dot-11 code of
//   E = +15 with mantissa 1); max finite 2^15 = 0x6E, smallest 2^-22 = 0x01. Encoding rounds to
//   nearest with ties away from zero (the paper's "TA" rounding, also what Huawei's AICPU
//   kernels and en_dtypes implement): the spacing changes only at powers of two, which are all
//   representable, so this is round-to-nearest over the value set. Overflow follows the same
//   rule against the next step 1.5 * 2^15: |x| >= 40960 (1.25 * 2^15) and +/-Inf give +/-Inf;
//   |x| < 2^-23 gives 0 (2^-23 itself ties away to 2^-22); NaN gives NaN.
#pragma once

#include <array>
#include <bit>
#include <cstdint>

namespace aclnn_cpu::conv {

// FLOAT8_E4M3FN bits -> float (exact).
constexpr float e4m3fn_to_float(uint8_t b) {
  const uint32_t sign = static_cast<uint32_t>(b & 0x80u) << 24;
  const uint32_t exp = (b >> 3) & 0xFu, mant = b & 0x7u;
  if (exp == 0xFu && mant == 0x7u) return std::bit_cast<float>(sign | 0x7FC00000u);  // NaN
  if (exp != 0) return std::bit_cast<float>(sign | ((exp + 120u) << 23) | (mant << 20));
  const float v = static_cast<float>(mant) * 0.001953125f;  // subnormal mant * 2^-9, or zero
  return sign ? -v : v;
}

// float -> FLOAT8_E4M3FN bits: round to nearest even; beyond 448 after rounding, Inf, NaN: NaN.
constexpr uint8_t float_to_e4m3fn(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const auto sign = static_cast<uint8_t>((x >> 24) & 0x80u);
  const uint32_t a = x & 0x7FFFFFFFu;
  if (a > 0x43E80000u) return sign | 0x7Fu;  // > 464 (rounds past 448), Inf, NaN
  if ((a >> 23) == 0) return sign;           // float zero / subnormal: far below 2^-10
  const int32_t e = static_cast<int32_t>(a >> 23) - 127;
  const uint32_t mant = (a & 0x7FFFFFu) | 0x800000u;  // 24-bit significand
  // Bits below E4M3's quantum: 20 for normal results (3 mantissa bits), more for subnormal
  // ones (fixed quantum 2^-9).
  const int32_t shift = e >= -6 ? 20 : 20 + (-6 - e);
  if (shift > 24) return sign;  // below 2^-10, half the smallest subnormal
  uint32_t r = mant >> shift;
  const uint32_t rem = mant & ((1u << shift) - 1u), halfway = 1u << (shift - 1);
  if (rem > halfway || (rem == halfway && (r & 1u))) ++r;
  // Normal: r = 8..16 carries the implicit bit, so (e + 6) * 8 + r is the biased exponent field
  // followed by the mantissa, a rounding carry moving to the next binade. Subnormal: r (<= 8) is
  // the code itself (8 = the smallest normal).
  const uint32_t bits = e >= -6 ? (static_cast<uint32_t>(e + 6) << 3) + r : r;
  return static_cast<uint8_t>(sign | bits);
}

// HIFLOAT8 bits -> float (exact).
constexpr float hif8_to_float(uint8_t b) {
  const uint32_t sign = static_cast<uint32_t>(b & 0x80u) << 24;
  const uint32_t a = b & 0x7Fu;
  if (a == 0) return sign ? std::bit_cast<float>(0x7FC00000u) : 0.0f;  // 0x80 NaN, 0x00 zero
  if (a == 0x6Fu) return std::bit_cast<float>(sign | 0x7F800000u);     // +/-Inf
  if (a < 0x08u) {  // dot 0000: denormal 2^(M - 23), M = 1..7
    return std::bit_cast<float>(sign | ((a + 104u) << 23));
  }
  if (a < 0x10u) {  // dot 0001: E = 0
    return std::bit_cast<float>(sign | (127u << 23) | ((a & 7u) << 20));
  }
  int32_t e = 0;
  uint32_t mant = a & 7u, mant_bits = 3;
  bool exp_negative = (a & 0x10u) != 0;  // the exponent's sign bit of dots 11, 10 and 01
  switch (a >> 5) {
    case 3:  // dot 11
      e = 8 + static_cast<int32_t>((a >> 1) & 7u), mant = a & 1u, mant_bits = 1;
      break;
    case 2:  // dot 10
      e = 4 + static_cast<int32_t>((a >> 2) & 3u), mant = a & 3u, mant_bits = 2;
      break;
    case 1:  // dot 01
      e = 2 + static_cast<int32_t>((a >> 3) & 1u);
      break;
    default:  // dot 001: the next bit is the exponent's sign, |E| = 1
      e = 1, exp_negative = (a & 8u) != 0;
      break;
  }
  if (exp_negative) e = -e;
  return std::bit_cast<float>(sign | (static_cast<uint32_t>(e + 127) << 23) |
                              (mant << (23 - mant_bits)));
}

// HIFLOAT8 mantissa bits at unbiased exponent e (-22 <= e <= 15); 0 for the denormals.
constexpr int hif8_mantissa_bits(int32_t e) {
  const int32_t m = e < 0 ? -e : e;
  return e < -15 ? 0 : m <= 3 ? 3 : m <= 7 ? 2 : 1;
}

// float -> HIFLOAT8 bits: round to nearest, ties away from zero; see the header comment for
// overflow (Inf), underflow (0) and NaN.
constexpr uint8_t float_to_hif8(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const auto sign = static_cast<uint8_t>((x >> 24) & 0x80u);
  const uint32_t a = x & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return 0x80u;          // NaN
  if (a >= 0x47200000u) return sign | 0x6Fu;  // >= 40960, Inf: Inf
  if (a < 0x34000000u) return 0x00u;          // < 2^-23: the only zero
  int32_t e = static_cast<int32_t>(a >> 23) - 127;
  if (e == -23) return sign | 0x01u;  // [2^-23, 2^-22): nearest (or tie) 2^-22
  const int mant_bits = hif8_mantissa_bits(e);
  const int shift = 23 - mant_bits;
  const uint32_t mant = (a & 0x7FFFFFu) | 0x800000u;
  uint32_t r = (mant + (1u << (shift - 1))) >> shift;  // half away from zero on the magnitude
  uint32_t frac = r & ((1u << mant_bits) - 1u);
  if (r >> (mant_bits + 1)) {  // carried to the next power of two (always representable)
    ++e;
    frac = 0;
  }
  if (e <= -16) return sign | static_cast<uint8_t>(e + 23);  // denormal 2^e
  const uint32_t m = static_cast<uint32_t>(e < 0 ? -e : e);
  const uint32_t neg = e < 0 ? 1u : 0u;
  uint32_t code;
  if (m == 0) {
    code = 0x08u | frac;  // dot 0001
  } else if (m == 1) {
    code = 0x10u | (neg << 3) | frac;  // dot 001
  } else if (m <= 3) {
    code = 0x20u | (neg << 4) | ((m - 2) << 3) | frac;  // dot 01
  } else if (m <= 7) {
    code = 0x40u | (neg << 4) | ((m - 4) << 2) | frac;  // dot 10
  } else {
    code = 0x60u | (neg << 4) | ((m - 8) << 1) | frac;  // dot 11
  }
  return static_cast<uint8_t>(sign | code);
}

// Decoding tables: the 256 values of each format as floats (built at compile time).
template <float (*Decode)(uint8_t)>
constexpr std::array<float, 256> float8_table() {
  std::array<float, 256> t{};
  for (int i = 0; i < 256; ++i) t[static_cast<size_t>(i)] = Decode(static_cast<uint8_t>(i));
  return t;
}
inline constexpr std::array<float, 256> kE4m3fnValues = float8_table<e4m3fn_to_float>();
inline constexpr std::array<float, 256> kHif8Values = float8_table<hif8_to_float>();

}  // namespace aclnn_cpu::conv
