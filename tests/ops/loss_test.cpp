// Losses: forward against float64 loop references written from PyTorch's formulas (reductions,
// class weights, ignore_index, label smoothing, probability targets, spatial dims, unbatched),
// hand-computed cases, stability, gradients (gradcheck + gradgradcheck) and error messages.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
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

void expect_contains(const std::string& msg, const std::string& part) {
  EXPECT_NE(msg.find(part), std::string::npos) << "message: " << msg << "\nexpected: " << part;
}

void expect_close(const Tensor& got, const Tensor& want, double tol) {
  ASSERT_EQ(got.sizes(), want.sizes());
  const std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) {
    EXPECT_NEAR(g[i], w[i], tol * (1 + std::abs(w[i]))) << "element " << i;
  }
}

const char* name_of(Reduction r) {
  return r == Reduction::None ? "none" : r == Reduction::Mean ? "mean" : "sum";
}

// Class-index cross entropy (log_softmax = true) or nll_loss (false) in float64 loops, from
// torch's definition: per element l = (1 - eps)·(-w[t]·logp[t]) + eps/C·(-sum_c w[c]·logp[c]),
// 0 for ignored targets; mean divides by sum of w[t] over non-ignored targets.
Tensor ref_class_loss(const Tensor& input, const Tensor& target, const Tensor& weight,
                      Reduction red, int64_t ignore, double eps, bool log_softmax) {
  const int64_t N = input.dim() == 1 ? 1 : input.size(0);
  const int64_t C = input.dim() == 1 ? input.size(0) : input.size(1);
  const Tensor x = input.to(Dtype::Float64).reshape({N, C, -1});
  const int64_t S = x.size(2);
  const Tensor t = target.reshape({N, S});
  Tensor per = zeros({N, S}, Dtype::Float64);
  double total = 0, total_w = 0;
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t s = 0; s < S; ++s) {
      std::vector<double> lp(C);
      double mx = -std::numeric_limits<double>::infinity(), se = 0;
      for (int64_t c = 0; c < C; ++c) mx = std::max(mx, x.at<double>({n, c, s}));
      for (int64_t c = 0; c < C; ++c) se += std::exp(x.at<double>({n, c, s}) - mx);
      for (int64_t c = 0; c < C; ++c) {
        lp[c] = log_softmax ? x.at<double>({n, c, s}) - mx - std::log(se) : x.at<double>({n, c, s});
      }
      const int64_t k = t.at<int64_t>({n, s});
      if (k == ignore) continue;
      auto w = [&](int64_t c) { return weight.defined() ? weight.to_vector<double>()[c] : 1.0; };
      double smooth = 0;
      for (int64_t c = 0; c < C; ++c) smooth -= w(c) * lp[c];
      const double l = (1 - eps) * (-w(k) * lp[k]) + eps / C * smooth;
      per.at<double>({n, s}) = l;
      total += l;
      total_w += w(k);
    }
  }
  if (red == Reduction::Sum) return full({}, total, Dtype::Float64);
  if (red == Reduction::Mean) return full({}, total / total_w, Dtype::Float64);
  return per.view(target.sizes());
}

// Shapes [4, 3] and [2, 3, 2, 2] (spatial), targets including ignore_index entries.
struct ClassCase {
  Tensor input, target;
  int64_t ignore;
};
std::vector<ClassCase> class_cases(uint64_t seed) {
  return {
      {uniform_var({4, 3}, -3, 3, seed), tensor<int64_t>({0, 2, -100, 1}, {4}), -100},
      {uniform_var({2, 3, 2, 2}, -3, 3, seed + 1),
       tensor<int64_t>({2, 1, 0, 1, 1, 2, 0, 1}, {2, 2, 2}), 1},            // a real class ignored
      {uniform_var({3}, -3, 3, seed + 2), tensor<int64_t>({2}, {}), -100},  // unbatched
  };
}

