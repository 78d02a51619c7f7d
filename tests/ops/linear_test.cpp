// matmul / linear: forward against a float64 triple-loop reference over PyTorch's shape rules
// (1-d promotion, batch broadcasting), every operand layout the BLAS path distinguishes
// (contiguous, transposed, padded rows, strided columns, stride-0 batch/rows), dtypes, gradients
// (gradcheck + gradgradcheck) and error messages.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "ops/ops.h"
#include "tensor/iter.h"
#include "tests/ops/ops_test_util.h"

namespace aclgrad {
namespace {

using autograd::tensor_list;
using testing::expect_gradients_correct;
using testing::expect_tensor;
using testing::message_of;
using testing::uniform_var;

void expect_contains(const std::string& msg, const std::string& part) {
  EXPECT_NE(msg.find(part), std::string::npos) << "message: " << msg << "\nexpected: " << part;
}

// out[batch..., i, j] = sum_k a[batch..., i, k] b[batch..., k, j] in float64 plain loops, with a
// 1-d a read as [1, k] and a 1-d b as [k, 1] (those dims removed from the result).
Tensor ref_matmul(const Tensor& a_in, const Tensor& b_in) {
  Tensor a = a_in.to(Dtype::Float64), b = b_in.to(Dtype::Float64);
  if (a_in.dim() == 1) a = a.unsqueeze(0);
  if (b_in.dim() == 1) b = b.unsqueeze(-1);
  const int64_t n = a.size(-2), k = a.size(-1), m = b.size(-1);
  const Shape batch = broadcast_shapes(Shape(a.sizes().begin(), a.sizes().end() - 2),
                                       Shape(b.sizes().begin(), b.sizes().end() - 2));
  Shape sa = batch, sb = batch, so = batch;
  sa.insert(sa.end(), {n, k});
  sb.insert(sb.end(), {k, m});
  so.insert(so.end(), {n, m});
  const Tensor ae = a.expand(sa), be = b.expand(sb);
  Tensor out = zeros(so, Dtype::Float64);
  int64_t nb = 1;
  for (int64_t s : batch) nb *= s;
  for (int64_t t = 0; t < nb; ++t) {
    Shape idx(batch.size());
    for (int64_t d = static_cast<int64_t>(batch.size()) - 1, r = t; d >= 0; --d) {
      idx[d] = r % batch[d];
      r /= batch[d];
    }
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < m; ++j) {
        double acc = 0;
        for (int64_t q = 0; q < k; ++q) {
          Shape ia = idx, ib = idx;
          ia.insert(ia.end(), {i, q});
          ib.insert(ib.end(), {q, j});
          acc += ae.at<double>(ia) * be.at<double>(ib);
        }
        Shape io = idx;
        io.insert(io.end(), {i, j});
        out.at<double>(io) = acc;
      }
    }
  }
  Shape final_shape = batch;
  if (a_in.dim() > 1) final_shape.push_back(n);
  if (b_in.dim() > 1) final_shape.push_back(m);
  return out.view(final_shape);
}

void expect_close(const Tensor& got, const Tensor& want, double tol) {
  ASSERT_EQ(got.sizes(), want.sizes());
  const std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) {
    EXPECT_NEAR(g[i], w[i], tol * (1 + std::abs(w[i]))) << "element " << i;
  }
}

struct Shapes {
  Shape a, b;
};

std::vector<Shapes> shape_cases() {
  return {
      {{3}, {3}},                 // dot
      {{2, 3}, {3}},              // matrix-vector
      {{3}, {3, 4}},              // vector-matrix
      {{2, 3}, {3, 4}},           // matrix-matrix
      {{5, 2, 3}, {3, 4}},        // batch on the left only (one folded gemm)
      {{2, 3}, {5, 3, 4}},        // batch on the right only (left broadcast)
      {{2, 1, 2, 3}, {3, 3, 4}},  // broadcast batch dims on both sides
      {{3}, {2, 3, 4}},           // 1-d left, batched right
      {{2, 4, 3}, {3}},           // batched left, 1-d right
      {{1, 1, 3}, {2, 3, 2}},     // size-1 rows
      {{2, 3, 1}, {1, 4}},        // k = 1
  };
}

