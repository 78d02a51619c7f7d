// aclnnMatmul's values against a float64 triple loop on the inputs as stored (16-bit values are
// exact in double; FLOAT operands rounded as cubeMathType says), for FLOAT, FLOAT16 and BFLOAT16:
// edge sizes (k = 1, m and n off the 8 x 48 register tile, several K blocks and K chunks, empty
// dims), every layout the packers tell apart (rows contiguous, columns contiguous as in linear's
// wᵀ, neither, stride 0), batch broadcasting and 1-d operands, strided outputs, the mixed
// FLOAT16/FLOAT promotion, and bitwise equality across thread counts. The tier runs of ctest
// repeat it under ACLNN_CPU_MAX_ISA=avx2 and =none.
//
// Error bound per element, from the summation's worst case (no assumption on the order):
// |got - ref| <= gamma(k) * S + (16-bit out ? half an ulp of out at |ref| + gamma(k) * S : 0),
// S = sum_k |a||b|, gamma(k) = k u / (1 - k u), u = 2^-24: the fp32 accumulation and the one
// rounding of the store. One dropped or wrong term (~S / k), an operand rounded more coarsely
// than claimed, or a second rounding of the sums all exceed it.
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <tbb/task_arena.h>

#include "acl/acl.h"
#include "aclnnop/aclnn_matmul.h"
#include "support/acl_test_util.h"
#include "support/compare.h"

namespace {

using acltest::Layout;
using acltest::TestTensor;
using Shape = std::vector<int64_t>;

struct Case {
  Shape self, mat2;
  aclDataType dt = ACL_BF16;
  aclDataType dt_mat2 = ACL_DT_UNDEFINED;  // = dt
  aclDataType dt_out = ACL_DT_UNDEFINED;   // = the promoted dtype
  Layout ls = Layout::kContiguous, lm = Layout::kContiguous, lo = Layout::kContiguous;
  int8_t cube = 0;
  uint64_t seed = 1;
};

std::string Describe(const Case& c) {
  return acltest::DtypeName(c.dt) + acltest::ShapeStr(c.self) + " @ " +
         acltest::DtypeName(c.dt_mat2) + acltest::ShapeStr(c.mat2) + " -> " +
         acltest::DtypeName(c.dt_out) + " layouts " + acltest::LayoutName(c.ls) + "/" +
         acltest::LayoutName(c.lm) + "/" + acltest::LayoutName(c.lo) +
         " cube=" + std::to_string(c.cube);
}

// torch.matmul's output shape, and the product in double with S = sum |a||b| per element.
struct Reference {
  Shape shape;
  std::vector<double> value, scale;
  int64_t k = 0;
};

Reference Naive(const Shape& sa_in, const std::vector<double>& a, const Shape& sb_in,
                const std::vector<double>& b) {
  Shape sa = sa_in, sb = sb_in;
  if (sa.size() == 1) sa.insert(sa.begin(), 1);
  if (sb.size() == 1) sb.push_back(1);
  const int64_t m = sa[sa.size() - 2], k = sa.back(), n = sb.back();
  const Shape ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2);
  Shape batch(std::max(ba.size(), bb.size()));
  for (size_t i = 0; i < batch.size(); ++i) {
    const int64_t x = i < ba.size() ? ba[ba.size() - 1 - i] : 1;
    const int64_t y = i < bb.size() ? bb[bb.size() - 1 - i] : 1;
    batch[batch.size() - 1 - i] = x == 1 ? y : x;
  }
  // The matrix of an operand with batch dims `own` (right-aligned, size 1 broadcast) at batch
  // multi-index `idx`.
  auto matrix_of = [&](const Shape& idx, const Shape& own) {
    int64_t at = 0;
    for (size_t d = 0; d < own.size(); ++d)
      at = at * own[d] + (own[d] == 1 ? 0 : idx[batch.size() - own.size() + d]);
    return at;
  };
  Reference r;
  r.k = k;
  int64_t nb = 1;
  for (int64_t s : batch) nb *= s;
  for (int64_t t = 0; t < nb; ++t) {
    Shape idx(batch.size());
    for (int64_t d = static_cast<int64_t>(batch.size()) - 1, rest = t; d >= 0; --d) {
      idx[d] = rest % batch[d];
      rest /= batch[d];
    }
    const double* pa = a.data() + matrix_of(idx, ba) * m * k;
    const double* pb = b.data() + matrix_of(idx, bb) * k * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double v = 0, s = 0;
        for (int64_t q = 0; q < k; ++q) {
          v += pa[i * k + q] * pb[q * n + j];
          s += std::abs(pa[i * k + q] * pb[q * n + j]);
        }
        r.value.push_back(v);
        r.scale.push_back(s);
      }
  }
  r.shape = batch;
  if (sa_in.size() > 1) r.shape.push_back(m);
  if (sb_in.size() > 1) r.shape.push_back(n);
  return r;
}

