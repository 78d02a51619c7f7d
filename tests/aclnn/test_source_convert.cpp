// libaclnn's input conversion (aclnn/src/conv/engine/source.h, compiled into this test: it is not
// part of the C API). Source::convert turns stored elements into the fp32 the kernels compute with,
// and rounds them as cubeMathType asks (USE_FP16, HF32); it has an AVX-512, an AVX2 + F16C and a
// scalar form, and converts strided runs a chunk at a time. Every form must give, bit for bit,
// the value of the test support's own format definitions (acl_test_util.h), for every 16-bit
// pattern and 8-bit code, fp32 specials, subnormals and ties, at every tail length and stride,
// without writing past the n outputs. ctest runs this once per ISA cap (ACLNN_CPU_MAX_ISA unset,
// avx2, none), so each form is checked on a CPU that runs it.
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <ostream>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/acl_test_util.h"
#include "conv/engine/source.h"

namespace {

using aclnn_cpu::conv::Source;
using aclnn_cpu::conv::SrcKind;

struct KindCase {
  SrcKind kind;
  const char* name;
  size_t bytes;
};

void PrintTo(const KindCase& k, std::ostream* os) {
  *os << k.name;
}

const KindCase kKinds[] = {
    {SrcKind::kF32, "f32", 4},          {SrcKind::kF32Hf32, "f32_hf32", 4},
    {SrcKind::kF32Fp16, "f32_fp16", 4}, {SrcKind::kF16, "f16", 2},
    {SrcKind::kBF16, "bf16", 2},        {SrcKind::kBF16Fp16, "bf16_fp16", 2},
    {SrcKind::kE4M3FN, "e4m3fn", 1},    {SrcKind::kHiF8, "hif8", 1},
};

// The stored elements of one kind: every code of the 8- and 16-bit formats, and for fp32 the
// specials, subnormals, values next to fp16 / HF32 rounding ties and overflow, and random bits.
std::vector<uint8_t> Elements(const KindCase& k) {
  std::vector<uint8_t> bytes;
  if (k.bytes == 1) {
    for (int c = 0; c < 256; ++c) bytes.push_back(static_cast<uint8_t>(c));
    return bytes;
  }
  if (k.bytes == 2) {
    for (uint32_t c = 0; c < 65536; ++c) {
      const uint16_t v = static_cast<uint16_t>(c * 40503u);  // every code, scrambled order
      bytes.push_back(static_cast<uint8_t>(v & 0xFF));
      bytes.push_back(static_cast<uint8_t>(v >> 8));
    }
    return bytes;
  }
  std::vector<float> f = {0.0f,      -0.0f,   1.0f,          -1.0f,    INFINITY,
                          -INFINITY, NAN,     -NAN,          65504.0f, 65520.0f,
                          65519.99f, 1e-8f,   5.96e-8f,      2.98e-8f, 2.9802322e-8f,
                          1e-40f,    -1e-45f, 3.4028235e38f, 6.1e-5f,  1.0009765625f};
  std::mt19937 rng(20261126);
  for (int i = 0; i < 4096; ++i) {  // fp16 values and their midpoints, +-1 fp32 ulp
    const uint16_t h = static_cast<uint16_t>(rng());
    const float a = static_cast<float>(acltest::DecodeF16(h));
    const float b = static_cast<float>(acltest::DecodeF16(static_cast<uint16_t>(h + 1)));
    if (!std::isfinite(a) || !std::isfinite(b)) continue;
    const float mid = static_cast<float>((static_cast<double>(a) + b) / 2);
    for (float v : {mid, std::nextafter(mid, INFINITY), std::nextafter(mid, -INFINITY)})
      f.push_back(v);
  }
  for (int i = 0; i < 8192; ++i) {
    const uint32_t bits = static_cast<uint32_t>(rng());
    // HF32 ties: low 12 bits exactly 0x800.
    f.push_back(std::bit_cast<float>(i % 2 ? bits : (bits & ~0xFFFu) | 0x800u));
  }
  bytes.resize(f.size() * 4);
  std::memcpy(bytes.data(), f.data(), bytes.size());
  return bytes;
}

// Element i of the stored bytes as the kind defines it, from the test support's definitions.
float Expected(const KindCase& k, const uint8_t* p) {
  uint16_t h;
  float f;
  switch (k.kind) {
    case SrcKind::kE4M3FN:
      return static_cast<float>(acltest::DecodeE4M3FN(*p));
    case SrcKind::kHiF8:
      return static_cast<float>(acltest::DecodeHiF8(*p));
    case SrcKind::kF16:
      std::memcpy(&h, p, 2);
      return static_cast<float>(acltest::DecodeF16(h));
    case SrcKind::kBF16:
    case SrcKind::kBF16Fp16:
      std::memcpy(&h, p, 2);
      f = static_cast<float>(acltest::DecodeBF16(h));
      return k.kind == SrcKind::kBF16 ? f : static_cast<float>(acltest::RoundToF16(f));
    default:
      break;
  }
  std::memcpy(&f, p, 4);
  if (k.kind == SrcKind::kF32Hf32) return static_cast<float>(acltest::RoundToHF32(f));
  if (k.kind == SrcKind::kF32Fp16) return static_cast<float>(acltest::RoundToF16(f));
  return f;
}

bool SameValue(float a, float b) {
  return (std::isnan(a) && std::isnan(b)) ||
         std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b);
}