TEST(Matmul, ForwardMatchesTheFloat64ReferenceForEveryShapeRule) {
  uint64_t seed = 100;
  for (const Shapes& s : shape_cases()) {
    SCOPED_TRACE(format_shape(s.a) + " x " + format_shape(s.b));
    const Tensor a = uniform_var(s.a, -1, 1, seed++).detach();
    const Tensor b = uniform_var(s.b, -1, 1, seed++).detach();
    const Tensor want = ref_matmul(a, b);
    expect_close(matmul(a, b), want, 1e-14);
    const Tensor got32 = matmul(a.to(Dtype::Float32), b.to(Dtype::Float32));
    EXPECT_EQ(got32.dtype(), Dtype::Float32);
    expect_close(got32, want, 1e-6);
    const Tensor got16 = matmul(a.to(Dtype::BFloat16), b.to(Dtype::BFloat16));
    EXPECT_EQ(got16.dtype(), Dtype::BFloat16);
    expect_close(got16, ref_matmul(a.to(Dtype::BFloat16), b.to(Dtype::BFloat16)), 1e-2);
  }
}

TEST(Matmul, HandComputedCases) {
  expect_tensor(matmul(tensor({1.0, 2.0, 3.0}), tensor({4.0, 5.0, 6.0})), {}, {32});
  const Tensor m = tensor({1.0, 2.0, 3.0, 4.0, 5.0, 6.0}, {2, 3});
  expect_tensor(matmul(m, tensor({1.0, 0.0, -1.0})), {2}, {-2, -2});
  expect_tensor(matmul(tensor({1.0, -1.0}), m), {3}, {-3, -3, -3});
  // [[1, 2, 3], [4, 5, 6]] [[1, 4], [2, 5], [3, 6]] = [[14, 32], [32, 77]]
  expect_tensor(matmul(m, m.t()), {2, 2}, {14, 32, 32, 77});
}

// Every way an operand can be laid out: [4, 3] matrices a and [3, 5] matrices b built from
// other tensors so that their strides differ.
TEST(Matmul, EveryOperandLayoutGivesTheSameResult) {
  const Tensor a = uniform_var({4, 3}, -1, 1, 1).detach();
  const Tensor b = uniform_var({3, 5}, -1, 1, 2).detach();
  const Tensor want = ref_matmul(a, b);
  const std::vector<std::pair<const char*, Tensor>> as = {
      {"contiguous", a},
      {"transposed", a.t().contiguous().t()},                                          // CblasTrans
      {"padded rows", cat({a, zeros({4, 2}, Dtype::Float64)}, 1).narrow(1, 0, 3)},     // lda 5
      {"strided columns", stack({a, zeros({4, 3}, Dtype::Float64)}, 2).select(2, 0)},  // copy
  };
  const std::vector<std::pair<const char*, Tensor>> bs = {
      {"contiguous", b},
      {"transposed", b.t().contiguous().t()},
      {"offset and padded rows", cat({zeros({3, 1}, Dtype::Float64), b}, 1).narrow(1, 1, 5)},
      {"strided columns", stack({b, b}, 2).select(2, 1)},
  };
  for (const auto& [na, ta] : as) {
    for (const auto& [nb, tb] : bs) {
      SCOPED_TRACE(std::string(na) + " x " + nb);
      expect_close(matmul(ta, tb), want, 1e-14);
      expect_close(matmul(ta.to(Dtype::Float32), tb.to(Dtype::Float32)), want, 1e-6);
    }
  }
  // Stride-0 operands: an expanded batch and an expanded (repeated) row.
  const Tensor row = uniform_var({1, 3}, -1, 1, 3).detach();
  expect_close(matmul(row.expand({4, 3}), b), ref_matmul(row.expand({4, 3}).contiguous(), b),
               1e-14);
  const Tensor ab = a.unsqueeze(0).expand({3, 4, 3});
  expect_close(matmul(ab, b.unsqueeze(0).expand({3, 3, 5})), want.unsqueeze(0).expand({3, 4, 5}),
               1e-14);
  // A batched operand whose batch dim is not outermost in memory ([2, 4, 3] from [4, 2, 3]).
  const Tensor ap = uniform_var({4, 2, 3}, -1, 1, 4).detach().transpose(0, 1);
  expect_close(matmul(ap, b), ref_matmul(ap, b), 1e-14);
}

