// matmul and linear in float16 and bfloat16 (libaclnn's aclnnMatmul, ops/matmul_aclnn.h) against a
// float64 triple loop on the 16-bit values, with the bound of fp32 accumulation plus one rounding
// of the result: |got - want| <= gamma(k) * S + half an ulp of the dtype at |want| + gamma(k) * S,
// S = sum_k |a||b|, gamma(k) = k u / (1 - k u), u = 2^-24. Layouts (transposed, padded, stride-0
// batch), batch broadcasting, more dims than aclnnMatmul takes, and linear's forward and backward
// against the same computation in float32.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "ops/ops.h"
#include "tensor/iter.h"
#include "tests/ops/ops_test_util.h"

namespace aclgrad {
namespace {

using testing::uniform_var;

// want = a · b and S = |a| · |b| in float64 loops (torch.matmul's rules for 2-d and batched
// operands with broadcasting; both at least 2-d).
struct Reference {
  Tensor value, scale;
  int64_t k = 0;
};

Reference naive(const Tensor& a_in, const Tensor& b_in) {
  const Tensor a = a_in.to(Dtype::Float64), b = b_in.to(Dtype::Float64);
  const int64_t n = a.size(-2), k = a.size(-1), m = b.size(-1);
  const Shape batch = broadcast_shapes(Shape(a.sizes().begin(), a.sizes().end() - 2),
                                       Shape(b.sizes().begin(), b.sizes().end() - 2));
  Shape sa = batch, sb = batch, so = batch;
  sa.insert(sa.end(), {n, k});
  sb.insert(sb.end(), {k, m});
  so.insert(so.end(), {n, m});
  const std::vector<double> av = a.expand(sa).contiguous().to_vector<double>();
  const std::vector<double> bv = b.expand(sb).contiguous().to_vector<double>();
  std::vector<double> value, scale;
  int64_t nb = 1;
  for (int64_t s : batch) nb *= s;
  for (int64_t t = 0; t < nb; ++t)
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < m; ++j) {
        double v = 0, s = 0;
        for (int64_t q = 0; q < k; ++q) {
          const double p = av[(t * n + i) * k + q] * bv[(t * k + q) * m + j];
          v += p;
          s += std::abs(p);
        }
        value.push_back(v);
        scale.push_back(s);
      }
  return {from_vector(value, so), from_vector(scale, so), k};
}

// Half an ulp of a float16 / bfloat16 value of magnitude x (subnormal spacing below the normals).
double half_ulp(double x, Dtype dtype) {
  const bool bf16 = dtype == Dtype::BFloat16;
  const int mant = bf16 ? 7 : 10, emin = bf16 ? -126 : -14;
  int e = 0;
  if (x != 0) std::frexp(x, &e);
  return std::ldexp(1.0, std::max(e - 1, emin) - mant - 1);
}

// got within the bound of `ref` (accumulation error counted `terms` times: 1 against the exact
// product, 2 against a float32 computation of it).
void expect_within(const Tensor& got, const Reference& ref, Dtype dtype, int terms = 1) {
  ASSERT_EQ(got.sizes(), ref.value.sizes());
  const double u = std::ldexp(1.0, -24), gamma = terms * ref.k * u / (1 - ref.k * u);
  const std::vector<double> g = got.to(Dtype::Float64).contiguous().to_vector<double>();
  const std::vector<double> w = ref.value.contiguous().to_vector<double>();
  const std::vector<double> s = ref.scale.contiguous().to_vector<double>();
  int failures = 0;
  for (size_t i = 0; i < g.size() && failures < 5; ++i) {
    const double acc = gamma * s[i], allowed = acc + half_ulp(std::abs(w[i]) + acc, dtype);
    if (!(std::abs(g[i] - w[i]) <= allowed)) {
      ADD_FAILURE() << "element " << i << ": got " << g[i] << ", want " << w[i] << ", allowed "
                    << allowed << " (scale " << s[i] << ")";
      ++failures;
    }
  }
}

const Dtype kDtypes[] = {Dtype::BFloat16, Dtype::Float16};

TEST(Matmul16, ShapeRulesAndBroadcastWithinTheBound) {
  const std::pair<Shape, Shape> cases[] = {
      {{2, 3}, {3, 4}},
      {{37, 129}, {129, 50}},
      {{5, 7, 33}, {33, 60}},
      {{2, 33}, {5, 33, 9}},
      {{2, 1, 9, 20}, {3, 20, 11}},
      {{3, 1}, {1, 4}},
      {{130, 250}, {250, 200}},
      {{4, 0, 3}, {3, 2}},
      {{3, 0}, {0, 5}},
      // 8 dims: more than aclnnMatmul's 6, the batch merged into one (broadcast: a 16-bit copy;
      // equal batch dims: a view).
      {{2, 1, 3, 1, 1, 2, 5, 6}, {1, 2, 1, 1, 1, 1, 6, 7}},
      {{2, 1, 3, 1, 1, 2, 5, 6}, {2, 1, 3, 1, 1, 2, 6, 7}},
  };
  uint64_t seed = 10;
  for (Dtype dt : kDtypes)
    for (const auto& [sa, sb] : cases) {
      SCOPED_TRACE(format_shape(sa) + " x " + format_shape(sb));
      const Tensor a = uniform_var(sa, -1, 1, seed++).detach().to(dt);
      const Tensor b = uniform_var(sb, -1, 1, seed++).detach().to(dt);
      const Tensor got = matmul(a, b);
      EXPECT_EQ(got.dtype(), dt);
      expect_within(got, naive(a, b), dt);
    }
}

TEST(Matmul16, OneDimensionalOperands) {
  for (Dtype dt : kDtypes) {
    const Tensor v = uniform_var({40}, -1, 1, 1).detach().to(dt);
    const Tensor m = uniform_var({3, 40, 6}, -1, 1, 2).detach().to(dt);
    expect_within(matmul(v, v).unsqueeze(0).unsqueeze(0), naive(v.unsqueeze(0), v.unsqueeze(1)),
                  dt);
    expect_within(matmul(v, m).unsqueeze(1), naive(v.unsqueeze(0), m), dt);
    expect_within(matmul(m.transpose(1, 2), v).unsqueeze(-1),
                  naive(m.transpose(1, 2), v.unsqueeze(1)), dt);
  }
}

// Operands read in place: transposed, padded rows, strided columns, stride-0 batch and rows.
TEST(Matmul16, EveryOperandLayout) {
  for (Dtype dt : kDtypes) {
    const Tensor a = uniform_var({21, 70}, -1, 1, 3).detach().to(dt);
    const Tensor b = uniform_var({70, 55}, -1, 1, 4).detach().to(dt);
    const Tensor as[] = {a, a.t().contiguous().t(), cat({a, a}, 1).narrow(1, 3, 70),
                         stack({a, a}, 2).select(2, 1), a.narrow(0, 0, 1).expand({21, 70})};
    const Tensor bs[] = {b, b.t().contiguous().t(), cat({b, b}, 1).narrow(1, 5, 55),
                         stack({b, b}, 2).select(2, 0)};
    for (const Tensor& ta : as)
      for (const Tensor& tb : bs) expect_within(matmul(ta, tb), naive(ta, tb), dt);
    const Tensor batch = a.unsqueeze(0).expand({3, 21, 70});
    expect_within(matmul(batch, b), naive(batch, b), dt);
    const Tensor b3 = uniform_var({3, 70, 55}, -1, 1, 5).detach().to(dt).transpose(1, 2);
    expect_within(matmul(a, b3.transpose(1, 2)), naive(a, b3.transpose(1, 2)), dt);
  }
}

// linear's forward and both gradients in 16 bits against float32 on the same 16-bit values:
// x wᵀ, dx = g w, dw = gᵀ x (within twice the accumulation bound, as the float32 result errs
// too), dbias = the sum of g over the batch.
TEST(Matmul16, LinearForwardAndBackwardMatchFloat32) {
  for (Dtype dt : kDtypes) {
    SCOPED_TRACE(std::string(dt == Dtype::BFloat16 ? "bfloat16" : "float16"));
    const Tensor x = uniform_var({33, 130}, -1, 1, 6).detach().to(dt).requires_grad_();
    const Tensor w = uniform_var({50, 130}, -0.2, 0.2, 7).detach().to(dt).requires_grad_();
    const Tensor bias = uniform_var({50}, -1, 1, 8).detach().to(dt).requires_grad_();
    const Tensor g = uniform_var({33, 50}, -1, 1, 9).detach().to(dt);
    const Tensor y = linear(x, w, bias);
    EXPECT_EQ(y.dtype(), dt);
    y.backward(g);
    ASSERT_TRUE(x.grad().defined() && w.grad().defined() && bias.grad().defined());
    EXPECT_EQ(x.grad().dtype(), dt);
    EXPECT_EQ(w.grad().dtype(), dt);

    auto f32 = [](const Tensor& t) { return t.detach().to(Dtype::Float32).requires_grad_(); };
    const Tensor x32 = f32(x), w32 = f32(w), b32 = f32(bias);
    const Tensor y32 = linear(x32, w32, b32);
    y32.backward(g.to(Dtype::Float32));

    // The product alone (the bias add rounds once more, in its own op).
    Reference ry = naive(x.detach(), w.detach().t());
    ry.value = matmul(x32.detach(), w32.detach().t()).to(Dtype::Float64);
    expect_within(linear(x.detach(), w.detach()), ry, dt, 2);
    Reference rdx = naive(g, w.detach());
    rdx.value = x32.grad().to(Dtype::Float64);
    expect_within(x.grad(), rdx, dt, 2);
    Reference rdw = naive(g.t(), x.detach());
    rdw.value = w32.grad().to(Dtype::Float64);
    expect_within(w.grad(), rdw, dt, 2);
    const double tol = dt == Dtype::BFloat16 ? 1.0 / 64 : 1.0 / 512;  // a few ulps of |dbias|
    const std::vector<double> db = bias.grad().to(Dtype::Float64).to_vector<double>();
    const std::vector<double> db32 = b32.grad().to(Dtype::Float64).to_vector<double>();
    for (size_t i = 0; i < db.size(); ++i)
      EXPECT_NEAR(db[i], db32[i], tol * (1 + std::abs(db32[i]))) << "dbias " << i;
  }
}

// The 16-bit products run on libaclnn's aclnnMatmul (its plan line), not through float32 copies.
TEST(Matmul16, RunsOnLibaclnnsMatmul) {
  setenv("ACLNN_CPU_VERBOSE", "1", 1);
  ::testing::internal::CaptureStderr();
  const Tensor a = uniform_var({8, 16}, -1, 1, 11).detach().to(Dtype::BFloat16);
  const Tensor y = matmul(a, a.t());
  const std::string log = ::testing::internal::GetCapturedStderr();
  unsetenv("ACLNN_CPU_VERBOSE");
  EXPECT_NE(log.find("aclnn_cpu_verbose,plan,aclnnMatmul,matmul,"), std::string::npos) << log;
  expect_within(y, naive(a, a.t()), Dtype::BFloat16);
}

}  // namespace
}  // namespace aclgrad
