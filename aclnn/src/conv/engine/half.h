// Bit-exact conversions between float and the 16-bit formats aclnn tensors carry (IEEE fp16 and
// bfloat16), plus the operand roundings that emulate the Cube unit's reduced-precision modes.
// Every narrowing is round-to-nearest-even on the integer bits (independent of the FP environment);
// overflow goes to infinity, NaN stays NaN (quietened), fp16 subnormals are produced and read.
#pragma once

#include <bit>
#include <cstdint>

namespace aclnn_cpu::conv {

// fp16 bits -> float (exact).
inline float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  uint32_t mant = h & 0x3FFu;
  uint32_t bits;
  if (exp == 0x1Fu) {
    bits = sign | 0x7F800000u | (mant << 13);  // inf / nan
  } else if (exp != 0) {
    bits = sign | ((exp + 112u) << 23) | (mant << 13);  // normal: rebias 15 -> 127
  } else if (mant == 0) {
    bits = sign;  // signed zero
  } else {
    // Subnormal mant * 2^-24: normalise so the leading one becomes the implicit bit.
    int32_t e = -14;
    while ((mant & 0x400u) == 0) {
      mant <<= 1;
      --e;
    }
    bits = sign | (static_cast<uint32_t>(e + 127) << 23) | ((mant & 0x3FFu) << 13);
  }
  return std::bit_cast<float>(bits);
}

// float -> fp16 bits, round to nearest even.
inline uint16_t float_to_half(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t a = x & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return sign | 0x7E00u | static_cast<uint16_t>((a >> 13) & 0x3FFu);  // nan
  if (a == 0x7F800000u) return sign | 0x7C00u;                                             // inf
  if ((a >> 23) == 0) return sign;  // float zero or subnormal: far below fp16's smallest step
  const int32_t e = static_cast<int32_t>(a >> 23) - 127;  // unbiased exponent
  if (e > 15) return sign | 0x7C00u;                      // >= 2^16: overflow
  const uint32_t mant = (a & 0x7FFFFFu) | 0x800000u;      // 24-bit significand
  // Bits of the 24-bit significand below fp16's quantum at this exponent: 13 for normal fp16
  // results (quantum 2^(e-10)), more for subnormal ones (fixed quantum 2^-24).
  const int32_t shift = e >= -14 ? 13 : -1 - e;
  if (shift > 24) return sign;  // below half of the smallest subnormal
  uint32_t r = mant >> shift;
  const uint32_t rem = mant & ((1u << shift) - 1u);
  const uint32_t halfway = 1u << (shift - 1);
  if (rem > halfway || (rem == halfway && (r & 1u))) ++r;
  // Normal: r carries the implicit bit (0x400..0x800); adding it to (e+14)<<10 yields the biased
  // exponent, and a rounding carry (r == 0x800) bumps the exponent, reaching inf at the top.
  // Subnormal: r (<= 0x400) is the encoding itself (0x400 is the smallest normal).
  const uint32_t bits = e >= -14 ? (static_cast<uint32_t>(e + 14) << 10) + r : r;
  return static_cast<uint16_t>(sign | bits);
}

// bfloat16 bits -> float (exact).
inline float bf16_to_float(uint16_t b) {
  return std::bit_cast<float>(static_cast<uint32_t>(b) << 16);
}

// float -> bfloat16 bits, round to nearest even.
inline uint16_t float_to_bf16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // nan
  x += 0x7FFFu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

// HF32 emulation (cubeMathType ALLOW_FP32_DOWN_PRECISION / USE_HF32 on FLOAT): keep the fp32
// exponent, drop the low 12 of the 23 mantissa bits with round-to-nearest-even.
inline float round_to_hf32(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7F800000u) == 0x7F800000u) return f;  // inf / nan unchanged
  x += 0x7FFu + ((x >> 12) & 1u);
  x &= ~0xFFFu;
  return std::bit_cast<float>(x);
}

// USE_FP16 emulation on FLOAT operands: the value the fp16 operand would hold.
inline float round_to_half(float f) {
  return half_to_float(float_to_half(f));
}

}  // namespace aclnn_cpu::conv