TEST(CrossEntropy, ForwardMatchesTheReferenceForEveryOption) {
  const Tensor w = tensor({0.5, 2.0, 1.5});
  for (const ClassCase& c : class_cases(1)) {
    for (Reduction red : {Reduction::None, Reduction::Mean, Reduction::Sum}) {
      for (bool weighted : {false, true}) {
        for (double eps : {0.0, 0.2, 1.0}) {
          SCOPED_TRACE(format_shape(c.input.sizes()) + " " + name_of(red) +
                       (weighted ? " weighted" : "") + " eps " + std::to_string(eps));
          const Tensor wt = weighted ? w : Tensor();
          const Tensor x = c.input.detach();
          const Tensor want = ref_class_loss(x, c.target, wt, red, c.ignore, eps, true);
          expect_close(cross_entropy(x, c.target, {red, c.ignore, eps, wt}), want, 1e-13);
          const Tensor got32 =
              cross_entropy(x.to(Dtype::Float32), c.target,
                            {red, c.ignore, eps, weighted ? w.to(Dtype::Float32) : Tensor()});
          EXPECT_EQ(got32.dtype(), Dtype::Float32);
          expect_close(got32, want, 1e-5);
          if (eps == 0) {
            expect_close(nll_loss(x, c.target, {red, c.ignore, wt}),
                         ref_class_loss(x, c.target, wt, red, c.ignore, 0, false), 1e-13);
          }
        }
      }
    }
  }
}

TEST(CrossEntropy, HandComputedCases) {
  // Logits [0, ln 3]: p = [1/4, 3/4]. Target 1: -ln(3/4); target 0: ln 4.
  const Tensor x = tensor({0.0, std::log(3.0), 0.0, std::log(3.0)}, {2, 2});
  const Tensor t = tensor<int64_t>({1, 0}, {2});
  expect_tensor(cross_entropy(x, t, {.reduction = Reduction::None}), {2},
                {std::log(4.0 / 3), std::log(4.0)}, 1e-15);
  expect_tensor(cross_entropy(x, t), {}, {(std::log(4.0 / 3) + std::log(4.0)) / 2}, 1e-15);
  // Class weights [1, 3]: mean = (3 ln(4/3) + 1 ln 4) / (3 + 1).
  expect_tensor(cross_entropy(x, t, {.weight = tensor({1.0, 3.0})}), {},
                {(3 * std::log(4.0 / 3) + std::log(4.0)) / 4}, 1e-15);
  // Label smoothing 0.5 on row 0: 0.5 ln(4/3) + 0.5/2 (ln 4 + ln(4/3)).
  expect_tensor(cross_entropy(x.narrow(0, 0, 1), t.narrow(0, 0, 1), {.label_smoothing = 0.5}), {},
                {0.5 * std::log(4.0 / 3) + 0.25 * (std::log(4.0) + std::log(4.0 / 3))}, 1e-15);
  // Every target ignored: mean is 0/0 = NaN (as PyTorch), sum is 0.
  const Tensor ign = tensor<int64_t>({-100, -100}, {2});
  EXPECT_TRUE(std::isnan(cross_entropy(x, ign).item<double>()));
  EXPECT_EQ(cross_entropy(x, ign, {.reduction = Reduction::Sum}).item<double>(), 0.0);
  // Huge logits stay finite: [1000, 0] with target 1 costs 1000.
  expect_tensor(cross_entropy(tensor({1000.f, 0.f}, {1, 2}), tensor<int64_t>({1}, {1})), {}, {1000},
                1e-3);
  // nll_loss reads log-probabilities directly: -x[n, t[n]] averaged.
  expect_tensor(nll_loss(tensor({-1.0, -2.0, -3.0, -4.0}, {2, 2}), t), {}, {(2.0 + 3.0) / 2});
}

TEST(CrossEntropy, GradientsPassGradcheckAndGradgradcheck) {
  const Tensor w = tensor({0.5, 2.0, 1.5});
  for (const ClassCase& c : class_cases(10)) {
    for (Reduction red : {Reduction::None, Reduction::Mean, Reduction::Sum}) {
      for (double eps : {0.0, 0.3}) {
        SCOPED_TRACE(format_shape(c.input.sizes()) + " " + name_of(red) + " eps " +
                     std::to_string(eps));
        const CrossEntropyOptions o{red, c.ignore, eps, red == Reduction::Sum ? Tensor() : w};
        expect_gradients_correct(
            [&](const tensor_list& in) { return cross_entropy(in[0], c.target, o); }, {c.input});
      }
      expect_gradients_correct(
          [&](const tensor_list& in) {
            return nll_loss(in[0], c.target, {red, c.ignore, w});
          },
          {c.input});
    }
  }
  // A non-contiguous input (class dim strided).
  Tensor xt = uniform_var({3, 4}, -2, 2, 20).detach().t();
  xt.requires_grad_();
  const Tensor t = tensor<int64_t>({2, 0, 1, 1}, {4});
  expect_gradients_correct([&](const tensor_list& in) { return cross_entropy(in[0], t); }, {xt});
}

