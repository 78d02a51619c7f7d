// The AMX bf16 GEMM (aclnn/src/gemm/amx_gemm.h) and the software model of the tile instructions
// it is written over (gemm/amx_tiles.h): the model against hand-computed cases of TDPBF16PS's
// definition, the kernel on the model against a float64 reference and against the definition bit
// for bit on edge shapes (every machine), and the instructions against the model where the CPU
// has AMX and Linux grants the tile data. The sources under test are compiled in.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "cpu/cpu.h"
#include "gemm/amx_gemm.h"
#include "support/acl_test_util.h"

namespace {

namespace gemm = aclnn_cpu::gemm;
namespace cpu = aclnn_cpu::cpu;

// bf16 bits as fp32 (the test support's format definitions: exact, denormals kept).
float Bf16Value(uint16_t bits) {
  return static_cast<float>(acltest::DecodeBF16(bits));
}

// One TDPBF16PS on the model with C [1][1] = c0, A [1][P pairs] and B [P pairs][1].
float OneDot(float c0, const std::vector<float>& a, const std::vector<float>& b) {
  const int P = static_cast<int>(a.size() / 2);
  gemm::TileConfig cfg;
  cfg.set(0, 1, 4);
  cfg.set(1, 1, 4 * P);
  cfg.set(2, P, 4);
  gemm::AmxModel m;
  m.configure(cfg);
  alignas(64) float c[16] = {c0};
  alignas(64) uint16_t at[32] = {}, bt[16 * 32] = {};
  for (int i = 0; i < 2 * P; ++i) at[i] = acltest::EncodeBF16(a[i]);
  for (int p = 0; p < P; ++p)
    bt[p * 32] = acltest::EncodeBF16(b[2 * p]), bt[p * 32 + 1] = acltest::EncodeBF16(b[2 * p + 1]);
  m.load<0>(c, 64);
  m.load<1>(at, 64);
  m.load<2>(bt, 64);
  m.dpbf16ps<0, 1, 2>();
  m.store<0>(c, 64);
  return c[0];
}

// The even products and the odd ones are summed apart and then added: 2^24 + 1 + 1 stays 2^24 in
// one running sum, but the odd sum (1 + 1) survives when added once.
TEST(AmxModel, EvenAndOddProductsSumApartThenAdd) {
  const float big = 16777216.0f;  // 2^24
  EXPECT_EQ(OneDot(0.0f, {1, 1, 1, 1}, {big, 1, 1, 1}), big + 2.0f);
  // and the pair sum is added to C last: C = 2^24, pairs (1, 1) -> 2^24 + 2.
  EXPECT_EQ(OneDot(big, {1, 1}, {1, 1}), big + 2.0f);
}

TEST(AmxModel, DenormalInputsReadAsZeroAndDenormalResultsFlush) {
  const float tiny = Bf16Value(0x0001);  // the smallest bf16 denormal, 2^-133
  EXPECT_EQ(OneDot(0.0f, {tiny, 0}, {std::ldexp(1.0f, 100), 0}), 0.0f);
  // 2^-70 * 2^-70 = 2^-140, denormal in fp32: flushed.
  const float small = std::ldexp(1.0f, -70);
  EXPECT_EQ(OneDot(0.0f, {small, 0}, {small, 0}), 0.0f);
  EXPECT_EQ(OneDot(0.0f, {small, 0}, {std::ldexp(1.0f, 60), 0}), std::ldexp(1.0f, -10));
  // a denormal already in C reads as zero too
  EXPECT_EQ(OneDot(std::bit_cast<float>(0x00000001u), {0, 0}, {0, 0}), 0.0f);  // fp32 denormal
}

TEST(AmxModel, LoadsAndStoresMoveOnlyTheConfiguredShape) {
  gemm::TileConfig cfg;
  cfg.set(3, 2, 8);  // 2 rows x 8 bytes
  gemm::AmxModel m;
  m.configure(cfg);
  std::vector<uint8_t> src(4 * 64), dst(4 * 64, 0xAB);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i + 1);
  m.load<3>(src.data(), 64);
  m.store<3>(dst.data(), 32);  // another stride on the way out
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 32; ++c) {
      const bool in = r < 2 && c < 8;
      EXPECT_EQ(dst[r * 32 + c], in ? src[r * 64 + c] : 0xAB) << r << "," << c;
    }
  gemm::AmxModel unconfigured;
  EXPECT_THROW(unconfigured.zero<0>(), std::logic_error);
  gemm::TileConfig bad;
  bad.set(0, 17, 64);
  EXPECT_THROW(m.configure(bad), std::logic_error);
}

