// batch_norm: forward and running statistics against float64 formulas, train/eval gradients
// (gradcheck, gradgradcheck, fused vs differentiable backward), error messages.
#include <gtest/gtest.h>

#include <cmath>
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

// Per-channel statistics of x [N, C, *] in float64: mean, biased and unbiased variance.
struct RefStats {
  std::vector<double> mean, var, var_unbiased;
};

RefStats ref_stats(const Tensor& x) {
  const int64_t N = x.size(0), C = x.size(1), S = x.numel() / std::max<int64_t>(1, N * C);
  const std::vector<double> v = x.to_vector<double>();
  RefStats r;
  for (int64_t c = 0; c < C; ++c) {
    double s = 0, q = 0;
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t i = 0; i < S; ++i) s += v[(n * C + c) * S + i];
    }
    const double m = s / static_cast<double>(N * S);
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t i = 0; i < S; ++i) q += std::pow(v[(n * C + c) * S + i] - m, 2);
    }
    r.mean.push_back(m);
    r.var.push_back(q / static_cast<double>(N * S));
    r.var_unbiased.push_back(q / static_cast<double>(N * S - 1));
  }
  return r;
}

// (x - mean) / sqrt(var + eps) * w + b elementwise, channel = dim 1.
std::vector<double> ref_normalize(const Tensor& x, const std::vector<double>& mean,
                                  const std::vector<double>& var, const std::vector<double>& w,
                                  const std::vector<double>& b, double eps) {
  const int64_t C = x.size(1), S = x.numel() / std::max<int64_t>(1, x.size(0) * C);
  const std::vector<double> v = x.to_vector<double>();
  std::vector<double> y(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    const int64_t c = (static_cast<int64_t>(i) / S) % C;
    y[i] = (v[i] - mean[c]) / std::sqrt(var[c] + eps) * w[c] + b[c];
  }
  return y;
}

TEST(BatchNormForward, TrainingNormalisesWithBatchStatsAndUpdatesRunningStats) {
  uint64_t seed = 10;
  for (const Shape& shape : {Shape{4, 3}, Shape{3, 4, 5}, Shape{2, 3, 2, 3, 2}}) {
    for (Dtype dt : {Dtype::Float64, Dtype::Float32}) {
      SCOPED_TRACE(format_shape(shape) + (dt == Dtype::Float32 ? " float32" : " float64"));
      const int64_t C = shape[1];
      const Tensor x = uniform_var(shape, -2, 3, ++seed).detach().to(dt);
      const Tensor w = uniform_var({C}, 0.5, 2, ++seed).detach().to(dt);
      const Tensor b = uniform_var({C}, -1, 1, ++seed).detach().to(dt);
      const Tensor rm = uniform_var({C}, -1, 1, ++seed).detach();  // float64 stats, any input
      const Tensor rv = uniform_var({C}, 0.5, 2, ++seed).detach();
      const std::vector<double> rm0 = rm.to_vector<double>(), rv0 = rv.to_vector<double>();
      const uint64_t v0 = rm.version();
      const double eps = 1e-3, momentum = 0.25;
      const Tensor y = batch_norm(x, rm, rv, w, b, true, momentum, eps);
      const RefStats st = ref_stats(x);
      const double tol = dt == Dtype::Float64 ? 1e-13 : 2e-6;
      expect_tensor(
          y, shape,
          ref_normalize(x, st.mean, st.var, w.to_vector<double>(), b.to_vector<double>(), eps),
          tol * 10);
      std::vector<double> want_m, want_v;
      for (int64_t c = 0; c < C; ++c) {
        want_m.push_back((1 - momentum) * rm0[c] + momentum * st.mean[c]);
        want_v.push_back((1 - momentum) * rv0[c] + momentum * st.var_unbiased[c]);
      }
      expect_tensor(rm, {C}, want_m, tol);
      expect_tensor(rv, {C}, want_v, tol);
      EXPECT_GT(rm.version(), v0);
    }
  }
}