class SourceConvert : public ::testing::TestWithParam<KindCase> {};

// convert(n, stride) over the whole element set, in runs of every length around the vector
// widths (8, 16) and the strided chunk (64 outputs), ending at the buffer's last element so a
// read past it would leave the allocation (the sanitizer stage runs this test too).
TEST_P(SourceConvert, MatchesTheFormatDefinitions) {
  const KindCase k = GetParam();
  const std::vector<uint8_t> bytes = Elements(k);
  const int64_t total = static_cast<int64_t>(bytes.size() / k.bytes);
  const Source all{bytes.data(), k.kind};
  ASSERT_EQ(all.elem_bytes(), k.bytes);
  // Every tail length of an 8-lane vector, alone (n < 8: masked, 16-bit kinds inserting an odd
  // last element) and after whole vectors (n > 8: the last 8 elements again).
  for (int64_t stride : {1, 2, 3, 8, 9}) {
    for (int64_t n : {0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10,  11,
                      12, 13, 14, 15, 16, 17, 28, 63, 64, 65, 129, 1000}) {
      if ((n - 1) * stride >= total) continue;
      // Runs that tile the element set; the last one ends on the final element.
      std::vector<int64_t> starts;
      for (int64_t at = 0; at + std::max<int64_t>(n - 1, 0) * stride < total; at += n * stride + 1)
        starts.push_back(at);
      starts.push_back(total - 1 - std::max<int64_t>(n - 1, 0) * stride);
      std::vector<float> out(static_cast<size_t>(n) + 16);
      for (int64_t at : starts) {
        std::fill(out.begin(), out.end(), -1234.5f);
        all.at(at).convert(n, stride, out.data());
        for (int64_t i = 0; i < n; ++i) {
          const float want = Expected(k, bytes.data() + (at + i * stride) * k.bytes);
          if (!SameValue(out[i], want))
            FAIL() << k.name << " stride " << stride << " n " << n << " at " << at << " element "
                   << i << ": got " << out[i] << " (0x" << std::hex
                   << std::bit_cast<uint32_t>(out[i]) << "), want " << want << " (0x"
                   << std::bit_cast<uint32_t>(want) << ")";
        }
        for (size_t i = static_cast<size_t>(n); i < out.size(); ++i)
          ASSERT_EQ(out[i], -1234.5f)
              << k.name << ": wrote past n = " << n << " (stride " << stride << ")";
      }
    }
  }
}

// Source::value, the scalar definition the kernels' bands also use, agrees with the formats.
TEST_P(SourceConvert, ValueMatchesTheFormatDefinitions) {
  const KindCase k = GetParam();
  const std::vector<uint8_t> bytes = Elements(k);
  const Source all{bytes.data(), k.kind};
  for (int64_t i = 0; i < static_cast<int64_t>(bytes.size() / k.bytes); ++i)
    ASSERT_TRUE(SameValue(all.value(i), Expected(k, bytes.data() + i * k.bytes)))
        << k.name << " element " << i;
}

// Element i of the stored bytes as stored, before any rounding the kind applies.
double Stored(const KindCase& k, const uint8_t* p) {
  uint16_t h;
  float f;
  if (k.bytes == 2) {
    std::memcpy(&h, p, 2);
    return k.kind == SrcKind::kF16 ? acltest::DecodeF16(h) : acltest::DecodeBF16(h);
  }
  std::memcpy(&f, p, 4);
  return f;
}