// Random bf16 values with few significant bits, mixed signs and magnitudes.
std::vector<uint16_t> RandomBf16(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> mant(-64, 64), expo(-3, 3);
  std::vector<uint16_t> v(n);
  for (auto& x : v)
    x = acltest::EncodeBF16(std::ldexp(static_cast<float>(mant(rng)), expo(rng)) / 64.0f);
  return v;
}

// The kernel's result by the definition, independently: per k block of 32 (one TDPBF16PS per
// block), even and odd products summed apart in pair order with fused multiply-adds, then added,
// then added to C; all in fp32 (these values are normal, so DAZ and FTZ do not arise).
float DefinedSum(const std::vector<uint16_t>& a, int64_t ars, int64_t acs,
                 const std::vector<uint16_t>& b, int64_t brs, int64_t bcs, int64_t m, int64_t n,
                 int64_t K, float c) {
  for (int64_t k0 = 0; k0 < K; k0 += 32) {
    float even = 0, odd = 0;
    for (int64_t k = k0; k < k0 + 32 && k < K; k += 2) {
      even = std::fmaf(Bf16Value(a[m * ars + k * acs]), Bf16Value(b[k * brs + n * bcs]), even);
      if (k + 1 < K)
        odd = std::fmaf(Bf16Value(a[m * ars + (k + 1) * acs]),
                        Bf16Value(b[(k + 1) * brs + n * bcs]), odd);
    }
    c = c + (even + odd);
  }
  return c;
}

struct Shape {
  int64_t M, N, K;
};

TEST(AmxGemm, ModelMatchesTheDefinitionAndFloat64OnEdgeShapes) {
  const Shape shapes[] = {{1, 1, 1},     {15, 17, 31}, {16, 16, 32}, {17, 15, 33}, {33, 48, 64},
                          {48, 33, 100}, {5, 70, 2},   {64, 3, 65},  {32, 32, 0}};
  uint32_t seed = 1;
  for (const Shape& s : shapes) {
    for (bool transposed_a : {false, true}) {
      for (bool accumulate : {false, true}) {
        SCOPED_TRACE(::testing::Message()
                     << "M " << s.M << " N " << s.N << " K " << s.K << (transposed_a ? " A^T" : "")
                     << (accumulate ? " +C" : ""));
        const std::vector<uint16_t> a = RandomBf16(s.M * s.K + 1, seed++);
        const std::vector<uint16_t> b = RandomBf16(s.K * s.N + 1, seed++);
        // A as [M, K] rows, or as the transpose of a [K, M] matrix (strided view).
        const int64_t ars = transposed_a ? 1 : s.K, acs = transposed_a ? s.M : 1;
        std::vector<uint16_t> Ap(gemm::amx_packed_a_elems(s.M, s.K)),
            Bp(gemm::amx_packed_b_elems(s.K, s.N));
        gemm::amx_pack_a(s.M, s.K, {a.data(), ars, acs}, Ap.data());
        gemm::amx_pack_b(s.K, s.N, {b.data(), s.N, 1}, Bp.data());
        const int64_t ldc = s.N + 3;
        std::vector<float> C(s.M * ldc, 0.0f), C0(C.size());
        for (size_t i = 0; i < C0.size(); ++i)
          C0[i] = accumulate ? 0.25f * static_cast<float>(i % 7) : -9.0f;
        C = C0;
        gemm::amx_gemm_bf16_model(s.M, s.N, s.K, Ap.data(), Bp.data(), C.data(), ldc, accumulate);
        int64_t inexact = 0, beyond = 0;
        for (int64_t m = 0; m < s.M; ++m) {
          for (int64_t n = 0; n < s.N; ++n) {
            const float got = C[m * ldc + n];
            const float defined = DefinedSum(a, ars, acs, b, s.N, 1, m, n, s.K, 0.0f);
            const float want = accumulate ? C0[m * ldc + n] + defined : defined;
            inexact += std::memcmp(&got, &want, 4) != 0;
            double exact = accumulate ? C0[m * ldc + n] : 0.0, mag = std::fabs(exact);
            for (int64_t k = 0; k < s.K; ++k) {
              const double p =
                  acltest::DecodeBF16(a[m * ars + k * acs]) * acltest::DecodeBF16(b[k * s.N + n]);
              exact += p, mag += std::fabs(p);
            }
            beyond += std::fabs(got - exact) > (s.K + 3) * std::ldexp(1.0, -24) * mag;
          }
          for (int64_t n = s.N; n < ldc; ++n)  // columns past N untouched
            EXPECT_EQ(C[m * ldc + n], C0[m * ldc + n]);
        }
        EXPECT_EQ(inexact, 0) << "elements not as defined";
        EXPECT_EQ(beyond, 0) << "elements beyond the fp32 error bound";
      }
    }
  }
}