TEST(BatchNormForward, HandComputedTrainingStep) {
  // N = 2, C = 1: mean 2, biased var 1, unbiased var 2.
  const Tensor x = tensor({1.0, 3.0}, {2, 1});
  const Tensor rm = zeros({1}, Dtype::Float32), rv = ones({1}, Dtype::Float32);
  const Tensor y = batch_norm(x, rm, rv, Tensor(), Tensor(), true);
  const double s = 1 / std::sqrt(1 + 1e-5);
  expect_tensor(y, {2, 1}, {-s, s}, 1e-15);
  expect_tensor(rm, {1}, {0.2}, 1e-7);  // 0.9 * 0 + 0.1 * 2
  expect_tensor(rv, {1}, {1.1}, 1e-7);  // 0.9 * 1 + 0.1 * 2
}

TEST(BatchNormForward, EvalUsesRunningStatsAndLeavesThemAlone) {
  const Tensor x = uniform_var({3, 2, 4}, -2, 2, 20).detach();
  const Tensor rm = tensor({0.5, -1.0}, {2}), rv = tensor({2.0, 0.25}, {2});
  const Tensor w = tensor({1.5, -0.5}, {2}), b = tensor({0.1, 0.2}, {2});
  const uint64_t v0 = rm.version();
  const Tensor y = batch_norm(x, rm, rv, w, b, false, 0.1, 1e-5);
  expect_tensor(y, x.sizes(), ref_normalize(x, {0.5, -1}, {2, 0.25}, {1.5, -0.5}, {0.1, 0.2}, 1e-5),
                1e-14);
  expect_tensor(rm, {2}, {0.5, -1}, 0);
  EXPECT_EQ(rm.version(), v0);
  // Training without running statistics: batch statistics, nothing to update.
  const RefStats st = ref_stats(x);
  expect_tensor(batch_norm(x, Tensor(), Tensor(), Tensor(), Tensor(), true), x.sizes(),
                ref_normalize(x, st.mean, st.var, {1, 1}, {0, 0}, 1e-5), 1e-13);
}

TEST(BatchNormForward, NonContiguousInputAndEmptyBatch) {
  const Tensor base = uniform_var({4, 6, 3}, -1, 1, 30).detach();
  const Tensor x = base.transpose(1, 2).narrow(2, 1, 4);  // [4, 3, 4] strided
  expect_tensor(
      batch_norm(x, Tensor(), Tensor(), Tensor(), Tensor(), true), x.sizes(),
      batch_norm(x.contiguous(), Tensor(), Tensor(), Tensor(), Tensor(), true).to_vector<double>(),
      0);
  const Tensor rm = zeros({3}, Dtype::Float64), rv = ones({3}, Dtype::Float64);
  EXPECT_EQ(batch_norm(zeros({0, 3}, Dtype::Float64), rm, rv, Tensor(), Tensor(), true).sizes(),
            Shape({0, 3}));
  expect_tensor(rm, {3}, {0, 0, 0}, 0);  // an empty batch does not move the statistics
  expect_tensor(rv, {3}, {1, 1, 1}, 0);
}

// ---- gradients ----

TEST(BatchNormBackward, TrainingGradcheckForInputWeightBias) {
  uint64_t seed = 40;
  for (const Shape& shape : {Shape{5, 3}, Shape{2, 3, 4}, Shape{2, 2, 2, 3}}) {
    SCOPED_TRACE(format_shape(shape));
    const int64_t C = shape[1];
    const Tensor x = uniform_var(shape, -2, 2, ++seed);
    const Tensor w = uniform_var({C}, 0.5, 2, ++seed), b = uniform_var({C}, -1, 1, ++seed);
    const Tensor rm = zeros({C}, Dtype::Float64), rv = ones({C}, Dtype::Float64);
    expect_gradients_correct(
        [&](const tensor_list& in) { return batch_norm(in[0], rm, rv, in[1], in[2], true, 0.1); },
        {x, w, b});
    expect_gradients_correct(  // no affine parameters, no running statistics
        [&](const tensor_list& in) {
          return batch_norm(in[0], Tensor(), Tensor(), Tensor(), Tensor(), true, 0.1, 1e-3);
        },
        {x});
  }
}

TEST(BatchNormBackward, EvalGradcheck) {
  const Tensor x = uniform_var({3, 2, 3}, -2, 2, 50);
  const Tensor w = uniform_var({2}, 0.5, 2, 51), b = uniform_var({2}, -1, 1, 52);
  const Tensor rm = tensor({0.3, -0.2}, {2}), rv = tensor({1.5, 0.7}, {2});
  expect_gradients_correct(
      [&](const tensor_list& in) { return batch_norm(in[0], rm, rv, in[1], in[2], false); },
      {x, w, b});
}

