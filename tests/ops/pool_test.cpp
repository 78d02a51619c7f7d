// Pooling: forward against float64 references written from the definitions, PyTorch's output
// sizes and hand-computed values, gradcheck/gradgradcheck sweeps over every window parameter,
// tie/NaN/padding conventions and error messages.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <string>

#include "ops/ops.h"
#include "tests/ops/ops_test_util.h"

namespace aclgrad {
namespace {

using autograd::tensor_list;
using testing::expect_gradients_correct;
using testing::expect_tensor;
using testing::message_of;
using testing::uniform_var;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

// One pooling configuration; vectors have one entry per spatial dim.
struct PoolCase {
  PoolCase(Shape in, Shape k, Shape s, Shape p, Shape d, bool ceil = false)
      : in(std::move(in)),
        k(std::move(k)),
        s(std::move(s)),
        p(std::move(p)),
        d(std::move(d)),
        ceil(ceil) {}
  Shape in;  // full input shape, [N, C, *spatial] or [C, *spatial]
  Shape k, s, p, d;
  bool ceil = false;
  bool include_pad = true;
  std::optional<int64_t> divisor;
  int rank() const { return static_cast<int>(k.size()); }
};

std::string describe(const PoolCase& c) {
  std::string out = "in=" + format_shape(c.in) + " k=" + format_shape(c.k) +
                    " s=" + format_shape(c.s) + " p=" + format_shape(c.p) +
                    " d=" + format_shape(c.d) + (c.ceil ? " ceil" : "");
  return out + (c.include_pad ? "" : " exclude_pad") +
         (c.divisor ? " divisor=" + std::to_string(*c.divisor) : "");
}

// PyTorch's output size, written with floating division.
int64_t ref_out_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode) {
  const double span = static_cast<double>(in + 2 * p - d * (k - 1) - 1) / static_cast<double>(s);
  int64_t out = static_cast<int64_t>(ceil_mode ? std::ceil(span) : std::floor(span)) + 1;
  if (ceil_mode && (out - 1) * s >= in + p) --out;
  return out;
}

// Calls f(idx) for every multi-index below sizes, row-major.
void odometer(const Shape& sizes, const std::function<void(const Shape&)>& f) {
  int64_t total = 1;
  for (int64_t v : sizes) total *= v;
  Shape idx(sizes.size(), 0);
  for (int64_t n = 0; n < total; ++n) {
    f(idx);
    for (int64_t a = static_cast<int64_t>(sizes.size()) - 1; a >= 0; --a) {
      if (++idx[a] < sizes[a]) break;
      idx[a] = 0;
    }
  }
}

struct RefResult {
  Shape shape;
  std::vector<double> values;
  std::vector<int64_t> indices;  // max only
};

// Naive pooling from the definition: every window tap o*s - p + j*d, padding excluded from max,
// counted as zeros for avg.
RefResult ref_pool(const Tensor& x, const PoolCase& c, bool is_max) {
  const int r = c.rank();
  const int64_t lead = static_cast<int64_t>(c.in.size()) - r;
  Shape in(c.in.end() - r, c.in.end()), out;
  int64_t planes = 1, plane_size = 1;
  for (int64_t i = 0; i < lead; ++i) planes *= c.in[i];
  for (int a = 0; a < r; ++a) {
    out.push_back(ref_out_size(in[a], c.k[a], c.s[a], c.p[a], c.d[a], c.ceil));
    plane_size *= in[a];
  }
  RefResult res;
  res.shape = Shape(c.in.begin(), c.in.begin() + lead);
  res.shape.insert(res.shape.end(), out.begin(), out.end());
  const std::vector<double> xv = x.to_vector<double>();
  for (int64_t pl = 0; pl < planes; ++pl) {
    odometer(out, [&](const Shape& o) {
      double best = -kInf, sum = 0, span = 1;
      int64_t best_i = -1, count = 0;
      for (int a = 0; a < r; ++a) {
        const int64_t start = o[a] * c.s[a] - c.p[a];
        span *= static_cast<double>(std::min(start + c.k[a], in[a] + c.p[a]) - start);
      }
      odometer(c.k, [&](const Shape& j) {
        int64_t flat = 0;
        for (int a = 0; a < r; ++a) {
          const int64_t pos = o[a] * c.s[a] - c.p[a] + j[a] * c.d[a];
          if (pos < 0 || pos >= in[a]) return;
          flat = flat * in[a] + pos;
        }
        const double v = xv[pl * plane_size + flat];
        if (best_i < 0 || v > best) best = v, best_i = flat;
        sum += v;
        ++count;
      });
      const double div = c.divisor ? static_cast<double>(*c.divisor)
                                   : (c.include_pad ? span : static_cast<double>(count));
      res.values.push_back(is_max ? best : sum / div);
      res.indices.push_back(best_i);
    });
  }
  return res;
}

std::tuple<Tensor, Tensor> run_max(const Tensor& x, const PoolCase& c) {
  switch (c.rank()) {
    case 1:
      return max_pool1d_with_indices(x, c.k, c.s, c.p, c.d, c.ceil);
    case 2:
      return max_pool2d_with_indices(x, c.k, c.s, c.p, c.d, c.ceil);
    default:
      return max_pool3d_with_indices(x, c.k, c.s, c.p, c.d, c.ceil);
  }
}

Tensor run_avg(const Tensor& x, const PoolCase& c) {
  switch (c.rank()) {
    case 1:
      return avg_pool1d(x, c.k, c.s, c.p, c.ceil, c.include_pad, c.divisor);
    case 2:
      return avg_pool2d(x, c.k, c.s, c.p, c.ceil, c.include_pad, c.divisor);
    default:
      return avg_pool3d(x, c.k, c.s, c.p, c.ceil, c.include_pad, c.divisor);
  }
}

// A float64 leaf of distinct values 0.05 apart in random order: no ties, and a ±1e-6
// perturbation never changes which element wins a max window.
Tensor distinct_var(const Shape& shape, uint64_t seed) {
  Generator gen(seed);
  int64_t n = 1;
  for (int64_t v : shape) n *= v;
  std::vector<double> vals(n);
  for (int64_t i = 0; i < n; ++i) vals[i] = 0.05 * static_cast<double>(i - n / 2);
  for (int64_t i = n - 1; i > 0; --i) std::swap(vals[i], vals[gen.below(i + 1)]);
  Tensor t = from_vector(vals, shape);
  t.requires_grad_();
  return t;
}

// Window geometries over every parameter: rank 1-3, batched/unbatched, stride < = > kernel,
// padding up to the limit, dilation, ceil_mode with a clipped last window, size-1 dims.
std::vector<PoolCase> geometry_sweep(bool with_dilation) {
  const int64_t d2 = with_dilation ? 2 : 1;
  return {
      {{2, 3, 9}, {3}, {2}, {1}, {1}},
      {{3, 8}, {2}, {2}, {1}, {1}, true},
      {{1, 2, 10}, {4}, {3}, {2}, {d2}, true},
      {{2, 7}, {3}, {1}, {0}, {d2}},
      {{1, 1, 1}, {1}, {1}, {0}, {1}},
      {{2, 2, 5, 6}, {2, 3}, {2, 1}, {1, 1}, {1, d2}},
      {{1, 2, 7, 5}, {3, 2}, {2, 2}, {1, 0}, {d2, 1}, true},
      {{2, 5, 5}, {2, 2}, {2, 2}, {1, 1}, {1, 1}, true},
      {{1, 1, 6, 1}, {3, 1}, {3, 1}, {1, 0}, {1, 1}, true},
      {{1, 1, 4, 5, 4}, {2, 3, 2}, {2, 2, 1}, {1, 1, 0}, {1, 1, d2}},
      {{2, 3, 4, 5}, {2, 2, 3}, {1, 2, 2}, {0, 1, 1}, {1, d2, 1}, true},
      {{1, 2, 3, 3, 3}, {3, 3, 3}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, true},
  };
}

// ---- output sizes ----

TEST(PoolShape, CeilModeSizesMatchPyTorch) {
  // {in, kernel, stride, padding, dilation, ceil_mode, PyTorch 1.13's L_out}
  struct Row {
    int64_t in, k, s, p, d;
    bool ceil;
    int64_t out;
  };
  const Row rows[] = {{5, 2, 2, 1, 1, true, 3}, {5, 2, 2, 0, 1, true, 3}, {6, 3, 2, 1, 1, true, 4},
                      {4, 3, 3, 1, 1, true, 2}, {7, 3, 3, 0, 2, true, 2}, {10, 4, 3, 2, 1, true, 4},
                      {5, 3, 2, 0, 1, true, 2}, {1, 2, 2, 1, 1, true, 1}, {2, 3, 3, 1, 1, true, 1},
                      {9, 2, 4, 1, 1, true, 3}, {8, 3, 5, 1, 2, true, 2}, {5, 2, 2, 1, 1, false, 3},
                      {9, 2, 4, 1, 1, false, 3}};
  for (const Row& r : rows) {
    SCOPED_TRACE(::testing::Message() << "in=" << r.in << " k=" << r.k << " s=" << r.s
                                      << " p=" << r.p << " d=" << r.d << " ceil=" << r.ceil);
    EXPECT_EQ(ref_out_size(r.in, r.k, r.s, r.p, r.d, r.ceil), r.out);
    const Tensor x = zeros({1, 1, r.in});
    EXPECT_EQ(max_pool1d(x, {r.k}, {r.s}, {r.p}, {r.d}, r.ceil).sizes(), Shape({1, 1, r.out}));
    if (r.d == 1 && r.p <= r.k / 2) {
      EXPECT_EQ(avg_pool1d(x, {r.k}, {r.s}, {r.p}, r.ceil).sizes(), Shape({1, 1, r.out}));
    }
    // The same axis as H of a 2d pool or D of a 3d pool gives the same size.
    EXPECT_EQ(
        max_pool2d(zeros({1, r.in, 2}), {r.k, 1}, {r.s, 1}, {r.p, 0}, {r.d, 1}, r.ceil).sizes(),
        Shape({1, r.out, 2}));
    EXPECT_EQ(max_pool3d(zeros({1, r.in, 1, 3}), {r.k, 1, 2}, {r.s, 1, 1}, {r.p, 0, 1}, {r.d, 1, 1},
                         r.ceil)
                  .sizes(),
              Shape({1, r.out, 1, 4}));
  }
}

// ---- forward values ----

TEST(PoolForward, MaxMatchesReferenceValuesAndIndices) {
  uint64_t seed = 100;
  for (const PoolCase& c : geometry_sweep(true)) {
    SCOPED_TRACE(describe(c));
    for (Dtype dt : {Dtype::Float64, Dtype::Float32}) {
      const Tensor x = uniform_var(c.in, -2, 2, ++seed).detach().to(dt);
      const RefResult ref = ref_pool(x, c, true);
      auto [y, idx] = run_max(x, c);
      EXPECT_EQ(y.dtype(), dt);
      expect_tensor(y, ref.shape, ref.values, 0);  // max is exact
      EXPECT_EQ(idx.to_vector<int64_t>(), ref.indices);
    }
  }
}

TEST(PoolForward, AvgMatchesReferenceForEveryDivisorRule) {
  uint64_t seed = 200;
  for (PoolCase c : geometry_sweep(false)) {
    for (int rule = 0; rule < 3; ++rule) {
      c.include_pad = rule != 1;
      c.divisor = rule == 2 ? std::optional<int64_t>(3) : std::nullopt;
      SCOPED_TRACE(describe(c));
      const Tensor x = uniform_var(c.in, -2, 2, ++seed).detach();
      const RefResult ref = ref_pool(x, c, false);
      expect_tensor(run_avg(x, c), ref.shape, ref.values, 1e-14);
      expect_tensor(run_avg(x.to(Dtype::Float32), c), ref.shape, ref.values, 1e-6);
    }
  }
}

TEST(PoolForward, HandComputedAvgCeilModeAndPadding) {
  const Tensor x = arange(1, 26, 1, Dtype::Float64).view({1, 1, 5, 5});
  // Values from PyTorch 1.13: the last ceil-mode window is clipped at in + pad for the divisor.
  expect_tensor(avg_pool2d(x, {2}, {2}, {1}, true), {1, 1, 3, 3},
                {0.25, 1.25, 2.25, 4.25, 10, 12, 9.25, 20, 22}, 1e-12);
  expect_tensor(avg_pool2d(x, {2}, {2}, {1}, true, false), {1, 1, 3, 3},
                {1, 2.5, 4.5, 8.5, 10, 12, 18.5, 20, 22}, 1e-12);
  const Tensor r = arange(1, 7, 1, Dtype::Float64).view({1, 1, 6});
  expect_tensor(avg_pool1d(r, {3}, {2}, {1}, true), {1, 1, 4}, {1, 3, 5, 3}, 1e-12);
  expect_tensor(avg_pool1d(r, {3}, {2}, {1}, true, false), {1, 1, 4}, {1.5, 3, 5, 6}, 1e-12);
  expect_tensor(avg_pool1d(r, {3}, {3}, {0}, false, true, -2), {1, 1, 2}, {-3, -7.5}, 1e-12);
}

TEST(PoolForward, AdaptiveAvgMatchesPyTorchAndReference) {
  const Tensor x = arange(1, 36, 1, Dtype::Float64).view({1, 5, 7});  // unbatched
  expect_tensor(adaptive_avg_pool2d(x, {3, 4}), {1, 3, 4},
                {5, 6.5, 8.5, 10, 15.5, 17, 19, 20.5, 26, 27.5, 29.5, 31}, 1e-12);
  // out dividing in: plain avg pooling; out == in: identity; out = 1: global mean.
  const Tensor y = uniform_var({2, 3, 6, 4}, -1, 1, 300).detach();
  expect_tensor(adaptive_avg_pool2d(y, {3, 2}), {2, 3, 3, 2},
                avg_pool2d(y, {2, 2}).to_vector<double>(), 1e-15);
  expect_tensor(adaptive_avg_pool2d(y, {6, 4}), y.sizes(), y.to_vector<double>(), 0);
  expect_tensor(adaptive_avg_pool2d(y, {1}), {2, 3, 1, 1},
                mean(y, {2, 3}, true).to_vector<double>(), 1e-15);
  // Output larger than input: overlapping windows [floor(i n/o), ceil((i+1) n/o)).
  const Tensor z = tensor({1.0, 2.0, 4.0}, {1, 1, 3});
  expect_tensor(adaptive_avg_pool2d(z, {1, 5}), {1, 1, 5}, {1, 1.5, 2, 3, 4}, 1e-15);
  EXPECT_EQ(adaptive_avg_pool2d(y, {0, 2}).sizes(), Shape({2, 3, 0, 2}));
}

TEST(PoolForward, NonContiguousInputsAndEmptyBatch) {
  const Tensor base = uniform_var({3, 2, 9, 8}, -1, 1, 400).detach();
  const Tensor x = base.transpose(2, 3).narrow(2, 1, 6);  // [3, 2, 6, 9], strided with offset
  const Tensor xc = x.contiguous();
  EXPECT_EQ(max_pool2d(x, {3}, {2}, {1}).to_vector<double>(),
            max_pool2d(xc, {3}, {2}, {1}).to_vector<double>());
  EXPECT_EQ(avg_pool2d(x, {2, 3}, {1}).to_vector<double>(),
            avg_pool2d(xc, {2, 3}, {1}).to_vector<double>());
  EXPECT_EQ(max_pool2d(zeros({0, 2, 5, 5}), {2}).sizes(), Shape({0, 2, 2, 2}));
  EXPECT_EQ(avg_pool3d(zeros({0, 1, 2, 2, 2}), {2}).sizes(), Shape({0, 1, 1, 1, 1}));
}

TEST(PoolForward, ManyPlanesRunInParallelLikeTheReference) {
  // Enough planes to be split across threads; compare with the serial reference.
  const PoolCase c{{6, 40, 12, 13}, {3, 2}, {2, 2}, {1, 1}, {1, 1}, true};
  const Tensor x = uniform_var(c.in, -3, 3, 500).detach().to(Dtype::Float32);
  auto [y, idx] = run_max(x, c);
  const RefResult ref = ref_pool(x, c, true);
  expect_tensor(y, ref.shape, ref.values, 0);
  EXPECT_EQ(idx.to_vector<int64_t>(), ref.indices);
  expect_tensor(run_avg(x, c), ref.shape, ref_pool(x, c, false).values, 1e-5);
}

// 2-d max pooling without padding or dilation whose windows are all whole takes direct row loops
// for 2x2 and 3x3 kernels. Against a float64 reference of PyTorch's scan (from -inf at the
// window's first position, a strictly larger value or any NaN wins) on values with many ties,
// NaN and ±inf, forward (values and indices) and backward (gradients added at the indices),
// with the same bits on 1 and 2 threads. Sizes: the model's first pool (split over tasks), odd
// sizes (last row/column unused), overlapping windows, stride > kernel, output rows that are
// not a multiple of 4 or shorter than 4.
TEST(PoolForward, DenseTwoByTwoAndThreeByThreeMatchReferenceWithOneAndTwoThreads) {
  struct DenseCase {
    Shape in;
    int64_t k, s;
  };
  const std::vector<DenseCase> cases{{{4, 40, 28, 28}, 2, 2}, {{3, 30, 29, 31}, 2, 2},
                                     {{2, 20, 31, 31}, 3, 2}, {{2, 20, 17, 19}, 3, 1},
                                     {{2, 20, 16, 16}, 2, 1}, {{2, 20, 9, 70}, 2, 3},
                                     {{5, 12, 12}, 2, 2},     {{6, 40, 7, 7}, 2, 2}};
  uint64_t seed = 1000;
  for (const DenseCase& c : cases) {
    for (Dtype dt : {Dtype::Float32, Dtype::Float64}) {
      SCOPED_TRACE(format_shape(c.in) + " k=" + std::to_string(c.k) + " s=" + std::to_string(c.s) +
                   (dt == Dtype::Float32 ? " float32" : " float64"));
      // Multiples of 0.25 in [-2, 2] (ties everywhere), with a few NaN and ±inf.
      Generator gen(++seed);
      std::vector<double> xv = rand(c.in, Dtype::Float64, &gen).to_vector<double>();
      for (double& v : xv) v = std::floor(v * 16) / 4 - 2;
      for (size_t i = 0; i < xv.size(); i += 97) xv[i] = kNan;
      for (size_t i = 13; i < xv.size(); i += 89) xv[i] = -kInf;
      for (size_t i = 41; i < xv.size(); i += 211) xv[i] = kInf;
      const Tensor x = from_vector(xv, c.in).to(dt);
      const int64_t H = c.in[c.in.size() - 2], W = c.in.back();
      const int64_t Ho = (H - c.k) / c.s + 1, Wo = (W - c.k) / c.s + 1;
      const int64_t planes = x.numel() / (H * W);
      Shape out_shape(c.in.begin(), c.in.end() - 2);
      out_shape.push_back(Ho);
      out_shape.push_back(Wo);
      const Tensor g = uniform_var(out_shape, -1, 1, ++seed).detach().to(dt);

      // Reference: values, indices, and dx = g added at the indices.
      std::vector<double> ref_y, ref_dx(xv.size(), 0.0);
      std::vector<int64_t> ref_idx;
      const std::vector<double> gv = g.to_vector<double>();
      for (int64_t p = 0; p < planes; ++p) {
        for (int64_t oh = 0; oh < Ho; ++oh) {
          for (int64_t ow = 0; ow < Wo; ++ow) {
            double best = -kInf;
            int64_t at = oh * c.s * W + ow * c.s;
            for (int64_t i = 0; i < c.k; ++i) {
              for (int64_t j = 0; j < c.k; ++j) {
                const int64_t pos = (oh * c.s + i) * W + ow * c.s + j;
                const double v = xv[p * H * W + pos];
                if (v > best || std::isnan(v)) best = v, at = pos;
              }
            }
            ref_dx[p * H * W + at] += gv[ref_y.size()];
            ref_y.push_back(best);
            ref_idx.push_back(at);
          }
        }
      }

      auto run = [&](int threads) {
        return testing::with_threads(threads, [&] {
          Tensor xr = x.clone();
          xr.requires_grad_();
          auto [y, idx] = max_pool2d_with_indices(xr, {c.k}, {c.s});
          y.backward(g);
          return std::make_tuple(y, idx, xr.grad());
        });
      };
      const auto [y, idx, dx] = run(2);
      ASSERT_EQ(y.sizes(), out_shape);
      EXPECT_EQ(idx.to_vector<int64_t>(), ref_idx);
      const std::vector<double> yv = y.to_vector<double>();
      int64_t wrong = 0;
      for (size_t i = 0; i < yv.size(); ++i) {
        wrong += std::isnan(ref_y[i]) ? !std::isnan(yv[i]) : yv[i] != ref_y[i];
      }
      EXPECT_EQ(wrong, 0) << "of " << yv.size() << " outputs";
      expect_tensor(dx, c.in, ref_dx, dt == Dtype::Float32 ? 1e-6 : 1e-15);
      const auto [y1, idx1, dx1] = run(1);
      EXPECT_EQ(testing::bytes_of(y1), testing::bytes_of(y));
      EXPECT_EQ(idx1.to_vector<int64_t>(), idx.to_vector<int64_t>());
      EXPECT_EQ(testing::bytes_of(dx1), testing::bytes_of(dx));
    }
  }
}

// ---- conventions: ties, NaN, -inf, all-padding windows ----

TEST(PoolConventions, TiesGoToTheFirstPositionNanWinsMinusInfIsKept) {
  Tensor x = tensor({1.0, 3.0, 3.0, 2.0, 5.0, 5.0}, {1, 6});  // unbatched [C=1, L=6]
  x.requires_grad_();
  auto [y, idx] = max_pool1d_with_indices(x, {3});
  EXPECT_EQ(idx.to_vector<int64_t>(), (std::vector<int64_t>{1, 4}));
  sum(y).backward();
  expect_tensor(x.grad(), {1, 6}, {0, 1, 0, 0, 1, 0}, 0);
  // Overlapping windows accumulate onto a shared argmax.
  x.zero_grad();
  sum(max_pool1d(x, {2}, {1})).backward();
  expect_tensor(x.grad(), {1, 6}, {0, 2, 1, 0, 2, 0}, 0);  // windows win at 1, 1, 2, 4, 4

  auto [yn, in] = max_pool1d_with_indices(tensor({1.0, kNan, 3.0, kNan}, {1, 1, 4}), {4});
  EXPECT_TRUE(std::isnan(yn.item<double>()));
  EXPECT_EQ(in.item<int64_t>(), 3);  // the last NaN, like PyTorch
  auto [yi, ii] = max_pool1d_with_indices(tensor({-kInf, -kInf}, {1, 2}), {2});
  EXPECT_EQ(yi.item<double>(), -kInf);
  EXPECT_EQ(ii.item<int64_t>(), 0);
  // Padding is -inf for max: an all-negative row still gives its own values.
  expect_tensor(max_pool1d(tensor({-5.0, -7.0}, {1, 2}), {3}, {1}, {1}), {1, 2}, {-5, -5}, 0);
  // Dilation can leave a window with no input position: -inf, index -1, zero gradient.
  Tensor one = tensor({2.0}, {1, 1, 1});
  one.requires_grad_();
  auto [ye, ie] = max_pool1d_with_indices(one, {2}, {1}, {1}, {2});
  EXPECT_EQ(ye.item<double>(), -kInf);
  EXPECT_EQ(ie.item<int64_t>(), -1);
  sum(ye).backward();
  EXPECT_EQ(one.grad().item<double>(), 0);
}

// ---- gradients ----

TEST(PoolBackward, MaxPoolGradcheckSweep) {
  uint64_t seed = 600;
  for (const PoolCase& c : geometry_sweep(true)) {
    SCOPED_TRACE(describe(c));
    const Tensor x = distinct_var(c.in, ++seed);
    expect_gradients_correct([&](const tensor_list& in) { return std::get<0>(run_max(in[0], c)); },
                             {x},
                             /*second=*/seed % 3 == 0);
  }
}

TEST(PoolBackward, AvgPoolGradcheckSweep) {
  uint64_t seed = 700;
  int n = 0;
  for (PoolCase c : geometry_sweep(false)) {
    for (int rule = 0; rule < 3; ++rule, ++n) {
      c.include_pad = rule != 1;
      c.divisor = rule == 2 ? std::optional<int64_t>(5) : std::nullopt;
      SCOPED_TRACE(describe(c));
      const Tensor x = uniform_var(c.in, -1, 1, ++seed);
      expect_gradients_correct([&](const tensor_list& in) { return run_avg(in[0], c); }, {x},
                               /*second=*/n % 4 == 0);
    }
  }
}

TEST(PoolBackward, AdaptiveAvgGradcheck) {
  for (const Shape& out : {Shape{3, 4}, Shape{2}, Shape{7, 1}}) {
    SCOPED_TRACE(format_shape(out));
    const Tensor x = uniform_var({2, 2, 5, 3}, -1, 1, 800 + out[0]);
    expect_gradients_correct([&](const tensor_list& in) { return adaptive_avg_pool2d(in[0], out); },
                             {x});
  }
}

TEST(PoolBackward, DoubleBackwardIsRecorded) {
  Tensor x = distinct_var({1, 2, 4, 4}, 900);
  const Tensor y = max_pool2d(x, {2});
  Tensor g = autograd::grad({sum(mul(y, y))}, {x}, {}, std::nullopt, true)[0];
  ASSERT_NE(g.grad_fn(), nullptr);
  EXPECT_STREQ(g.grad_fn()->name(), "MaxPoolBackwardBackward");
  Tensor gg = autograd::grad({sum(g)}, {x}, {}, std::nullopt, true)[0];  // 2 at each argmax
  EXPECT_EQ(sum(gg).item<double>(), 2.0 * 8);
  Tensor a = uniform_var({1, 1, 4, 4}, -1, 1, 901);
  Tensor ga = autograd::grad({sum(avg_pool2d(a, {2}))}, {a}, {}, std::nullopt, true)[0];
  EXPECT_EQ(ga.grad_fn(), nullptr);  // constant: the gradient of a linear op of a leaf
  EXPECT_STREQ(avg_pool2d(a, {2}).grad_fn()->name(), "AvgPool2dBackward");
  const Tensor y3 = max_pool3d(distinct_var({1, 1, 1, 4, 4}, 902), {1, 2, 2});
  ASSERT_NE(y3.grad_fn(), nullptr);
  EXPECT_STREQ(y3.grad_fn()->name(), "MaxPool3dBackward");
}

TEST(PoolBackward, Float32GradientsMatchFloat64) {
  const PoolCase c({2, 3, 7, 6}, {3, 2}, {2, 1}, {1, 1}, {1, 1}, true);
  const Tensor x64 = distinct_var(c.in, 950);
  Tensor x32 = x64.detach().to(Dtype::Float32);
  x32.requires_grad_();
  for (bool is_max : {true, false}) {
    SCOPED_TRACE(is_max ? "max" : "avg");
    auto run = [&](const Tensor& x) { return is_max ? std::get<0>(run_max(x, c)) : run_avg(x, c); };
    const Tensor g = uniform_var(run(x64).sizes(), -1, 1, 951).detach();
    const Tensor d64 = autograd::grad({run(x64)}, {x64}, {g})[0];
    const Tensor d32 = autograd::grad({run(x32)}, {x32}, {g.to(Dtype::Float32)})[0];
    EXPECT_EQ(d32.dtype(), Dtype::Float32);
    expect_tensor(d32, c.in, d64.to_vector<double>(), 1e-6);
  }
}

// ---- errors ----

TEST(PoolErrors, MessagesNameOpArgumentAndValues) {
  const Tensor x = zeros({1, 1, 5, 5});
  auto msg = [](auto f) { return message_of<Error>(f); };
  auto has = [](const std::string& m, const std::string& want) {
    EXPECT_NE(m.find(want), std::string::npos) << m;
  };
  has(msg([&] { max_pool2d(x, {3}, {1}, {3}); }),
      "max_pool2d: pad should be at most half of effective kernel size, but got pad=3, "
      "kernel_size=3 and dilation=1");
  max_pool2d(x, {3}, {1}, {2}, {2});  // effective kernel 5: pad 2 is allowed
  has(msg([&] { avg_pool2d(x, {3}, {1}, {2}); }),
      "avg_pool2d: pad should be at most half of kernel size, but got pad=2 and kernel_size=3");
  has(msg([&] {
        max_pool1d(zeros({1, 4}), {0});
      }),
      "max_pool1d: kernel_size should be greater than zero, but got kernel_size=[0]");
  has(msg([&] {
        max_pool2d(x, {2}, {0, 1});
      }),
      "max_pool2d: stride should be greater than zero, but got stride=[0, 1]");
  has(msg([&] {
        max_pool3d(zeros({1, 2, 2, 2}), {1}, {1}, {0}, {0});
      }),
      "max_pool3d: dilation should be greater than zero, but got dilation=[0, 0, 0]");
  has(msg([&] { avg_pool2d(x, {2}, {1}, {-1}); }),
      "avg_pool2d: pad must be non-negative, but got pad=[-1, -1]");
  has(msg([&] {
        max_pool2d(x, {2, 2, 2});
      }),
      "max_pool2d: kernel_size must have 1 or 2 elements, got [2, 2, 2]");
  has(message_of<ShapeError>([&] { max_pool2d(x, {7}); }),
      "max_pool2d: given input of shape [1, 1, 5, 5], the calculated output size [0, 0] is too "
      "small");
  has(message_of<ShapeError>([&] {
        max_pool2d(zeros({5, 5}), {2});
      }),
      "max_pool2d: expected a 3-d [C, H, W] or 4-d [N, C, H, W] input with non-zero C and "
      "spatial sizes (N may be 0), got input of shape [5, 5]");
  has(message_of<ShapeError>([&] {
        avg_pool3d(zeros({1, 0, 2, 2, 2}), {1});
      }),
      "got input of shape [1, 0, 2, 2, 2]");
  has(msg([&] { avg_pool2d(x, {2}, {}, {0}, false, true, 0); }),
      "avg_pool2d: divisor_override must be non-zero, got 0");
  has(message_of<DtypeError>([&] {
        max_pool1d(zeros({1, 4}, Dtype::Int64), {2});
      }),
      "max_pool1d: expected a floating point dtype, got int64");
  has(msg([&] {
        adaptive_avg_pool2d(x, {2, -1});
      }),
      "adaptive_avg_pool2d: elements of output_size must be greater than or equal to 0, got "
      "[2, -1]");
  has(message_of<ShapeError>([&] {
        adaptive_avg_pool2d(zeros({1, 1, 0, 5}), {2});
      }),
      "adaptive_avg_pool2d: expected a 3-d [C, H, W] or 4-d [N, C, H, W] input");
}

}  // namespace
}  // namespace aclgrad