// Products of at least 4M multiply-adds are cut into tiles of C (column panels of 256, or row
// blocks of 32 when C has fewer than 512 columns) that run as oneTBB tasks. float32 results
// against float64 plain loops, for both splits, transposed operands and a folded batch, and the
// same bits with 1 and 2 threads.
TEST(Matmul, LargeProductsSplitIntoTilesMatchReferenceWithOneAndTwoThreads) {
  struct Case {
    Tensor a, b;  // float32, a [..., n, k], b [k, m]
  };
  auto f32 = [](const Shape& shape, uint64_t seed) {
    return uniform_var(shape, -1, 1, seed).detach().to(Dtype::Float32);
  };
  const std::vector<Case> cases{
      {f32({40, 100}, 1), f32({100, 1100}, 2)},           // column panels, ragged last
      {f32({200, 700}, 3), f32({700, 60}, 4)},            // row blocks, ragged last
      {f32({700, 200}, 5).t(), f32({60, 700}, 6).t()},    // both transposed
      {f32({3, 40, 100}, 7), f32({100, 1100}, 8)},        // batch folded into rows
      {f32({100, 40}, 9).t(), f32({1100, 100}, 10).t()},  // transposed, column panels
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(format_shape(c.a.sizes()) + " x " + format_shape(c.b.sizes()));
    const Tensor got = testing::with_threads(2, [&] { return matmul(c.a, c.b); });
    const Tensor one = testing::with_threads(1, [&] { return matmul(c.a, c.b); });
    EXPECT_EQ(testing::bytes_of(one), testing::bytes_of(got));
    // Reference: rows of a (batch folded) times b, in double.
    const int64_t k = c.b.size(0), m = c.b.size(1), n = c.a.numel() / k;
    const std::vector<double> av = c.a.contiguous().to_vector<double>();
    const std::vector<double> bv = c.b.contiguous().to_vector<double>();
    const std::vector<double> gv = got.to_vector<double>();
    ASSERT_EQ(static_cast<int64_t>(gv.size()), n * m);
    // A float32 sum of k products in any order is within gamma(k + 1) * sum |a b| of the exact
    // sum (Higham, Accuracy and Stability of Numerical Algorithms, 3.1), gamma(n) = n u / (1 - n
    // u), u = 2^-24: a bound that grows with k and the terms' magnitudes, which a fixed relative
    // bound does not (1e-5 * (1 + |acc|) failed 1-2 of 12,000 elements of [200,700] x [700,60]
    // on an Intel Xeon). A tiling bug drops or repeats whole blocks of terms, far beyond it.
    const double nu = static_cast<double>(k + 1) * std::ldexp(1.0, -24);
    const double gamma = nu / (1 - nu);
    int64_t wrong = 0;
    double worst = 0;  // the largest error as a fraction of its bound
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < m; ++j) {
        double acc = 0, abs_sum = 0;
        for (int64_t q = 0; q < k; ++q) {
          acc += av[i * k + q] * bv[q * m + j];
          abs_sum += std::abs(av[i * k + q] * bv[q * m + j]);
        }
        const double err = std::abs(gv[i * m + j] - acc), bound = gamma * abs_sum;
        wrong += err > bound;
        if (bound > 0) worst = std::max(worst, err / bound);
      }
    }
    EXPECT_EQ(wrong, 0) << "of " << n * m << "; worst error / bound " << worst;
    std::printf("k %lld: worst error / bound %.3g\n", static_cast<long long>(k), worst);
  }
}