// The value an operand is multiplied as: FLOAT rounded per cubeMathType (1, 3: HF32; 2: fp16),
// 16-bit values as they are.
double AsOperand(double v, aclDataType dt, int8_t cube, bool dot) {
  if (dt != ACL_FLOAT || dot) return v;
  if (cube == 1 || cube == 3) return acltest::RoundToHF32(v);
  if (cube == 2) return acltest::RoundToF16(v);
  return v;
}

::testing::AssertionResult WithinBound(const std::vector<double>& got, const Reference& ref,
                                       aclDataType out) {
  const double u = std::ldexp(1.0, -24);
  const double gamma = ref.k * u / (1 - ref.k * u);
  int64_t bad = 0, worst = -1;
  double worst_ratio = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double acc = gamma * ref.scale[i];
    const double allowed =
        acc + (out == ACL_FLOAT ? 0.0 : 0.5 * acltest::UlpOf(std::abs(ref.value[i]) + acc, out));
    const double err = std::abs(got[i] - ref.value[i]);
    if (!(err <= allowed)) {
      ++bad;
      const double ratio = allowed > 0 ? err / allowed : INFINITY;
      if (worst < 0 || ratio > worst_ratio) worst = static_cast<int64_t>(i), worst_ratio = ratio;
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  const size_t w = static_cast<size_t>(worst);
  return ::testing::AssertionFailure()
         << bad << " of " << got.size() << " elements outside the bound; worst "
         << acltest::IndexStr(worst, ref.shape) << ": got " << got[w] << ", want " << ref.value[w]
         << ", scale " << ref.scale[w];
}

struct Ran {
  acltest::CallResult result;
  std::vector<double> got;
  Reference ref;
  bool only_view_written = false;
};

// The case with its defaults filled in.
Case Complete(Case c) {
  if (c.dt_mat2 == ACL_DT_UNDEFINED) c.dt_mat2 = c.dt;
  if (c.dt_out == ACL_DT_UNDEFINED) c.dt_out = c.dt == c.dt_mat2 ? c.dt : ACL_FLOAT;
  return c;
}

Ran RunMatmul(Case c) {
  c = Complete(c);
  acltest::Rng rng(c.seed);
  TestTensor a(c.self, c.dt, c.ls, c.seed), b(c.mat2, c.dt_mat2, c.lm, c.seed + 1);
  a.Fill(rng.Uniform(a.numel()));
  b.Fill(rng.Uniform(b.numel()));
  const bool dot = c.self.size() == 1 && c.mat2.size() == 1;
  std::vector<double> av = a.values(), bv = b.values();
  for (double& v : av) v = AsOperand(v, c.dt, c.cube, dot);
  for (double& v : bv) v = AsOperand(v, c.dt_mat2, c.cube, dot);
  Ran r;
  r.ref = Naive(c.self, av, c.mat2, bv);
  TestTensor out = TestTensor::Output(r.ref.shape, c.dt_out, c.lo, c.seed + 2);
  r.result = acltest::RunTwoPhase(
      [&](uint64_t* ws, aclOpExecutor** ex) {
        return aclnnMatmulGetWorkspaceSize(a.get(), b.get(), out.get(), c.cube, ws, ex);
      },
      aclnnMatmul);
  if (r.result.ok()) r.got = out.Read();
  r.only_view_written = out.OnlyViewWritten();
  return r;
}

void Check(const Case& c_in) {
  const Case c = Complete(c_in);
  SCOPED_TRACE(Describe(c));
  const Ran r = RunMatmul(c);
  ASSERT_TRUE(r.result.ok()) << r.result.Describe();
  EXPECT_TRUE(WithinBound(r.got, r.ref, c.dt_out));
  EXPECT_TRUE(r.only_view_written) << "the output's storage was written outside its view";
}

const aclDataType kDtypes[] = {ACL_BF16, ACL_FLOAT16, ACL_FLOAT};

// m, n and k at and around the packed kernel's edges: k = 1, rows off the 8-row panel, columns
// off the 48-column panel and the 192-column tile, k off the 16-wide transposes, several 256-deep
// K blocks, k past the 1024-deep packing chunk (512 on AVX2), more rows than one 128-row tile.
const Shape kSizes[] = {{1, 1, 1},    {3, 5, 1},      {7, 9, 13},     {8, 48, 16},   {9, 49, 17},
                        {17, 95, 33}, {33, 200, 300}, {130, 197, 70}, {20, 60, 1030}};

TEST(Matmul, EdgeSizesEveryDtypeAndLayout) {
  const Layout layouts[] = {Layout::kContiguous, Layout::kPermuted, Layout::kPadded};
  uint64_t seed = 1;
  for (aclDataType dt : kDtypes)
    for (const Shape& s : kSizes)
      for (Layout ls : layouts)
        for (Layout lm : layouts) {
          if (s[2] == 1030 && (ls == Layout::kPadded || lm == Layout::kPadded)) continue;
          Check({.self = {s[0], s[2]},
                 .mat2 = {s[2], s[1]},
                 .dt = dt,
                 .ls = ls,
                 .lm = lm,
                 .seed = seed++});
        }
}

// linear's forward, x · wᵀ, and both gradients (g · w and gᵀ · x) at the main job's first
// linear layer (batch 16 here) and with sizes off every tile.
TEST(Matmul, LinearShapesWithTransposedViews) {
  for (aclDataType dt : {ACL_BF16, ACL_FLOAT16}) {
    for (const Shape& s : {Shape{16, 128, 3136}, Shape{37, 101, 259}}) {
      const int64_t batch = s[0], out = s[1], in = s[2];
      Check({.self = {batch, in}, .mat2 = {in, out}, .dt = dt, .lm = Layout::kPermuted});
      Check({.self = {batch, out}, .mat2 = {out, in}, .dt = dt});
      Check({.self = {out, batch}, .mat2 = {batch, in}, .dt = dt, .ls = Layout::kPermuted});
    }
  }
}

TEST(Matmul, StrideZeroOperandsAndStridedOutputs) {
  for (aclDataType dt : kDtypes) {
    Check({.self = {9, 21}, .mat2 = {21, 50}, .dt = dt, .ls = Layout::kExpanded});
    Check({.self = {9, 21}, .mat2 = {21, 50}, .dt = dt, .lm = Layout::kExpanded});
    Check({.self = {9, 21}, .mat2 = {21, 50}, .dt = dt, .lo = Layout::kPadded});
    Check({.self = {9, 21}, .mat2 = {21, 50}, .dt = dt, .lo = Layout::kPermuted});
  }
}

TEST(Matmul, BatchBroadcastAndOneDimensionalOperands) {
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{2, 3, 10, 12}, {3, 12, 7}},   // batch broadcast from the left
      {{10, 12}, {2, 12, 50}},        // self without batch
      {{4, 1, 9, 5}, {1, 3, 5, 60}},  // both broadcast
      {{3, 17, 40}, {40, 30}},        // mat2 without batch: rows folded into one product
      {{2, 1, 17, 40}, {40, 30}},     // the same with a size-1 dim
      {{33}, {33}},                   // dot product
      {{33}, {2, 33, 20}},            // 1-d self
      {{2, 5, 33}, {33}},             // 1-d mat2
      {{1, 33}, {3, 33, 1}},          // single rows and columns
      {{2, 0, 5}, {5, 4}},            // empty rows
      {{3, 4}, {4, 0}},               // empty columns
      {{0, 3, 4}, {4, 2}},            // empty batch
      {{3, 0}, {0, 4}},               // k = 0: zeros
  };
  for (aclDataType dt : kDtypes)
    for (const auto& [sa, sb] : shapes)
      for (Layout l : {Layout::kContiguous, Layout::kPadded})
        Check({.self = sa, .mat2 = sb, .dt = dt, .ls = l, .lm = l, .lo = l});
}

