// libaclnn's packed fp32 GEMM kernels (aclnn/src/gemm, compiled into this test: they are not
// part of the C API) against a naive float64 product, on every kernel this CPU runs (AVX-512,
// AVX2 + FMA, the OpenBLAS fallback), for sizes around every tile and block edge: M, N, K not
// multiples of the register tile (8 x 48 / 4 x 24), K = 1, K across the K blocks (128, 256), N
// across the N block (480), every operand layout (row-major, transposed, neither unit stride),
// accumulate or not, A packed once, B from a panel source; and that nothing outside C's block is
// written.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cpu/cpu.h"
#include "gemm/sgemm.h"
#include "support/acl_test_util.h"

namespace {

namespace gemm = aclnn_cpu::gemm;
namespace cpu = aclnn_cpu::cpu;

enum class Kernel { kAvx512, kAvx2, kOpenBlas };

std::string KernelName(const ::testing::TestParamInfo<Kernel>& info) {
  switch (info.param) {
    case Kernel::kAvx512:
      return "avx512";
    case Kernel::kAvx2:
      return "avx2";
    case Kernel::kOpenBlas:
      break;
  }
  return "openblas";
}

// Whether this CPU can run kernel k (called directly here, so the cap does not apply): the CPU
// module's reading, before the cap.
bool RunsHere(Kernel k) {
  const cpu::FeatureSet offered = cpu::capabilities().cpu.features;
  switch (k) {
    case Kernel::kAvx512:
      return offered.contains(cpu::kAvx512Features);
    case Kernel::kAvx2:
      return offered.contains(cpu::kAvx2Features);
    case Kernel::kOpenBlas:
      break;
  }
  return true;
}

// 64-byte aligned float storage (the packing scratch's requirement).
class Aligned {
 public:
  explicit Aligned(int64_t n) : buf_(static_cast<size_t>(n + 16)) {}
  float* data() {
    const auto at = reinterpret_cast<uintptr_t>(buf_.data());
    return buf_.data() + (64 - at % 64) % 64 / sizeof(float);
  }

 private:
  std::vector<float> buf_;
};

// The packed kernel under test (the AVX-512 or the AVX2 one).
const gemm::PackedKernel& Packed(Kernel k) {
  return k == Kernel::kAvx512 ? gemm::kAvx512Kernel : gemm::kAvx2Kernel;
}

int64_t PackElems(Kernel k) {
  return k == Kernel::kOpenBlas ? 0 : Packed(k).pack_elems;
}

void PackedGemm(Kernel k, int64_t M, int64_t N, int64_t K, const float* packed_a,
                const gemm::Mat* a, const gemm::Mat* b, const gemm::BPanels* panels, bool acc,
                float* C, int64_t ldc, float* scratch) {
  Packed(k).run({.M = M,
                 .N = N,
                 .K = K,
                 .packed_a = packed_a,
                 .a_rows = M,
                 .a_row0 = 0,
                 .a_mat = a,
                 .b_mat = b,
                 .b_panels = panels,
                 .accumulate = acc,
                 .C = C,
                 .ldc = ldc,
                 .scratch = scratch});
}

// A strided operand of rows x cols: layout 0 row-major (cs = 1, padded rows), 1 column-major
// (rs = 1, padded columns), 2 neither unit stride (rs = 2 * cols + 1, cs = 2).
struct Operand {
  std::vector<float> data;
  gemm::Mat mat;
  float at(int64_t r, int64_t c) const { return mat.p[r * mat.rs + c * mat.cs]; }
};

Operand MakeOperand(int64_t rows, int64_t cols, int layout, std::mt19937& rng) {
  Operand o;
  int64_t rs = cols + 3, cs = 1;  // row-major with padding
  if (layout == 1) rs = 1, cs = rows + 5;
  if (layout == 2) rs = 2 * cols + 1, cs = 2;
  o.data.assign(static_cast<size_t>((rows - 1) * rs + (cols - 1) * cs + 1), 0.0f);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) o.data[r * rs + c * cs] = dist(rng);
  o.mat = gemm::Mat{o.data.data(), rs, cs};
  return o;
}