// The packers put every element where amx_gemm.h's layouts say and zeros in the padding, for a
// matrix read with contiguous k (cs = 1: copied in runs), transposed and through a row gap
// (gathered): every panel element is written (the buffer starts as 0xffff, not a bf16 here).
TEST(AmxPack, PanelsHoldTheMatrixAndZerosAtEveryStride) {
  const Shape shapes[] = {{1, 1, 1},    {15, 17, 31}, {16, 16, 32}, {17, 15, 33},
                          {33, 48, 64}, {5, 70, 2},   {64, 3, 65}};
  uint32_t seed = 100;
  for (const Shape& s : shapes) {
    const int64_t M = s.M, N = s.N, K = s.K, gap = 5;
    const std::vector<uint16_t> v = RandomBf16((std::max(M, N) + gap) * (K + gap), seed++);
    struct View {
      int64_t rs, cs;  // of the [rows, cols] matrix packed
    };
    // A [M, K]: rows, rows with a gap, the transpose of [K, M] (k strided).
    for (View a : {View{K, 1}, View{K + gap, 1}, View{1, M}}) {
      SCOPED_TRACE(::testing::Message()
                   << "A " << M << "x" << K << " rs " << a.rs << " cs " << a.cs);
      std::vector<uint16_t> Ap(gemm::amx_packed_a_elems(M, K), 0xffff);
      gemm::amx_pack_a(M, K, {v.data(), a.rs, a.cs}, Ap.data());
      const int64_t kb = gemm::amx_round_up(K, 32) / 32;
      int64_t wrong = 0;
      for (int64_t i = 0; i < static_cast<int64_t>(Ap.size()); ++i) {
        const int64_t c = i % 32, r = i / 32 % 16, k = i / 512 % kb, panel = i / 512 / kb;
        const int64_t m = panel * 16 + r, kk = k * 32 + c;
        wrong += Ap[i] != (m < M && kk < K ? v[m * a.rs + kk * a.cs] : uint16_t{0});
      }
      EXPECT_EQ(wrong, 0);
    }
    // B [K, N]: rows (n contiguous), rows with a gap, the transpose of [N, K] (n strided).
    for (View b : {View{N, 1}, View{N + gap, 1}, View{1, K}}) {
      SCOPED_TRACE(::testing::Message()
                   << "B " << K << "x" << N << " rs " << b.rs << " cs " << b.cs);
      std::vector<uint16_t> Bp(gemm::amx_packed_b_elems(K, N), 0xffff);
      gemm::amx_pack_b(K, N, {v.data(), b.rs, b.cs}, Bp.data());
      const int64_t kb = gemm::amx_round_up(K, 32) / 32;
      int64_t wrong = 0;
      for (int64_t i = 0; i < static_cast<int64_t>(Bp.size()); ++i) {
        const int64_t h = i % 2, n = i / 2 % 16, p = i / 32 % 16, k = i / 512 % kb;
        const int64_t panel = i / 512 / kb, kk = k * 32 + 2 * p + h, nn = panel * 16 + n;
        wrong += Bp[i] != (kk < K && nn < N ? v[kk * b.rs + nn * b.cs] : uint16_t{0});
      }
      EXPECT_EQ(wrong, 0);
    }
  }
}

// The instructions against the model, bit for bit (only where they can run).
TEST(AmxUnit, MatchesTheModelBitForBit) {
  if (!cpu::may_use(cpu::kAmxFeatures))
    GTEST_SKIP() << "no usable AMX here (" << cpu::describe() << ")";
  for (const Shape& s : {Shape{17, 33, 100}, Shape{64, 64, 256}, Shape{3, 5, 7}}) {
    const std::vector<uint16_t> a = RandomBf16(s.M * s.K, 11), b = RandomBf16(s.K * s.N, 12);
    std::vector<uint16_t> Ap(gemm::amx_packed_a_elems(s.M, s.K)),
        Bp(gemm::amx_packed_b_elems(s.K, s.N));
    gemm::amx_pack_a(s.M, s.K, {a.data(), s.K, 1}, Ap.data());
    gemm::amx_pack_b(s.K, s.N, {b.data(), s.N, 1}, Bp.data());
    std::vector<float> model(s.M * s.N), unit(s.M * s.N);
    gemm::amx_gemm_bf16_model(s.M, s.N, s.K, Ap.data(), Bp.data(), model.data(), s.N, false);
    gemm::amx_gemm_bf16_unit(s.M, s.N, s.K, Ap.data(), Bp.data(), unit.data(), s.N, false);
    EXPECT_EQ(std::memcmp(model.data(), unit.data(), model.size() * 4), 0);
  }
}

}  // namespace