TEST(BatchNormBackward, FusedAndDifferentiableBackwardsAgree) {
  for (bool training : {true, false}) {
    SCOPED_TRACE(training ? "training" : "eval");
    const Tensor x = uniform_var({4, 3, 5}, -2, 2, 60);
    const Tensor w = uniform_var({3}, 0.5, 2, 61), b = uniform_var({3}, -1, 1, 62);
    const Tensor rm = tensor({0.3, -0.2, 0.1}, {3}), rv = tensor({1.5, 0.7, 1.0}, {3});
    const Tensor g = uniform_var({4, 3, 5}, -1, 1, 63).detach();
    const Tensor y = batch_norm(x, rm.clone(), rv.clone(), w, b, training);
    const tensor_list fused = autograd::grad({y}, {x, w, b}, {g}, true, false);
    const tensor_list composed = autograd::grad({y}, {x, w, b}, {g}, true, true);
    ASSERT_NE(composed[0].grad_fn(), nullptr);
    for (int i = 0; i < 3; ++i) {
      expect_tensor(composed[i], fused[i].sizes(), fused[i].to_vector<double>(), 1e-12);
    }
    // Subsets of inputs needing grad (x constant; only bias).
    const Tensor xc = x.detach();
    const tensor_list only_w = autograd::grad({batch_norm(xc, rm, rv, w, b, false)}, {w}, {g});
    EXPECT_EQ(only_w[0].sizes(), Shape({3}));
    const Tensor bb = uniform_var({3}, -1, 1, 64);
    const tensor_list only_b =
        autograd::grad({batch_norm(xc, rm, rv, Tensor(), bb, training)}, {bb}, {g});
    expect_tensor(only_b[0], {3}, sum(g, {0, 2}).to_vector<double>(), 1e-14);
  }
}

// Here the gradient reaching batch_norm's backward is mul's fresh 2 g, which the fused backward
// takes for dx (autograd::gradient_buffer); its results must equal the composed backward's,
// which allocates, and the caller's g must stay as it was.
TEST(BatchNormBackward, FusedIntoTheIncomingBufferMatchesComposed) {
  for (Dtype dt : {Dtype::Float64, Dtype::Float32}) {
    SCOPED_TRACE(dt == Dtype::Float64 ? "float64" : "float32");
    const Tensor x = uniform_var({6, 4, 7, 5}, -2, 2, 70).detach().to(dt).requires_grad_();
    const Tensor w = uniform_var({4}, 0.5, 2, 71).detach().to(dt).requires_grad_();
    const Tensor b = uniform_var({4}, -1, 1, 72).detach().to(dt).requires_grad_();
    const Tensor g = uniform_var({6, 4, 7, 5}, -1, 1, 73).detach().to(dt);
    const std::vector<unsigned char> g_before = testing::bytes_of(g);
    auto grads = [&](bool create_graph) {
      const Tensor y = batch_norm(x, Tensor(), Tensor(), w, b, true);
      return autograd::grad({y * 2.0}, {x, w, b}, {g}, false, create_graph);
    };
    const tensor_list fused = grads(false), composed = grads(true);
    const double tol = dt == Dtype::Float64 ? 1e-12 : 1e-4;
    for (int i = 0; i < 3; ++i) {
      expect_tensor(fused[i], composed[i].sizes(), composed[i].to_vector<double>(), tol);
    }
    EXPECT_EQ(testing::bytes_of(g), g_before);
  }
}

TEST(BatchNormBackward, HandComputedTrainingGradients) {
  // x = [1, 3] (N = 2, C = 1), eps = 0: x̂ = [-1, 1]; with g = [1, 0]:
  // db = 1, dw = -1, dx = w (g - mean(g) - x̂ mean(g x̂)) / sigma = 2 ([0.5, -0.5] - [0.5, -0.5]) =
  // 0.
  Tensor x = tensor({1.0, 3.0}, {2, 1});
  Tensor w = tensor({2.0}, {1}), b = tensor({0.0}, {1});
  x.requires_grad_(), w.requires_grad_(), b.requires_grad_();
  const Tensor y = batch_norm(x, Tensor(), Tensor(), w, b, true, 0.1, 0.0);
  y.backward(tensor({1.0, 0.0}, {2, 1}));
  expect_tensor(x.grad(), {2, 1}, {0, 0}, 1e-15);
  expect_tensor(w.grad(), {1}, {-1}, 1e-15);
  expect_tensor(b.grad(), {1}, {1}, 1e-15);
  EXPECT_STREQ(y.grad_fn()->name(), "BatchNormBackward");
}