TEST(Matmul, KZeroWritesZeros) {
  const Ran r = RunMatmul({.self = {3, 0}, .mat2 = {0, 4}, .dt = ACL_BF16});
  ASSERT_TRUE(r.result.ok()) << r.result.Describe();
  ASSERT_EQ(r.got.size(), 12u);
  for (double v : r.got) EXPECT_EQ(v, 0.0);  // the output started as the sentinel
}

TEST(Matmul, Float16WithFloatOutputAndMixedInputs) {
  Check({.self = {13, 70}, .mat2 = {70, 51}, .dt = ACL_FLOAT16, .dt_out = ACL_FLOAT});
  Check({.self = {13, 70}, .mat2 = {70, 51}, .dt = ACL_FLOAT16, .dt_mat2 = ACL_FLOAT});
  Check({.self = {13, 70},
         .mat2 = {70, 51},
         .dt = ACL_FLOAT,
         .dt_mat2 = ACL_FLOAT16,
         .lm = Layout::kPermuted,
         .cube = 1});
}

TEST(Matmul, CubeMathTypeRoundsFloatOperands) {
  for (int8_t cube : {0, 1, 2, 3})
    for (Layout l : {Layout::kContiguous, Layout::kPermuted, Layout::kPadded})
      Check({.self = {11, 40}, .mat2 = {40, 53}, .dt = ACL_FLOAT, .ls = l, .lm = l, .cube = cube});
  // Both 1-d: the mode has no effect (exact fp32 products).
  Check({.self = {40}, .mat2 = {40}, .dt = ACL_FLOAT, .cube = 2});
}