TEST(Matmul, EmptyOperands) {
  expect_tensor(matmul(zeros({2, 0}, Dtype::Float64), zeros({0, 3}, Dtype::Float64)), {2, 3},
                {0, 0, 0, 0, 0, 0});
  expect_tensor(matmul(zeros({0, 3}), zeros({3, 2})), {0, 2}, {});
  expect_tensor(matmul(zeros({0}), zeros({0})), {}, {0});
  expect_tensor(matmul(zeros({0, 2, 3}), zeros({3, 4})), {0, 2, 4}, {});
}

TEST(Matmul, GradientsPassGradcheckAndGradgradcheck) {
  uint64_t seed = 200;
  for (const Shapes& s : shape_cases()) {
    SCOPED_TRACE(format_shape(s.a) + " x " + format_shape(s.b));
    Tensor a = uniform_var(s.a, -1, 1, seed++);
    Tensor b = uniform_var(s.b, -1, 1, seed++);
    expect_gradients_correct([](const tensor_list& in) { return matmul(in[0], in[1]); }, {a, b});
  }
  // Non-contiguous leaves (transposed, sliced), and only one operand requiring grad.
  Tensor at = uniform_var({3, 4}, -1, 1, 300).detach().t();
  at.requires_grad_();
  Tensor bs = uniform_var({3, 10}, -1, 1, 301).detach().slice(1, 0, 10, 2);
  bs.requires_grad_();
  expect_gradients_correct([](const tensor_list& in) { return matmul(in[0], in[1]); }, {at, bs});
  const Tensor c = uniform_var({2, 5, 4}, -1, 1, 302).detach();
  expect_gradients_correct([&](const tensor_list& in) { return matmul(c, in[0]); }, {at});
  // A chain (second derivative has cross terms between a and b).
  expect_gradients_correct(
      [](const tensor_list& in) { return matmul(matmul(in[0], in[1]), transpose(in[1], 0, 1)); },
      {uniform_var({2, 3}, -1, 1, 303), uniform_var({3, 3}, -1, 1, 304)});
}

TEST(Matmul, HandGradient) {
  Tensor a = tensor({1.0, 2.0, 3.0, 4.0}, {2, 2});
  Tensor b = tensor({5.0, 6.0}, {2});
  a.requires_grad_();
  b.requires_grad_();
  sum(matmul(a, b)).backward();
  expect_tensor(a.grad(), {2, 2}, {5, 6, 5, 6});  // d/da_ij = b_j
  expect_tensor(b.grad(), {2}, {4, 6});           // d/db_j = sum_i a_ij
  EXPECT_STREQ(matmul(a, b).grad_fn()->name(), "MatmulBackward");
}

TEST(Matmul, Errors) {
  const Tensor a = zeros({2, 3}), b = zeros({4, 5});
  expect_contains(message_of<ShapeError>([&] { matmul(a, b); }),
                  "matmul: shapes [2, 3] and [4, 5] cannot be multiplied (3 != 4)");
  expect_contains(message_of<ShapeError>([&] { matmul(zeros({3}), zeros({4})); }),
                  "matmul: 1D tensors expected to have the same size, got [3] and [4]");
  expect_contains(message_of<ShapeError>([&] { matmul(zeros({}), a); }),
                  "matmul: both arguments need to be at least 1D, but they are 0D and 2D");
  expect_contains(message_of<ShapeError>([&] {
                    matmul(zeros({2, 3, 4}), zeros({3, 4, 5}));
                  }),
                  "matmul: batch dimensions [2] and [3] of shapes [2, 3, 4] and [3, 4, 5] cannot "
                  "be broadcast");
  expect_contains(message_of<ShapeError>([&] {
                    matmul(zeros({2, 3}), zeros({2, 4}));
                  }),
                  "(3 != 2)");
  expect_contains(message_of<DtypeError>([&] {
                    matmul(a, zeros({3, 2}, Dtype::Float64));
                  }),
                  "matmul: expected both operands to have the same dtype, got float32 and float64");
  expect_contains(message_of<DtypeError>([&] {
                    matmul(zeros({2, 3}, Dtype::Int64), zeros({3, 2}, Dtype::Int64));
                  }),
                  "matmul: expected a floating point dtype, got int64");
}

// ---- linear ----