TEST(CrossEntropy, HandGradient) {
  // d/dx mean CE = (softmax(x) - onehot(t)) / N: p = [1/4, 3/4], t = 1 -> [1/4, -1/4] / 1.
  Tensor x = tensor({0.0, std::log(3.0)}, {1, 2});
  x.requires_grad_();
  cross_entropy(x, tensor<int64_t>({1}, {1})).backward();
  expect_tensor(x.grad(), {1, 2}, {0.25, -0.25}, 1e-15);
}

// -sum_c w_c t'_c log p_c per element, t' = (1 - eps) t + eps / C; mean over N·d elements.
Tensor ref_prob_loss(const Tensor& input, const Tensor& target, const Tensor& weight, Reduction red,
                     double eps) {
  const int64_t N = input.size(0), C = input.size(1);
  const Tensor x = input.to(Dtype::Float64).reshape({N, C, -1});
  const Tensor p = target.to(Dtype::Float64).reshape({N, C, -1});
  const int64_t S = x.size(2);
  Tensor per = zeros({N, S}, Dtype::Float64);
  double total = 0;
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t s = 0; s < S; ++s) {
      double mx = -1e300, se = 0, l = 0;
      for (int64_t c = 0; c < C; ++c) mx = std::max(mx, x.at<double>({n, c, s}));
      for (int64_t c = 0; c < C; ++c) se += std::exp(x.at<double>({n, c, s}) - mx);
      for (int64_t c = 0; c < C; ++c) {
        const double w = weight.defined() ? weight.to_vector<double>()[c] : 1.0;
        const double tc = (1 - eps) * p.at<double>({n, c, s}) + eps / C;
        l -= w * tc * (x.at<double>({n, c, s}) - mx - std::log(se));
      }
      per.at<double>({n, s}) = l;
      total += l;
    }
  }
  if (red == Reduction::Sum) return full({}, total, Dtype::Float64);
  if (red == Reduction::Mean) return full({}, total / (N * S), Dtype::Float64);
  Shape s = input.sizes();
  s.erase(s.begin() + 1);
  return per.view(s);
}

TEST(CrossEntropy, ProbabilityTargets) {
  Tensor x = uniform_var({2, 3, 2}, -2, 2, 30);
  Tensor p = softmax(uniform_var({2, 3, 2}, -2, 2, 31).detach(), 1);
  p.requires_grad_();
  const Tensor w = tensor({0.5, 2.0, 1.5});
  for (Reduction red : {Reduction::None, Reduction::Mean, Reduction::Sum}) {
    for (double eps : {0.0, 0.25}) {
      SCOPED_TRACE(std::string(name_of(red)) + " eps " + std::to_string(eps));
      const CrossEntropyOptions o{.reduction = red, .label_smoothing = eps, .weight = w};
      expect_close(cross_entropy(x.detach(), p.detach(), o), ref_prob_loss(x, p, w, red, eps),
                   1e-13);
      expect_gradients_correct(
          [&](const tensor_list& in) { return cross_entropy(in[0], in[1], o); }, {x, p});
    }
  }
}

// ---- mse_loss ----

TEST(MseLoss, ValuesAndGradients) {
  const Tensor a = tensor({1.0, 2.0, 3.0, 4.0}, {2, 2}), b = tensor({0.0, 4.0, 3.0, 1.0}, {2, 2});
  expect_tensor(mse_loss(a, b, Reduction::None), {2, 2}, {1, 4, 0, 9});
  expect_tensor(mse_loss(a, b), {}, {14.0 / 4});
  expect_tensor(mse_loss(a, b, Reduction::Sum), {}, {14});
  // target broadcast along rows: [0, 1] -> (1, 1, 9, 9)
  expect_tensor(mse_loss(a, tensor({0.0, 1.0}), Reduction::Sum), {}, {1 + 1 + 9 + 9});
  expect_tensor(mse_loss(a.to(Dtype::Float32), b.to(Dtype::Float32)), {}, {3.5});
  Tensor x = uniform_var({3, 4}, -1, 1, 40), y = uniform_var({3, 4}, -1, 1, 41);
  Tensor yb = uniform_var({4}, -1, 1, 42);
  for (Reduction red : {Reduction::None, Reduction::Mean, Reduction::Sum}) {
    SCOPED_TRACE(name_of(red));
    expect_gradients_correct([&](const tensor_list& in) { return mse_loss(in[0], in[1], red); },
                             {x, y});
    expect_gradients_correct([&](const tensor_list& in) { return mse_loss(in[0], in[1], red); },
                             {x, yb});
  }
}

// ---- binary_cross_entropy_with_logits ----

// -w [p y log σ(x) + (1 - y) log(1 - σ(x))], in float64 from the sigmoid definition.
double ref_bce(double x, double y, double w, double p) {
  const double s = 1 / (1 + std::exp(-x));
  return -w * (p * y * std::log(s) + (1 - y) * std::log1p(-s));
}