// B panels from a strided matrix (the format BPanels::pack documents), as a conv's panel source
// would write them.
class MatPanels final : public gemm::BPanels {
 public:
  explicit MatPanels(const Operand& b) : b_(b) {}
  void pack(int64_t k0, int64_t kc, int64_t j0, int64_t n, float* Bp) const override {
    const int64_t w = gemm::kPanelCols;
    for (int64_t p = 0; p * w < n; ++p)
      for (int64_t k = 0; k < kc; ++k)
        for (int64_t c = 0; c < w; ++c)
          Bp[(p * kc + k) * w + c] = p * w + c < n ? b_.at(k0 + k, j0 + p * w + c) : 0.0f;
  }

 private:
  const Operand& b_;
};

struct Shape {
  int64_t M, N, K;
};

// Edge sizes around the tiles (8 x 48, 4 x 24), the K blocks (128, 256), MC (128) and NC (480).
std::vector<Shape> Shapes() {
  return {{1, 1, 1},     {1, 1, 7},     {3, 5, 1},     {4, 24, 1},    {5, 25, 9},
          {7, 47, 8},    {8, 48, 16},   {9, 49, 17},   {13, 23, 127}, {16, 96, 128},
          {17, 97, 129}, {12, 30, 256}, {20, 70, 257}, {130, 50, 33}, {33, 481, 40},
          {8, 500, 300}, {2, 9, 384},   {136, 7, 3},   {64, 200, 513}};
}

// max |C - ref| / (sum_k |a||b| + tiny) over the block, and whether the sentinel around it holds.
void ExpectMatches(const std::vector<float>& C, int64_t ldc, const Operand& a, const Operand& b,
                   const Shape& s, bool acc, const std::vector<float>& before,
                   const std::string& what) {
  double worst = 0.0;
  for (int64_t i = 0; i < s.M; ++i) {
    for (int64_t j = 0; j < ldc; ++j) {
      const size_t at = static_cast<size_t>(i * ldc + j);
      if (j >= s.N) {
        ASSERT_EQ(C[at], before[at]) << what << ": wrote outside C at (" << i << ", " << j << ")";
        continue;
      }
      double ref = acc ? before[at] : 0.0, mag = acc ? std::fabs(before[at]) : 0.0;
      for (int64_t k = 0; k < s.K; ++k) {
        ref += double(a.at(i, k)) * b.at(k, j);
        mag += std::fabs(double(a.at(i, k)) * b.at(k, j));
      }
      worst = std::max(worst, std::fabs(C[at] - ref) / (mag + 1e-30));
    }
  }
  // fp32 accumulation of K products: a few ulps per term at worst, relative to sum |a b|.
  EXPECT_LT(worst, 4e-6 * std::sqrt(double(s.K) + 1.0) + 2e-7)
      << what << " M=" << s.M << " N=" << s.N << " K=" << s.K;
}

class GemmKernel : public ::testing::TestWithParam<Kernel> {
 protected:
  void SetUp() override {
    if (!RunsHere(GetParam())) GTEST_SKIP() << "this CPU does not run the kernel";
  }
};

TEST_P(GemmKernel, StridedViewsMatchFloat64Reference) {
  const Kernel kern = GetParam();
  std::mt19937 rng(11);
  Aligned scratch(std::max<int64_t>(PackElems(kern), 1));
  for (const Shape& s : Shapes()) {
    for (int la = 0; la < 3; ++la) {
      for (int lb = 0; lb < 3; ++lb) {
        if (kern == Kernel::kOpenBlas && (la == 2 || lb == 2)) continue;  // needs a unit stride
        const Operand a = MakeOperand(s.M, s.K, la, rng), b = MakeOperand(s.K, s.N, lb, rng);
        for (bool acc : {false, true}) {
          const int64_t ldc = s.N + 5;
          std::vector<float> C(static_cast<size_t>(s.M * ldc));
          std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
          for (float& v : C) v = dist(rng);
          const std::vector<float> before = C;
          const std::string what = "layouts " + std::to_string(la) + "/" + std::to_string(lb);
          if (kern == Kernel::kOpenBlas) {  // sgemm without scratch: always OpenBLAS
            gemm::sgemm(s.M, s.N, s.K, a.mat, b.mat, acc, C.data(), ldc, nullptr);
          } else {
            PackedGemm(kern, s.M, s.N, s.K, nullptr, &a.mat, &b.mat, nullptr, acc, C.data(), ldc,
                       scratch.data());
          }
          ExpectMatches(C, ldc, a, b, s, acc, before, what);
          C = before;  // and sgemm's own dispatch on isa() (OpenBLAS: a unit stride needed)
          Aligned dispatch_scratch(std::max<int64_t>(gemm::pack_elems(), 1));
          if (gemm::isa() != gemm::Isa::kNone || (la != 2 && lb != 2)) {
            gemm::sgemm(s.M, s.N, s.K, a.mat, b.mat, acc, C.data(), ldc, dispatch_scratch.data());
            ExpectMatches(C, ldc, a, b, s, acc, before, what + " (dispatched)");
          }
        }
      }
    }
  }
}