// convert_sum (the depthwise pass's dy: converted for the kernels, its stored values summed for
// gradBias in the same pass) converts exactly as convert does and returns the sum of the values
// as stored, element i added into lane i % 16 and the lanes then added in order (sum_run_f32's
// order, so the sum is the same whichever form ran). Runs of every tail length end on the last
// element; nothing is written past n. Kinds without an exact stored fp32 value are refused.
TEST_P(SourceConvert, ConvertSumConvertsAndSumsTheStoredValues) {
  const KindCase k = GetParam();
  const std::vector<uint8_t> bytes = Elements(k);
  const int64_t total = static_cast<int64_t>(bytes.size() / k.bytes);
  const Source all{bytes.data(), k.kind};
  std::vector<float> out(64), want(64);
  if (k.bytes == 1 || k.kind == SrcKind::kBF16Fp16) {
    EXPECT_THROW(all.convert_sum(8, out.data()), std::logic_error) << k.name;
    return;
  }
  for (int64_t n : {0, 1, 7, 8, 9, 15, 16, 17, 23, 31, 33, 1000}) {
    std::vector<int64_t> starts;
    for (int64_t at = 0; at + n <= total; at += n + 1) starts.push_back(at);
    starts.push_back(total - n);
    out.assign(static_cast<size_t>(n) + 16, -1234.5f);
    want.assign(out.size(), -1234.5f);
    for (int64_t at : starts) {
      std::fill(out.begin(), out.end(), -1234.5f);
      const double sum = all.at(at).convert_sum(n, out.data());
      all.at(at).convert(n, 1, want.data());
      double lanes[16] = {};
      for (int64_t i = 0; i < n; ++i) lanes[i % 16] += Stored(k, bytes.data() + (at + i) * k.bytes);
      double expect = 0.0;
      for (double l : lanes) expect += l;
      ASSERT_TRUE(sum == expect || (std::isnan(sum) && std::isnan(expect)))
          << k.name << " n " << n << " at " << at << ": sum " << sum << ", want " << expect;
      for (size_t i = 0; i < out.size(); ++i)
        ASSERT_TRUE(SameValue(out[i], want[i]))
            << k.name << " n " << n << " at " << at << " element " << i << ": " << out[i]
            << " vs convert's " << want[i] << (i >= size_t(n) ? " (past n)" : "");
    }
  }
}

// narrow16, the inverse (fp32 results written to fp16 / bf16 outputs): every fp32 value of the
// element set above (specials, subnormals, fp16 ties and their neighbours, HF32 ties, random bits)
// and every bf16 value with its midpoints must round as the test support's encoders do, at every
// tail length, reading nothing past the n inputs and writing nothing past the n outputs.
TEST(Narrow16, MatchesTheFormatDefinitions) {
  std::vector<float> values;
  const std::vector<uint8_t> f32 = Elements(kKinds[0]);
  values.resize(f32.size() / 4);
  std::memcpy(values.data(), f32.data(), f32.size());
  for (uint32_t c = 0; c < 65536; ++c) {  // bf16 codes, their midpoints and +-1 ulp around them
    const uint32_t bits = c << 16;
    for (uint32_t d : {0u, 0x8000u, 0x7FFFu, 0x8001u})
      values.push_back(std::bit_cast<float>(bits | d));
  }
  const int64_t total = static_cast<int64_t>(values.size());
  for (bool bf16 : {false, true}) {
    for (int64_t n : {0, 1, 7, 8, 9, 15, 16, 17, 31, 33, 1000}) {
      std::vector<int64_t> starts;
      for (int64_t at = 0; at + n <= total; at += n + 1) starts.push_back(at);
      starts.push_back(total - n);  // ends on the last element: a read past it leaves the buffer
      std::vector<uint16_t> out(static_cast<size_t>(n) + 16);
      for (int64_t at : starts) {
        std::fill(out.begin(), out.end(), uint16_t{0xA5A5});
        aclnn_cpu::conv::narrow16(bf16, values.data() + at, n, out.data());
        for (int64_t i = 0; i < n; ++i) {
          const float v = values[static_cast<size_t>(at + i)];
          const uint16_t got = out[static_cast<size_t>(i)];
          if (std::isnan(v)) {
            ASSERT_TRUE(std::isnan(bf16 ? acltest::DecodeBF16(got) : acltest::DecodeF16(got)))
                << (bf16 ? "bf16" : "fp16") << ": NaN 0x" << std::hex << std::bit_cast<uint32_t>(v)
                << " gave 0x" << got;
            continue;
          }
          const uint16_t want = bf16 ? acltest::EncodeBF16(v) : acltest::EncodeF16(v);
          ASSERT_EQ(got, want) << (bf16 ? "bf16" : "fp16") << " n " << n << " at " << at
                               << " element " << i << ": input " << v << " (0x" << std::hex
                               << std::bit_cast<uint32_t>(v) << ")";
        }
        for (size_t i = static_cast<size_t>(n); i < out.size(); ++i)
          ASSERT_EQ(out[i], 0xA5A5) << "wrote past n = " << n;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, SourceConvert, ::testing::ValuesIn(kKinds),
                         [](const ::testing::TestParamInfo<KindCase>& info) {
                           return std::string(info.param.name);
                         });

}  // namespace