TEST(BceWithLogits, ValuesMatchTheDefinitionAndStayFiniteForHugeLogits) {
  const Tensor x = uniform_var({3, 4}, -4, 4, 50).detach();
  const Tensor y = uniform_var({3, 4}, 0, 1, 51).detach();
  const Tensor w = uniform_var({3, 1}, 0.5, 2, 52).detach();
  const Tensor p = uniform_var({4}, 0.5, 3, 53).detach();
  const std::vector<double> xv = x.to_vector<double>(), yv = y.to_vector<double>();
  const std::vector<double> wv = w.to_vector<double>(), pv = p.to_vector<double>();
  for (bool weighted : {false, true}) {
    for (bool pos : {false, true}) {
      SCOPED_TRACE(std::string(weighted ? "weight " : "") + (pos ? "pos_weight" : ""));
      std::vector<double> want(12);
      double total = 0;
      for (int i = 0; i < 12; ++i) {
        want[i] = ref_bce(xv[i], yv[i], weighted ? wv[i / 4] : 1, pos ? pv[i % 4] : 1);
        total += want[i];
      }
      BceWithLogitsOptions o{Reduction::None, weighted ? w : Tensor(), pos ? p : Tensor()};
      expect_tensor(binary_cross_entropy_with_logits(x, y, o), {3, 4}, want, 1e-13);
      o.reduction = Reduction::Sum;
      expect_tensor(binary_cross_entropy_with_logits(x, y, o), {}, {total}, 1e-12);
      o.reduction = Reduction::Mean;
      expect_tensor(binary_cross_entropy_with_logits(x, y, o), {}, {total / 12}, 1e-13);
    }
  }
  // |x| = 100: log σ(-100) = -100 - log1p(e^-100); a naive log(1 - σ(x)) would be -inf.
  const Tensor big = tensor({100.f, -100.f, 100.f, 0.f});
  const Tensor t = tensor({0.f, 1.f, 1.f, 1.f});
  expect_tensor(binary_cross_entropy_with_logits(big, t, {.reduction = Reduction::None}), {4},
                {100, 100, 0, std::log(2.0)}, 1e-5);
}

TEST(BceWithLogits, GradientsPassGradcheckAndGradgradcheck) {
  Tensor x = uniform_var({3, 4}, -3, 3, 60), y = uniform_var({3, 4}, 0, 1, 61);
  const Tensor w = uniform_var({4}, 0.5, 2, 62).detach();
  const Tensor p = uniform_var({3, 1}, 0.5, 3, 63).detach();
  for (Reduction red : {Reduction::None, Reduction::Mean, Reduction::Sum}) {
    SCOPED_TRACE(name_of(red));
    expect_gradients_correct(
        [&](const tensor_list& in) {
          return binary_cross_entropy_with_logits(in[0], in[1], {red, w, p});
        },
        {x, y});
    expect_gradients_correct(
        [&](const tensor_list& in) {
          return binary_cross_entropy_with_logits(in[0], in[1], {.reduction = red});
        },
        {x, y});
  }
  // Non-contiguous (transposed) logits and target.
  Tensor xt = uniform_var({4, 3}, -3, 3, 64).detach().t();
  xt.requires_grad_();
  Tensor yt = uniform_var({4, 3}, 0, 1, 65).detach().t();
  yt.requires_grad_();
  expect_gradients_correct(
      [&](const tensor_list& in) {
        return binary_cross_entropy_with_logits(in[0], in[1], {.pos_weight = p});
      },
      {xt, yt});
  expect_gradients_correct([](const tensor_list& in) { return mse_loss(in[0], in[1]); }, {xt, yt});
  // Hand-computed: d/dx = σ(x) - y without weights; x = 0, y = 1 -> -1/2 (mean over 1 element).
  Tensor z = tensor({0.0});
  z.requires_grad_();
  binary_cross_entropy_with_logits(z, tensor({1.0})).backward();
  expect_tensor(z.grad(), {1}, {-0.5}, 1e-15);
}

// ---- errors ----