// The reference cannot tell an HF32-rounded FLOAT product from an exact one at the bound above
// unless the operands need the dropped bits: these do (1 + 2^-20 has them), and k = 1.
TEST(Matmul, Hf32RoundingIsReallyApplied) {
  TestTensor a({1, 1}, ACL_FLOAT), b({1, 1}, ACL_FLOAT);
  a.Fill({1.0 + std::ldexp(1.0, -20)});
  b.Fill({1.0});
  for (int8_t cube : {0, 3}) {
    TestTensor out = TestTensor::Output({1, 1}, ACL_FLOAT);
    const auto r = acltest::RunTwoPhase(
        [&](uint64_t* ws, aclOpExecutor** ex) {
          return aclnnMatmulGetWorkspaceSize(a.get(), b.get(), out.get(), cube, ws, ex);
        },
        aclnnMatmul);
    ASSERT_TRUE(r.ok()) << r.Describe();
    EXPECT_EQ(out.Read()[0], cube == 0 ? 1.0 + std::ldexp(1.0, -20) : 1.0) << "cube " << +cube;
  }
}

// Work is split into tiles by the shape alone and every element sums its k in one order, so the
// bits do not depend on the caller's thread count.
TEST(Matmul, BitwiseEqualForOneTwoAndThreeThreads) {
  for (aclDataType dt : {ACL_BF16, ACL_FLOAT16}) {
    const Case c{.self = {2, 150, 300}, .mat2 = {300, 400}, .dt = dt, .lm = Layout::kPermuted};
    std::vector<double> first;
    for (int threads : {1, 2, 3}) {
      Ran r;
      tbb::task_arena arena(threads);
      arena.execute([&] { r = RunMatmul(c); });
      ASSERT_TRUE(r.result.ok()) << r.result.Describe();
      if (threads == 1) {
        EXPECT_TRUE(WithinBound(r.got, r.ref, dt));
        first = r.got;
      } else {
        EXPECT_EQ(r.got, first) << threads << " threads";
      }
    }
  }
}

// The plan line names the path: our packed GEMM converting in its packing wherever the tier has
// it (libaclnn says whether), OpenBLAS on converted blocks elsewhere.
TEST(Matmul, VerbosePlanNamesThePathOfThisTier) {
  acltest::ScopedEnv verbose("ACLNN_CPU_VERBOSE", "1");
  ::testing::internal::CaptureStderr();
  Check({.self = {20, 30}, .mat2 = {30, 40}, .dt = ACL_BF16});
  const std::string log = ::testing::internal::GetCapturedStderr();
  const auto lines = acltest::VerbosePlanLines(log, "aclnnMatmul");
  ASSERT_EQ(lines.size(), 1u) << log;
  const char* path = acltest::PackedKernelsRun() ? "packed_convert" : "blas_convert";
  EXPECT_NE(lines[0].find(path), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("isa=" + acltest::IsaInForce()), std::string::npos) << lines[0];
}

// No fp32 copy of an operand: the workspace holds per-thread packing buffers and tiles, whatever
// the operands' size. Phase 1 only (the data pointers are never read).
TEST(Matmul, WorkspaceHoldsNoFloat32CopyOfAnOperand) {
  const int64_t m = 4096, n = 4096, k = 65536;
  const int64_t storage_a = m * k, storage_b = k * n, storage_out = m * n;
  auto far = [](int i) { return reinterpret_cast<void*>(static_cast<uintptr_t>(i) << 47); };
  for (aclDataType dt : kDtypes) {
    const int64_t sa[] = {m, k}, sb[] = {k, n}, so[] = {m, n};
    acltest::AclTensorPtr a(
        aclCreateTensor(sa, 2, dt, nullptr, 0, ACL_FORMAT_ND, &storage_a, 1, far(1)),
        aclDestroyTensor);
    acltest::AclTensorPtr b(
        aclCreateTensor(sb, 2, dt, nullptr, 0, ACL_FORMAT_ND, &storage_b, 1, far(2)),
        aclDestroyTensor);
    acltest::AclTensorPtr out(
        aclCreateTensor(so, 2, dt, nullptr, 0, ACL_FORMAT_ND, &storage_out, 1, far(3)),
        aclDestroyTensor);
    uint64_t ws = 0;
    aclOpExecutor* ex = nullptr;
    tbb::task_arena two(2);  // the workspace is per thread: fix the count
    const aclnnStatus st = two.execute(
        [&] { return aclnnMatmulGetWorkspaceSize(a.get(), b.get(), out.get(), 0, &ws, &ex); });
    ASSERT_EQ(st, 0) << aclGetRecentErrMsg();
    aclDestroyAclOpExecutor(ex);
    // An fp32 copy of A alone would be 1 GiB; two threads' buffers are a few MiB.
    EXPECT_LT(ws, uint64_t{16} << 20) << acltest::DtypeName(dt);
  }
}

}  // namespace