TEST(BatchNormBackward, Float32GradientsMatchFloat64) {
  const Tensor x64 = uniform_var({4, 3, 6}, -2, 2, 70);
  const Tensor w64 = uniform_var({3}, 0.5, 2, 71), b64 = uniform_var({3}, -1, 1, 72);
  const Tensor g = uniform_var({4, 3, 6}, -1, 1, 73).detach();
  Tensor x32 = x64.detach().to(Dtype::Float32), w32 = w64.detach().to(Dtype::Float32),
         b32 = b64.detach().to(Dtype::Float32);
  x32.requires_grad_(), w32.requires_grad_(), b32.requires_grad_();
  const tensor_list d64 =
      autograd::grad({batch_norm(x64, Tensor(), Tensor(), w64, b64, true)}, {x64, w64, b64}, {g});
  const tensor_list d32 = autograd::grad({batch_norm(x32, Tensor(), Tensor(), w32, b32, true)},
                                         {x32, w32, b32}, {g.to(Dtype::Float32)});
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(d32[i].dtype(), Dtype::Float32);
    expect_tensor(d32[i], d64[i].sizes(), d64[i].to_vector<double>(), 1e-5);
  }
}

// Large enough for the kernels' parallel paths (channels split over tasks) with rows whose
// length (39 * 41 = 1599) is not a multiple of the 8 summation lanes; float32 input whose mean
// is large against its spread (the two-pass variance must not cancel). Forward, running
// statistics and the fused backward against float64 formulas, and the same bits with 1 and 2
// threads.
TEST(BatchNormBackward, LargeFloat32InputMatchesFloat64ReferenceWithOneAndTwoThreads) {
  const int64_t N = 12, C = 10, S = 39 * 41;
  const double M = static_cast<double>(N * S), eps = 1e-5, momentum = 0.1;
  const Tensor x =
      add(mul(uniform_var({N, C, 39, 41}, -1, 1, 80).detach(), 2.0), 30.0).to(Dtype::Float32);
  const Tensor w = uniform_var({C}, 0.5, 2, 81).detach().to(Dtype::Float32);
  const Tensor b = uniform_var({C}, -1, 1, 82).detach().to(Dtype::Float32);
  const Tensor g = uniform_var({N, C, 39, 41}, -1, 1, 83).detach().to(Dtype::Float32);
  struct Result {
    Tensor y, dx, dw, db, running_mean, running_var;
  };
  auto run = [&](int threads) {
    return testing::with_threads(threads, [&] {
      Result r;
      Tensor xv = x.clone(), wv = w.clone(), bv = b.clone();
      xv.requires_grad_(), wv.requires_grad_(), bv.requires_grad_();
      r.running_mean = zeros({C});
      r.running_var = ones({C});
      r.y = batch_norm(xv, r.running_mean, r.running_var, wv, bv, true, momentum, eps);
      r.y.backward(g);
      r.dx = xv.grad(), r.dw = wv.grad(), r.db = bv.grad();
      return r;
    });
  };
  const Result one = run(1), two = run(2);
  for (auto member : {&Result::y, &Result::dx, &Result::dw, &Result::db, &Result::running_mean,
                      &Result::running_var}) {
    EXPECT_EQ(testing::bytes_of(one.*member), testing::bytes_of(two.*member));
  }

  // float64 reference: x̂ = (x - mean) invstd, y = x̂ w + b; dw = Σ g x̂, db = Σ g,
  // dx = w invstd (g - db / M - x̂ dw / M).
  const RefStats st = ref_stats(x);
  const std::vector<double> wv = w.to_vector<double>(), bv = b.to_vector<double>();
  const std::vector<double> xv = x.to_vector<double>(), gv = g.to_vector<double>();
  expect_tensor(one.y, x.sizes(), ref_normalize(x, st.mean, st.var, wv, bv, eps), 2e-5);
  std::vector<double> dw(C, 0), db(C, 0), dx(xv.size()), rm(C), rv(C);
  auto xhat = [&](size_t i, int64_t c) {
    return (xv[i] - st.mean[c]) / std::sqrt(st.var[c] + eps);
  };
  for (size_t i = 0; i < xv.size(); ++i) {
    const int64_t c = (static_cast<int64_t>(i) / S) % C;
    dw[c] += gv[i] * xhat(i, c);
    db[c] += gv[i];
  }
  for (size_t i = 0; i < xv.size(); ++i) {
    const int64_t c = (static_cast<int64_t>(i) / S) % C;
    dx[i] = wv[c] / std::sqrt(st.var[c] + eps) * (gv[i] - db[c] / M - xhat(i, c) * dw[c] / M);
  }
  for (int64_t c = 0; c < C; ++c) {
    rm[c] = momentum * st.mean[c];
    rv[c] = (1 - momentum) + momentum * st.var_unbiased[c];
  }
  expect_tensor(one.dx, x.sizes(), dx, 2e-5);
  expect_tensor(one.dw, {C}, dw, 2e-3);  // sums of 19k products, stored as float32
  expect_tensor(one.db, {C}, db, 2e-3);
  expect_tensor(one.running_mean, {C}, rm, 1e-6);
  expect_tensor(one.running_var, {C}, rv, 1e-6);
}

