// ops/convert16: every vector variant this process may run gives the bits tensor/half.h's scalar
// conversions give. 16 -> 32: all 65,536 patterns. 32 -> 16: every value at, next to and halfway
// between 16-bit neighbours (the ties), all around subnormals, overflow, inf and NaN payloads,
// plus random patterns. ctest also runs this file under ACLNN_CPU_MAX_ISA=avx2 and =none.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "aclnn/aclnn_cpu_isa.h"
#include "ops/convert16.h"
#include "tensor/bulk16.h"
#include "tensor/creation.h"
#include "tensor/error.h"

namespace aclgrad {
namespace {

namespace cv = ops::convert16;

std::vector<uint16_t> all_patterns() {
  std::vector<uint16_t> v(65536);
  for (uint32_t i = 0; i < 65536; ++i) v[i] = static_cast<uint16_t>(i);
  return v;
}

// Float bit patterns around every 16-bit value: for each pattern p of the 16-bit format shown as
// a float f (f's low `drop` mantissa bits are the ones rounding removes), f itself, f +- 1 ulp,
// the halfway point to the next pattern and +-1 ulp around it. Then float subnormals, NaNs with
// payloads in the kept and the dropped bits, and random patterns.
std::vector<uint32_t> edge_floats(bool half) {
  std::vector<uint32_t> v;
  for (uint32_t p = 0; p < 65536; ++p) {
    const uint32_t f =
        half ? std::bit_cast<uint32_t>(detail::half_bits_to_float(static_cast<uint16_t>(p)))
             : p << 16;
    // Half subnormals are spaced 2^-24 apart whatever f's exponent; normals 2^13 float ulps.
    uint32_t step = 1u << 16;
    if (half) {
      const uint32_t e = (p >> 10) & 0x1f;
      step = e == 0 ? 0 : 1u << 13;
    }
    for (int64_t d : {-1, 0, 1}) v.push_back(f + static_cast<uint32_t>(d));
    if (step != 0) {
      for (int64_t d : {-1, 0, 1}) v.push_back(f + step / 2 + static_cast<uint32_t>(d));
    } else {  // half subnormal m * 2^-24: ties at (m + 1/2) * 2^-24
      const float m = static_cast<float>(p & 0x3ff);
      const uint32_t sign = (p & 0x8000u) << 16;
      const uint32_t t = std::bit_cast<uint32_t>((m + 0.5f) * 0x1p-24f) | sign;
      for (int64_t d : {-1, 0, 1}) v.push_back(t + static_cast<uint32_t>(d));
    }
  }
  for (uint32_t sign : {0u, 0x80000000u}) {
    for (uint32_t m = 0; m < (1u << 23); m += 4099) v.push_back(sign | m);  // float subnormals
    for (uint32_t m : {1u, 2u, 0x1fffu, 0x2000u, 0x3fffu, 0x7fffu, 0x8000u, 0xffffu, 0x10000u,
                       0x200000u, 0x3fffffu, 0x400000u, 0x400001u, 0x7fffffu}) {
      v.push_back(sign | 0x7f800000u | m);  // NaN: signalling and quiet, payloads
    }
    for (uint32_t x : {0x7f800000u, 0x7f7fffffu, 0x477fe000u, 0x477fefffu, 0x477ff000u, 0x477ff001u,
                       0x47800000u, 0x7f7f8000u, 0x7f7f7fffu, 0x00800000u, 0x33000000u, 0x33000001u,
                       0x32ffffffu, 0x387fc000u, 0x387fe000u}) {
      v.push_back(sign | x);  // inf, max finite, half and bf16 overflow edges, min normals
    }
  }
  std::mt19937 gen(37);
  for (int i = 0; i < (1 << 20); ++i) v.push_back(static_cast<uint32_t>(gen()));
  return v;
}

std::string where(cv::Variant v, size_t i, uint32_t input) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "variant %s, element %zu, input 0x%08x", cv::name(v), i, input);
  return buf;
}

// Runs conversions from offset `skew` so the vector loops also start unaligned and end in tails.
constexpr size_t kSkews[] = {0, 1, 7};

template <typename T>
void expect_widen_exact(T) {
  const std::vector<uint16_t> patterns = all_patterns();
  for (cv::Variant v : cv::runnable()) {
    for (size_t skew : kSkews) {
      const size_t n = patterns.size() - skew;
      std::vector<float> out(n);
      cv::widen(v, reinterpret_cast<const T*>(patterns.data() + skew), out.data(),
                static_cast<int64_t>(n));
      for (size_t i = 0; i < n; ++i) {
        const float want = static_cast<float>(T::from_bits(patterns[skew + i]));
        ASSERT_EQ(std::bit_cast<uint32_t>(out[i]), std::bit_cast<uint32_t>(want))
            << where(v, i, patterns[skew + i]);
      }
    }
  }
}

template <typename T>
void expect_narrow_exact(bool half) {
  const std::vector<uint32_t> inputs = edge_floats(half);
  for (cv::Variant v : cv::runnable()) {
    for (size_t skew : kSkews) {
      const size_t n = inputs.size() - skew;
      std::vector<T> out(n);
      cv::narrow(v, reinterpret_cast<const float*>(inputs.data() + skew), out.data(),
                 static_cast<int64_t>(n));
      for (size_t i = 0; i < n; ++i) {
        const T want(std::bit_cast<float>(inputs[skew + i]));
        ASSERT_EQ(out[i].bits, want.bits) << where(v, i, inputs[skew + i]);
      }
    }
  }
}