// y[..., o] = sum_i x[..., i] w[o, i] + bias[o], plain loops in float64.
Tensor ref_linear(const Tensor& x, const Tensor& w, const Tensor& bias) {
  const Tensor x2 = x.to(Dtype::Float64).reshape({-1, x.size(-1)});
  const int64_t rows = x2.size(0), in = w.size(1), out_f = w.size(0);
  Tensor y = zeros({rows, out_f}, Dtype::Float64);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t o = 0; o < out_f; ++o) {
      double acc = bias.defined() ? bias.to(Dtype::Float64).at<double>({o}) : 0.0;
      for (int64_t i = 0; i < in; ++i) acc += x2.at<double>({r, i}) * w.at<double>({o, i});
      y.at<double>({r, o}) = acc;
    }
  }
  Shape s = x.sizes();
  s.back() = out_f;
  return y.view(s);
}

TEST(Linear, ForwardMatchesReference) {
  const Tensor w = uniform_var({4, 3}, -1, 1, 400).detach();
  const Tensor bias = uniform_var({4}, -1, 1, 401).detach();
  for (const Shape& xs : {Shape{3}, Shape{5, 3}, Shape{2, 5, 3}}) {
    SCOPED_TRACE(format_shape(xs));
    const Tensor x = uniform_var(xs, -1, 1, 402).detach();
    expect_close(linear(x, w, bias), ref_linear(x, w, bias), 1e-14);
    expect_close(linear(x, w), ref_linear(x, w, Tensor()), 1e-14);
    expect_close(linear(x.to(Dtype::Float32), w.to(Dtype::Float32), bias.to(Dtype::Float32)),
                 ref_linear(x, w, bias), 1e-6);
  }
  // Hand-computed: x = [1, 2], w = [[1, 0], [1, 1], [0, -1]], b = [10, 20, 30].
  expect_tensor(linear(tensor({1.0, 2.0}), tensor({1.0, 0.0, 1.0, 1.0, 0.0, -1.0}, {3, 2}),
                       tensor({10.0, 20.0, 30.0})),
                {3}, {11, 23, 28});
}

TEST(Linear, GradientsPassGradcheckAndGradgradcheck) {
  Tensor w = uniform_var({4, 3}, -1, 1, 410);
  Tensor bias = uniform_var({4}, -1, 1, 411);
  for (const Shape& xs : {Shape{3}, Shape{2, 3}, Shape{2, 2, 3}}) {
    SCOPED_TRACE(format_shape(xs));
    Tensor x = uniform_var(xs, -1, 1, 412);
    expect_gradients_correct([](const tensor_list& in) { return linear(in[0], in[1], in[2]); },
                             {x, w, bias});
    expect_gradients_correct([](const tensor_list& in) { return linear(in[0], in[1]); }, {x, w});
  }
  // A transposed weight leaf (the forward then sees a contiguous weightᵀ).
  Tensor wt = uniform_var({3, 4}, -1, 1, 413).detach().t();
  wt.requires_grad_();
  expect_gradients_correct([](const tensor_list& in) { return linear(in[0], in[1]); },
                           {uniform_var({2, 3}, -1, 1, 414), wt});
}

TEST(Linear, Errors) {
  const Tensor x = zeros({2, 3});
  expect_contains(message_of<ShapeError>([&] {
                    linear(x, zeros({4, 5}));
                  }),
                  "linear: input shape [2, 3] does not match weight shape [4, 5] (in_features 3 "
                  "!= 5)");
  expect_contains(message_of<ShapeError>([&] { linear(x, zeros({3})); }),
                  "linear: expected weight of 2 dims [out_features, in_features], got shape [3]");
  expect_contains(message_of<ShapeError>([&] {
                    linear(x, zeros({4, 3}), zeros({3}));
                  }),
                  "linear: expected bias of shape [4] (out_features), got shape [3]");
  expect_contains(message_of<ShapeError>([&] {
                    linear(zeros({}), zeros({4, 3}));
                  }),
                  "linear: expected input with at least 1 dim, got shape []");
}

}  // namespace
}  // namespace aclgrad