// ---- errors ----

TEST(BatchNormErrors, MessagesNameTheArgumentAndSizes) {
  const Tensor x = zeros({2, 4, 3});
  auto has = [](const std::string& m, const std::string& want) {
    EXPECT_NE(m.find(want), std::string::npos) << m;
  };
  has(message_of<ShapeError>(
          [&] { batch_norm(x, zeros({3}), ones({4}), Tensor(), Tensor(), true); }),
      "batch_norm: running_mean should contain 4 elements not 3");
  has(message_of<ShapeError>(
          [&] { batch_norm(x, zeros({4}), ones({3}), Tensor(), Tensor(), true); }),
      "batch_norm: running_var should contain 4 elements not 3");
  has(message_of<ShapeError>([&] { batch_norm(x, Tensor(), Tensor(), ones({3}), Tensor(), true); }),
      "batch_norm: weight should contain 4 elements not 3");
  has(message_of<ShapeError>([&] { batch_norm(x, Tensor(), Tensor(), Tensor(), ones({5}), true); }),
      "batch_norm: bias should contain 4 elements not 5");
  has(message_of<ShapeError>([&] {
        batch_norm(x, Tensor(), Tensor(), ones({1, 4}), Tensor(), true);
      }),
      "batch_norm: expected weight of shape [4], got shape [1, 4]");
  has(message_of<DtypeError>(
          [&] { batch_norm(x, Tensor(), Tensor(), ones({4}, Dtype::Float64), Tensor(), true); }),
      "batch_norm: expected weight to have the input's dtype float32, got float64");
  has(message_of<Error>([&] { batch_norm(x, Tensor(), Tensor(), Tensor(), Tensor(), false); }),
      "batch_norm: running_mean must be defined in evaluation mode");
  has(message_of<Error>([&] {
        batch_norm(zeros({1, 4}), Tensor(), Tensor(), Tensor(), Tensor(), true);
      }),
      "batch_norm: expected more than 1 value per channel when training, got input of shape [1, "
      "4]");
  has(message_of<ShapeError>(
          [&] { batch_norm(zeros({4}), Tensor(), Tensor(), Tensor(), Tensor(), true); }),
      "batch_norm: expected input with at least 2 dims [N, C, *], got input of shape [4]");
  has(message_of<DtypeError>([&] {
        batch_norm(zeros({2, 4}, Dtype::Int64), Tensor(), Tensor(), Tensor(), Tensor(), true);
      }),
      "batch_norm: expected a floating point dtype, got int64");
  Tensor rm = zeros({4});
  rm.requires_grad_();
  has(message_of<Error>([&] { batch_norm(x, rm, ones({4}), Tensor(), Tensor(), true); }),
      "batch_norm: running_mean must not require grad");
  // A single value per channel is fine in eval mode.
  EXPECT_NO_THROW(batch_norm(zeros({1, 4}), zeros({4}), ones({4}), Tensor(), Tensor(), false));
}

}  // namespace
}  // namespace aclgrad