TEST(Convert16, SaysWhichVariantsRun) {
  const std::vector<cv::Variant> variants = cv::runnable();
  ASSERT_FALSE(variants.empty());
  EXPECT_EQ(variants.front(), cv::Variant::Scalar);
  EXPECT_EQ(cv::chosen(), variants.back());
  EXPECT_EQ(cv::may_run(cv::Variant::Avx512), aclnnCpuHasFeature("avx512f") == 1);
  EXPECT_EQ(cv::may_run(cv::Variant::Avx2F16c),
            aclnnCpuHasFeature("avx2") == 1 && aclnnCpuHasFeature("f16c") == 1);
  std::string names;
  for (cv::Variant v : variants) names += std::string(" ") + cv::name(v);
  RecordProperty("variants", names);
  std::printf("convert16 variants here:%s (%s)\n", names.c_str(), aclnnCpuIsa());
}

TEST(Convert16, RefusesAVariantThatMayNotRun) {
  for (cv::Variant v : {cv::Variant::Avx2F16c, cv::Variant::Avx512, cv::Variant::Avx512Bf16}) {
    if (cv::may_run(v)) continue;
    float f = 0;
    const Half h;
    EXPECT_THROW(cv::widen(v, &h, &f, 1), Error) << cv::name(v);
  }
}

TEST(Convert16, HalfToFloatAllPatterns) {
  expect_widen_exact(Half{});
}

TEST(Convert16, Bf16ToFloatAllPatterns) {
  expect_widen_exact(BFloat16{});
}

TEST(Convert16, FloatToHalfEdgesAndRandom) {
  expect_narrow_exact<Half>(true);
}

TEST(Convert16, FloatToBf16EdgesAndRandom) {
  expect_narrow_exact<BFloat16>(false);
}

// A vector of subnormals among normals, and one of subnormals only: AVX512_BF16's instruction
// would flush them to zero; the result must still be the scalar path's.
TEST(Convert16, FloatToBf16SubnormalVectors) {
  std::vector<float> in(64);
  for (size_t i = 0; i < in.size(); ++i) {
    const uint32_t low = 0x00018000u + static_cast<uint32_t>(i) * 0x1111u;  // < 2^23
    in[i] = std::bit_cast<float>(i < 32 && i % 3 ? 0x3f800000u + low : low);
  }
  for (cv::Variant v : cv::runnable()) {
    std::vector<BFloat16> out(in.size());
    cv::narrow(v, in.data(), out.data(), static_cast<int64_t>(in.size()));
    for (size_t i = 0; i < in.size(); ++i) {
      ASSERT_EQ(out[i].bits, BFloat16(in[i]).bits) << where(v, i, std::bit_cast<uint32_t>(in[i]));
    }
  }
}

// Tensor::to and copy_ (tensor/) convert contiguous runs with ops' bulk conversions, installed when
// ops is linked in, and give the scalar conversions' bits, contiguous or strided (a transposed
// view's runs are strided and take the scalar loop).
template <typename T>
void expect_tensor_to_exact(Dtype dt, bool half) {
  const std::vector<uint32_t> inputs = edge_floats(half);
  const int64_t cols = 1024, rows = static_cast<int64_t>(inputs.size()) / cols;
  std::vector<float> values(static_cast<size_t>(rows * cols));
  std::memcpy(values.data(), inputs.data(), values.size() * sizeof(float));
  const Tensor f32 = from_vector(values, {rows, cols}, Dtype::Float32);
  for (const Tensor& src : {f32, f32.t()}) {
    const Tensor narrow = src.to(dt).contiguous();
    const Tensor wide = narrow.to(Dtype::Float32).contiguous();
    const Tensor src_c = src.contiguous();
    const float* in = src_c.data_ptr<float>();
    const T* got = narrow.data_ptr<T>();
    const float* back = wide.data_ptr<float>();
    for (int64_t i = 0; i < src.numel(); ++i) {
      const T want(in[i]);
      ASSERT_EQ(got[i].bits, want.bits) << "element " << i;
      ASSERT_EQ(std::bit_cast<uint32_t>(back[i]), std::bit_cast<uint32_t>(static_cast<float>(want)))
          << "element " << i;
    }
  }
}

TEST(Convert16, TensorToUsesTheBulkConversions) {
  const Bulk16Converters& c = bulk16_converters();
  EXPECT_TRUE(c.widen_half && c.widen_bf16 && c.narrow_half && c.narrow_bf16)
      << "ops/convert16 did not install its conversions for Tensor::to";
  expect_tensor_to_exact<Half>(Dtype::Float16, true);
  expect_tensor_to_exact<BFloat16>(Dtype::BFloat16, false);
}

TEST(Convert16, InstallRefusesMissingConversions) {
  EXPECT_THROW(install_bulk16_converters({}), Error);
}

}  // namespace
}  // namespace aclgrad
