// Dtype metadata, value conversion rules and round trips through to(dtype).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tensor/creation.h"
#include "tensor/tensor.h"

namespace aclgrad {
namespace {

TEST(Dtype, SizesNamesAndKinds) {
  EXPECT_EQ(element_size(Dtype::Float32), 4);
  EXPECT_EQ(element_size(Dtype::Float64), 8);
  EXPECT_EQ(element_size(Dtype::Float16), 2);
  EXPECT_EQ(element_size(Dtype::BFloat16), 2);
  EXPECT_EQ(element_size(Dtype::Int64), 8);
  EXPECT_EQ(element_size(Dtype::Bool), 1);
  EXPECT_STREQ(dtype_name(Dtype::BFloat16), "bfloat16");
  EXPECT_STREQ(dtype_name(Dtype::Float16), "float16");
  EXPECT_TRUE(is_floating_point(Dtype::Float16));
  EXPECT_FALSE(is_floating_point(Dtype::Int64));
  EXPECT_FALSE(is_floating_point(Dtype::Bool));
  EXPECT_EQ(empty({2}).dtype(), Dtype::Float32);  // the default
  EXPECT_EQ(tensor({1, 2}).dtype(), Dtype::Int64);
  EXPECT_EQ(tensor({1.0, 2.0}).dtype(), Dtype::Float64);
  EXPECT_EQ(tensor({true}).dtype(), Dtype::Bool);
}

TEST(Dtype, ToSameDtypeReturnsSameTensor) {
  Tensor a = ones({3});
  EXPECT_EQ(a.to(Dtype::Float32).impl(), a.impl());
  Tensor b = a.to(Dtype::Float64);
  EXPECT_FALSE(b.shares_storage(a));
  EXPECT_EQ(b.dtype(), Dtype::Float64);
}

TEST(Dtype, Float32ThroughFloat64RoundTripsExactly) {
  const std::vector<float> v{0.1f, -3.4028235e38f, 1.17549435e-38f, 1.4e-45f, -0.0f, 12345.678f};
  const Tensor back = from_vector(v).to(Dtype::Float64).to(Dtype::Float32);
  const std::vector<float> got = back.to_vector<float>();
  for (size_t i = 0; i < v.size(); ++i) {
    EXPECT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(v[i])) << i;
  }
}

TEST(Dtype, Int64ThroughFloat64RoundTripsBelow2To53) {
  const std::vector<int64_t> v{0, -1, 42, (int64_t{1} << 53), -(int64_t{1} << 53) + 7};
  EXPECT_EQ(from_vector(v).to(Dtype::Float64).to(Dtype::Int64).to_vector<int64_t>(), v);
}

TEST(Dtype, FloatToInt64TruncatesSaturatesAndMapsNanToZero) {
  const std::vector<double> v{2.9, -2.9, 1e30, -1e30, NAN, INFINITY, -0.5};
  const std::vector<int64_t> want{2,
                                  -2,
                                  std::numeric_limits<int64_t>::max(),
                                  std::numeric_limits<int64_t>::min(),
                                  0,
                                  std::numeric_limits<int64_t>::max(),
                                  0};
  EXPECT_EQ(from_vector(v).to(Dtype::Int64).to_vector<int64_t>(), want);
}

TEST(Dtype, BoolConversionIsNonZero) {
  const std::vector<double> v{0.0, -0.0, 0.25, -3, NAN};
  const std::vector<bool> got = from_vector(v).to(Dtype::Bool).to_vector<bool>();
  EXPECT_EQ(got, (std::vector<bool>{false, false, true, true, true}));
  EXPECT_EQ(tensor({true, false}).to(Dtype::Float32).to_vector<float>(),
            (std::vector<float>{1, 0}));
  EXPECT_EQ(tensor({true, false}).to(Dtype::Int64).to_vector<int64_t>(),
            (std::vector<int64_t>{1, 0}));
}

TEST(Dtype, HalfAndBFloat16HandPickedValues) {
  // Bit patterns from the IEEE binary16 / bfloat16 definitions.
  auto half_bits = [](float f) {
    return from_vector(std::vector<float>{f}).to(Dtype::Float16).data_ptr<Half>()->bits;
  };
  auto bf16_bits = [](float f) {
    return from_vector(std::vector<float>{f}).to(Dtype::BFloat16).data_ptr<BFloat16>()->bits;
  };
  EXPECT_EQ(half_bits(1.0f), 0x3c00);
  EXPECT_EQ(half_bits(-2.0f), 0xc000);
  EXPECT_EQ(half_bits(65504.0f), 0x7bff);             // largest finite
  EXPECT_EQ(half_bits(65520.0f), 0x7c00);             // halfway to 2^16: ties to even = inf
  EXPECT_EQ(half_bits(0x1p-24f), 0x0001);             // smallest subnormal
  EXPECT_EQ(half_bits(0x1p-25f), 0x0000);             // tie with 0: even
  EXPECT_EQ(half_bits(1.0f + 0x1p-11f), 0x3c00);      // tie: even
  EXPECT_EQ(half_bits(1.0f + 3 * 0x1p-11f), 0x3c02);  // tie: even (up)
  EXPECT_EQ(bf16_bits(1.0f), 0x3f80);
  EXPECT_EQ(bf16_bits(-0.0f), 0x8000);
  EXPECT_EQ(bf16_bits(1.0f + 0x1p-8f), 0x3f80);      // tie: even
  EXPECT_EQ(bf16_bits(1.0f + 3 * 0x1p-8f), 0x3f82);  // tie: even (up)
  EXPECT_EQ(bf16_bits(3.4028235e38f), 0x7f80);       // FLT_MAX rounds to inf
}

TEST(Dtype, HalfTypesRoundTripThroughTensors) {
  const std::vector<float> v{1.0f, -0.5f, 1024.0f, 0x1p-14f, 0x1p-24f, -65504.0f, 3.0f};
  EXPECT_EQ(from_vector(v).to(Dtype::Float16).to(Dtype::Float32).to_vector<float>(), v);
  const std::vector<float> b{1.0f, -0.5f, 0x1p100f, 0x1p-130f, -3.0f, 0.0f};
  EXPECT_EQ(
      from_vector(b).to(Dtype::BFloat16).to(Dtype::Float64).to(Dtype::Float32).to_vector<float>(),
      b);
}

TEST(Dtype, DoubleRoundsOnceToHalfAndBFloat16) {
  // Rounding through float first would land on the tie and round to even (1.0); the exact
  // value is above the tie and must round up.
  const double h = 1.0 + 0x1p-11 + 0x1p-40;
  EXPECT_EQ(from_vector(std::vector<double>{h}).to(Dtype::Float16).data_ptr<Half>()->bits, 0x3c01);
  const double b = 1.0 + 0x1p-8 + 0x1p-40;
  EXPECT_EQ(from_vector(std::vector<double>{b}).to(Dtype::BFloat16).data_ptr<BFloat16>()->bits,
            0x3f81);
  const double below = 1.0 + 0x1p-11 - 0x1p-40;  // just below the tie: down
  EXPECT_EQ(Half(below).bits, 0x3c00);
  EXPECT_TRUE(std::isnan(static_cast<float>(Half(std::nan("")))));
  EXPECT_EQ(Half(1e300).bits, 0x7c00);
  EXPECT_EQ(BFloat16(-1e300).bits, 0xff80);
}

TEST(Dtype, ScalarKeepsKindUntilConversion) {
  EXPECT_EQ(Scalar(true).to<float>(), 1.0f);
  EXPECT_EQ(Scalar(int64_t{-5}).to<double>(), -5.0);
  EXPECT_EQ(Scalar(2.75).to<int64_t>(), 2);
  EXPECT_EQ(Scalar(0.1).to<Half>().bits, 0x2e66);  // 0.1 in binary16
  EXPECT_TRUE(Scalar(1.5f).is_floating_point());
  EXPECT_FALSE(Scalar(3).is_floating_point());
}

}  // namespace
}  // namespace aclgrad