TEST(LossErrors, NameTheOpTheArgumentAndTheValue) {
  const Tensor x = zeros({2, 3});
  expect_contains(
      message_of<IndexError>([&] {
        cross_entropy(x, tensor<int64_t>({0, 3}, {2}));
      }),
      "cross_entropy: target 3 is out of bounds; expected a class index in [0, 2] (3 classes) or "
      "ignore_index -100");
  expect_contains(message_of<IndexError>([&] {
                    nll_loss(x, tensor<int64_t>({-1, 0}, {2}));
                  }),
                  "nll_loss: target -1 is out of bounds");
  expect_contains(message_of<ShapeError>([&] {
                    cross_entropy(x, tensor({0.f, 1.f}));
                  }),
                  "cross_entropy: a floating target holds class probabilities and must have the "
                  "input's shape [2, 3], got shape [2] (class indices must be int64)");
  expect_contains(message_of<DtypeError>([&] { cross_entropy(x, zeros({2}, Dtype::Bool)); }),
                  "cross_entropy: expected target of dtype int64 (class indices), got bool");
  expect_contains(message_of<DtypeError>([&] { nll_loss(x, zeros({2})); }),
                  "nll_loss: expected target of dtype int64 (class indices), got float32");
  expect_contains(
      message_of<ShapeError>([&] {
        cross_entropy(x, tensor<int64_t>({0, 1, 2}, {3}));
      }),
      "cross_entropy: expected target of shape [2] for input of shape [2, 3] (the input without "
      "its class dim 1), got [3]");
  expect_contains(message_of<ShapeError>([&] {
                    cross_entropy(x, tensor<int64_t>({0, 1}, {2}), {.weight = zeros({4})});
                  }),
                  "cross_entropy: expected weight of shape [3] (one per class), got [4]");
  expect_contains(message_of<Error>([&] {
                    cross_entropy(x, tensor<int64_t>({0, 1}, {2}), {.label_smoothing = 1.5});
                  }),
                  "cross_entropy: label_smoothing must be between 0.0 and 1.0, got 1.5");
  expect_contains(message_of<ShapeError>([&] { cross_entropy(zeros({}), zeros({})); }),
                  "cross_entropy: expected input of shape [N, C, d1, ...] or [C], got []");
  expect_contains(message_of<ShapeError>([&] { binary_cross_entropy_with_logits(x, zeros({3})); }),
                  "binary_cross_entropy_with_logits: target size [3] must be the same as input "
                  "size [2, 3]");
  expect_contains(message_of<ShapeError>([&] {
                    binary_cross_entropy_with_logits(x, zeros({2, 3}), {.pos_weight = zeros({2})});
                  }),
                  "binary_cross_entropy_with_logits: pos_weight of shape [2] does not broadcast "
                  "to the input shape [2, 3]");
  expect_contains(message_of<DtypeError>([&] {
                    mse_loss(x, zeros({2, 3}, Dtype::Float64));
                  }),
                  "mse_loss: input has dtype float32 but the target has dtype float64");
  expect_contains(message_of<ShapeError>([&] { mse_loss(x, zeros({2})); }),
                  "mse_loss: target of shape [2] does not broadcast to the input shape [2, 3]");
  expect_contains(
      message_of<DtypeError>([&] {
        nll_loss(x, tensor<int64_t>({0, 1}, {2}), {.weight = zeros({3}, Dtype::Float64)});
      }),
      "nll_loss: weight has dtype float64 but the input has dtype float32");
  expect_contains(message_of<DtypeError>([&] {
                    cross_entropy(x, zeros({2, 3}), {.weight = zeros({3}, Dtype::Float64)});
                  }),
                  "cross_entropy: weight has dtype float64 but the input has dtype float32");
  expect_contains(message_of<DtypeError>([&] {
                    cross_entropy(x, zeros({2, 3}, Dtype::Float64));
                  }),
                  "cross_entropy: target probabilities have dtype float64 but the input has dtype "
                  "float32");
  expect_contains(message_of<Error>([&] {
                    cross_entropy(x, zeros({2, 3}), {.ignore_index = 0});
                  }),
                  "cross_entropy: ignore_index (0) is not supported for floating point "
                  "(probability) targets");
  expect_contains(message_of<DtypeError>([&] {
                    binary_cross_entropy_with_logits(x, zeros({2, 3}, Dtype::Float64));
                  }),
                  "binary_cross_entropy_with_logits: target has dtype float64 but the input has "
                  "dtype float32");
  expect_contains(
      message_of<DtypeError>([&] {
        binary_cross_entropy_with_logits(x, zeros({2, 3}), {.weight = zeros({3}, Dtype::Float64)});
      }),
      "binary_cross_entropy_with_logits: weight has dtype float64 but the input has "
      "dtype float32");
  expect_contains(message_of<Error>([] { reduction_from_string("avg"); }),
                  "reduction: 'avg' is not a valid value (expected none, mean or sum)");
  EXPECT_EQ(reduction_from_string("sum"), Reduction::Sum);
}

}  // namespace
}  // namespace aclgrad