TEST_P(GemmKernel, PackedAAndPanelSourceMatchFloat64Reference) {
  const Kernel kern = GetParam();
  if (kern == Kernel::kOpenBlas) GTEST_SKIP() << "packed operands are the packed kernels' only";
  std::mt19937 rng(12);
  Aligned scratch(PackElems(kern));
  for (const Shape& s : Shapes()) {
    const Operand a = MakeOperand(s.M, s.K, 1, rng), b = MakeOperand(s.K, s.N, 0, rng);
    Aligned packed(gemm::packed_a_elems(s.M, s.K));
    // pack_a_once follows isa()'s K blocking; the kernel under test packs with its own.
    Packed(kern).pack_a_once(s.M, s.K, a.mat, packed.data());
    const MatPanels panels(b);
    for (bool acc : {false, true}) {
      const int64_t ldc = s.N + 2;
      std::vector<float> C(static_cast<size_t>(s.M * ldc), 0.5f);
      const std::vector<float> before = C;
      PackedGemm(kern, s.M, s.N, s.K, packed.data(), nullptr, nullptr, &panels, acc, C.data(), ldc,
                 scratch.data());
      ExpectMatches(C, ldc, a, b, s, acc, before, "packed A, panel B");
      std::vector<float> again = before;  // deterministic: the same bits every time
      PackedGemm(kern, s.M, s.N, s.K, packed.data(), nullptr, nullptr, &panels, acc, again.data(),
                 ldc, scratch.data());
      EXPECT_EQ(again, C);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, GemmKernel,
                         ::testing::Values(Kernel::kAvx512, Kernel::kAvx2, Kernel::kOpenBlas),
                         KernelName);

// fp16-rounded operands (Mat::fp16, USE_FP16 read in place): every packing path of the AVX-512
// and AVX2 kernels (A and B row-major, transposed, neither unit stride; pack_a_once; sgemm's
// dispatch)
// rounds each element to fp16 as it packs it. The values are h * (1 + 2^-13) with h a positive
// fp16 value, which rounding takes back to h: the product of the unrounded operands is ~2.4e-4
// larger throughout, 60x the tolerance, so a path that skipped the rounding would fail.
Operand MakeJustAboveFp16(int64_t rows, int64_t cols, int layout, std::mt19937& rng) {
  Operand o = MakeOperand(rows, cols, layout, rng);
  for (float& v : o.data)
    v = static_cast<float>(acltest::RoundToF16(0.25 + std::fabs(v)) * (1.0 + std::ldexp(1.0, -13)));
  o.mat.fp16 = true;
  return o;
}
Operand RoundedCopy(const Operand& o) {
  Operand r = o;
  for (float& v : r.data) v = static_cast<float>(acltest::RoundToF16(v));
  r.mat.p = r.data.data();
  r.mat.fp16 = false;
  return r;
}

class GemmFp16Operands : public ::testing::TestWithParam<Kernel> {};

TEST_P(GemmFp16Operands, EveryPackingPathRounds) {
  const Kernel kernel = GetParam();
  if (!RunsHere(kernel)) GTEST_SKIP() << "this CPU lacks the kernel's instructions";
  std::mt19937 rng(13);
  Aligned scratch(PackElems(kernel));
  for (const Shape& s : Shapes()) {
    for (int la = 0; la < 3; ++la) {
      for (int lb = 0; lb < 3; ++lb) {
        const Operand a = MakeJustAboveFp16(s.M, s.K, la, rng);
        const Operand b = MakeJustAboveFp16(s.K, s.N, lb, rng);
        const Operand ra = RoundedCopy(a), rb = RoundedCopy(b);
        const int64_t ldc = s.N + 1;
        const std::vector<float> before(static_cast<size_t>(s.M * ldc), 0.0f);
        std::vector<float> C = before;
        const std::string what = "fp16 layouts " + std::to_string(la) + "/" + std::to_string(lb);
        PackedGemm(kernel, s.M, s.N, s.K, nullptr, &a.mat, &b.mat, nullptr, false, C.data(), ldc,
                   scratch.data());
        ExpectMatches(C, ldc, ra, rb, s, false, before, what);
        // A packed once (its own packing path), B as a view.
        Aligned packed(gemm::packed_a_elems(s.M, s.K));
        Packed(kernel).pack_a_once(s.M, s.K, a.mat, packed.data());
        C = before;
        PackedGemm(kernel, s.M, s.N, s.K, packed.data(), nullptr, &b.mat, nullptr, false, C.data(),
                   ldc, scratch.data());
        ExpectMatches(C, ldc, ra, rb, s, false, before, what + " (packed A)");
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, GemmFp16Operands,
                         ::testing::Values(Kernel::kAvx512, Kernel::kAvx2), KernelName);

// Where no packed kernel runs (ACLNN_CPU_MAX_ISA=none: OpenBLAS), an fp16-rounded operand is
// refused rather than used unrounded; with one, sgemm's dispatch rounds.
TEST(GemmDispatch, Fp16OperandsRoundOrAreRefused) {
  std::mt19937 rng(14);
  const Shape s{9, 50, 20};
  const Operand a = MakeJustAboveFp16(s.M, s.K, 0, rng), b = MakeJustAboveFp16(s.K, s.N, 1, rng);
  std::vector<float> C(static_cast<size_t>(s.M * s.N), 0.0f);
  const std::vector<float> before = C;
  Aligned scratch(std::max<int64_t>(gemm::pack_elems(), 1));
  if (!gemm::packs_fp16()) {
    EXPECT_THROW(gemm::sgemm(s.M, s.N, s.K, a.mat, b.mat, false, C.data(), s.N, scratch.data()),
                 std::logic_error);
    return;
  }
  gemm::sgemm(s.M, s.N, s.K, a.mat, b.mat, false, C.data(), s.N, scratch.data());
  ExpectMatches(C, s.N, RoundedCopy(a), RoundedCopy(b), s, false, before, "dispatched fp16");
}

// 16-bit operands (Mat::p16: fp16 or bf16 bits, widened as packed; a 16-bit input read in place):
// every packing path of the AVX-512 kernel (A and B row-major, transposed, neither unit stride;
// pack_a_once) packs exactly the widened values, so the product is bit for bit the one of an fp32
// copy of them (which the tests above check against float64). The values include subnormals of
// both formats, where a flush or a rounding of the widening would show.
struct Operand16 {
  std::vector<uint16_t> bits;
  gemm::Mat mat;
  Operand wide;  // the same layout, each element widened to fp32
};
Operand16 Make16(int64_t rows, int64_t cols, int layout, bool bf16, std::mt19937& rng) {
  Operand16 o;
  o.wide = MakeOperand(rows, cols, layout, rng);
  o.bits.resize(o.wide.data.size());
  std::uniform_int_distribution<int> pick(0, 15);
  for (size_t i = 0; i < o.bits.size(); ++i) {
    double v = o.wide.data[i];
    if (pick(rng) == 0) v *= bf16 ? 1e-39 : 1e-6;  // a subnormal of the format
    o.bits[i] = bf16 ? acltest::EncodeBF16(v) : acltest::EncodeF16(v);
    o.wide.data[i] =
        static_cast<float>(bf16 ? acltest::DecodeBF16(o.bits[i]) : acltest::DecodeF16(o.bits[i]));
  }
  o.mat = o.wide.mat;
  o.mat.p = nullptr;
  o.mat.p16 = o.bits.data();
  o.mat.bf16 = bf16;
  return o;
}

TEST(Gemm16BitOperands, EveryPackingPathWidensExactly) {
  if (!RunsHere(Kernel::kAvx512)) GTEST_SKIP() << "this CPU lacks the AVX-512 kernel";
  std::mt19937 rng(15);
  Aligned scratch(PackElems(Kernel::kAvx512));
  for (bool bf16 : {false, true}) {
    for (const Shape& s : Shapes()) {
      for (int la = 0; la < 3; ++la) {
        for (int lb = 0; lb < 3; ++lb) {
          const Operand16 a = Make16(s.M, s.K, la, bf16, rng), b = Make16(s.K, s.N, lb, bf16, rng);
          const std::string what = std::string(bf16 ? "bf16" : "fp16") + " layouts " +
                                   std::to_string(la) + "/" + std::to_string(lb) +
                                   " M=" + std::to_string(s.M) + " N=" + std::to_string(s.N) +
                                   " K=" + std::to_string(s.K);
          const int64_t ldc = s.N + 1;
          std::vector<float> want(static_cast<size_t>(s.M * ldc), 0.25f), got = want;
          PackedGemm(Kernel::kAvx512, s.M, s.N, s.K, nullptr, &a.wide.mat, &b.wide.mat, nullptr,
                     true, want.data(), ldc, scratch.data());
          PackedGemm(Kernel::kAvx512, s.M, s.N, s.K, nullptr, &a.mat, &b.mat, nullptr, true,
                     got.data(), ldc, scratch.data());
          ASSERT_EQ(got, want) << what;
          // A packed once (its own packing path), B 16-bit as a view.
          Aligned packed(gemm::packed_a_elems(s.M, s.K)),
              packed_wide(gemm::packed_a_elems(s.M, s.K));
          gemm::kAvx512Kernel.pack_a_once(s.M, s.K, a.mat, packed.data());
          gemm::kAvx512Kernel.pack_a_once(s.M, s.K, a.wide.mat, packed_wide.data());
          ASSERT_TRUE(std::equal(packed.data(), packed.data() + gemm::packed_a_elems(s.M, s.K),
                                 packed_wide.data()))
              << what << " (pack_a_once)";
          std::fill(got.begin(), got.end(), 0.25f);
          PackedGemm(Kernel::kAvx512, s.M, s.N, s.K, packed.data(), nullptr, &b.mat, nullptr, true,
                     got.data(), ldc, scratch.data());
          ASSERT_EQ(got, want) << what << " (packed A)";
        }
      }
    }
  }
}

// Where the AVX-512 kernel does not run (the avx2 and none tiers), a 16-bit operand is refused by
// every entry point; where it does, sgemm's dispatch widens it.
TEST(GemmDispatch, SixteenBitOperandsWidenOrAreRefused) {
  std::mt19937 rng(16);
  const Shape s{9, 50, 20};
  const Operand16 a = Make16(s.M, s.K, 0, false, rng), b = Make16(s.K, s.N, 1, true, rng);
  std::vector<float> C(static_cast<size_t>(s.M * s.N), 0.0f);
  const std::vector<float> before = C;
  Aligned scratch(std::max<int64_t>(gemm::pack_elems(), 1));
  if (!gemm::packs_16bit()) {
    EXPECT_THROW(gemm::sgemm(s.M, s.N, s.K, a.mat, b.mat, false, C.data(), s.N, scratch.data()),
                 std::logic_error);
    EXPECT_THROW(gemm::sgemm(s.M, s.N, s.K, a.mat, b.mat, false, C.data(), s.N, nullptr),
                 std::logic_error);
    if (gemm::have_packed_gemm()) {
      Aligned packed(gemm::packed_a_elems(s.M, s.K));
      EXPECT_THROW(gemm::pack_a_once(s.M, s.K, a.mat, packed.data()), std::logic_error);
    }
    EXPECT_EQ(C, before);
    return;
  }
  gemm::sgemm(s.M, s.N, s.K, a.mat, b.mat, false, C.data(), s.N, scratch.data());
  ExpectMatches(C, s.N, a.wide, b.wide, s, false, before, "dispatched 16-bit");
}

// A 16-bit product stored by the micro-kernel (sgemm_packed_narrow): bit for bit the fp32 product
// of the same kernel rounded to nearest even (EncodeF16 / EncodeBF16), over the edge shapes of one
// K block, B as every layout of view and as a panel source; nothing written past N; refused where
// the AVX-512 kernel does not run, and for K past one K block.
TEST(GemmNarrowStore, MatchesTheRoundedFp32Product) {
  if (!gemm::packs_16bit()) {
    std::vector<uint16_t> c16(8);
    EXPECT_THROW(
        gemm::sgemm_packed_narrow(1, 1, 1, nullptr, nullptr, nullptr, true, c16.data(), 1, nullptr),
        std::logic_error);
    return;
  }
  std::mt19937 rng(17);
  Aligned scratch(gemm::pack_elems());
  int checked = 0;
  for (const Shape& s : Shapes()) {
    if (s.K > gemm::panel_depth()) continue;
    const Operand a = MakeOperand(s.M, s.K, 0, rng);
    Aligned packed(gemm::packed_a_elems(s.M, s.K));
    gemm::pack_a_once(s.M, s.K, a.mat, packed.data());
    for (int lb = 0; lb < 4; ++lb) {  // 3: B from a panel source
      const Operand b = MakeOperand(s.K, s.N, lb % 3, rng);
      const MatPanels panels(b);
      const gemm::Mat* b_mat = lb < 3 ? &b.mat : nullptr;
      const gemm::BPanels* b_src = lb < 3 ? nullptr : &panels;
      const int64_t ldc = s.N + 3;
      std::vector<float> C(static_cast<size_t>(s.M * ldc), 0.0f);
      gemm::sgemm_packed(s.M, s.N, s.K, packed.data(), nullptr, b_mat, b_src, false, C.data(), ldc,
                         scratch.data());
      for (bool bf16 : {false, true}) {
        std::vector<uint16_t> c16(static_cast<size_t>(s.M * ldc), 0xABCD);
        gemm::sgemm_packed_narrow(s.M, s.N, s.K, packed.data(), b_mat, b_src, bf16, c16.data(), ldc,
                                  scratch.data());
        for (int64_t i = 0; i < s.M; ++i)
          for (int64_t j = 0; j < ldc; ++j) {
            const size_t at = static_cast<size_t>(i * ldc + j);
            const uint16_t want = j >= s.N ? 0xABCD
                                  : bf16   ? acltest::EncodeBF16(C[at])
                                           : acltest::EncodeF16(C[at]);
            ASSERT_EQ(c16[at], want)
                << (bf16 ? "bf16" : "fp16") << " layout " << lb << " M=" << s.M << " N=" << s.N
                << " K=" << s.K << " at (" << i << ", " << j << ")";
          }
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 100);
  std::vector<uint16_t> c16(64);
  Aligned packed(gemm::packed_a_elems(8, gemm::panel_depth() + 1));
  const Operand b = MakeOperand(gemm::panel_depth() + 1, 8, 0, rng);
  EXPECT_THROW(gemm::sgemm_packed_narrow(8, 8, gemm::panel_depth() + 1, packed.data(), &b.mat,
                                         nullptr, true, c16.data(), 8, scratch.data()),
               std::logic_error);
}

// The dispatch: isa() is the widest kernel the tier in force allows (the CPU module's, caps
// included; ctest runs this under ACLNN_CPU_MAX_ISA=avx2 and =none too).
TEST(GemmDispatch, IsaFollowsTheTierInForce) {
  const gemm::Isa want = cpu::tier() >= cpu::Tier::kAvx512 ? gemm::Isa::kAvx512
                         : cpu::tier() >= cpu::Tier::kAvx2 ? gemm::Isa::kAvx2
                                                           : gemm::Isa::kNone;
  EXPECT_EQ(gemm::isa(), want) << gemm::isa_name(gemm::isa()) << "; " << cpu::describe();
  EXPECT_EQ(gemm::pack_elems() > 0, want != gemm::Isa::kNone);
}

}  // namespace
