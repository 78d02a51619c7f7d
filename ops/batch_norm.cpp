// batch_norm: per-channel statistics and normalisation kernels, the running-statistics update,
// and the backward node (a fused kernel for first derivatives; differentiable ops under
// create_graph).
//
// Kernels see x as contiguous [N, C, S] (S = product of the spatial dims): channel c is N rows of
// S contiguous values, row (n, c) starting at (n*C + c)*S. Statistics accumulate in double.
#include "ops/batch_norm.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "autograd/function.h"
#include "ops/cast.h"
#include "ops/elementwise.h"
#include "ops/kernels.h"
#include "ops/reduction.h"
#include "ops/shape.h"
#include "ops/simd_variants.h"
#include "tensor/creation.h"

namespace aclgrad {

using autograd::make_node;
using autograd::Node;
using autograd::tensor_list;

namespace {

// x as [N, C, S].
struct ChannelGeometry {
  int64_t N = 0, C = 0, S = 1;
  int64_t per_channel() const { return N * S; }  // M
};

ChannelGeometry geometry_of(const Tensor& x) {
  ChannelGeometry g{x.size(0), x.size(1), 1};
  for (int64_t d = 2; d < x.dim(); ++d) g.S *= x.size(d);
  return g;
}

// Runs f(begin, end) over [0, count) in parallel chunks of about kGrainWork elements of work.
template <typename F>
void parallel_chunks(int64_t count, int64_t work_per_item, F f) {
  constexpr int64_t kGrainWork = 1 << 15;
  const int64_t grain = std::max<int64_t>(1, kGrainWork / std::max<int64_t>(1, work_per_item));
  if (count <= grain) {
    f(int64_t{0}, count);
    return;
  }
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, count, grain),
                    [&](const tbb::blocked_range<int64_t>& r) { f(r.begin(), r.end()); });
}

// Per-channel sums in kLanes independent double partial sums: element i of every row goes to
// lane i % kLanes, and the lanes are added in a fixed order at the end. The lanes let the loops
// vectorise (a single accumulator would serialise every add on its latency); the result depends
// only on the data, never on the thread count (a channel is summed by one task).
constexpr int64_t kLanes = 8;

struct Lanes {
  double v[kLanes] = {};
  double total() const { return ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7])); }
};

// Calls add(offset, lane) for every element of channel c (offset into x, lane = its index in
// the row % kLanes), in memory order.
template <typename F>
[[gnu::always_inline]] inline void for_channel_lanes(const ChannelGeometry& g, int64_t c, F add) {
  const int64_t full = g.S / kLanes * kLanes;
  for (int64_t n = 0; n < g.N; ++n) {
    const int64_t r = (n * g.C + c) * g.S;  // the row's offset
    for (int64_t i = 0; i < full; i += kLanes) {
      for (int64_t j = 0; j < kLanes; ++j) add(r + i + j, j);
    }
    for (int64_t i = full; i < g.S; ++i) add(r + i, i - full);
  }
}

// ---- float16 / bfloat16: the kernels below, overloaded for a 16-bit T (the more constrained
// template wins). Rows are widened a chunk at a time (ops/convert16) and computed with the same
// float and double arithmetic in the same order as the general templates, the results rounded
// in bulk: bit for bit what the general templates give, without their per-element conversions.

constexpr int64_t kChunk16 = kernels::map16_detail::kChunk;
static_assert(kChunk16 % kLanes == 0);  // element i of a row stays in lane i % kLanes

// Calls add(i, i % kLanes) for i < m in order, in blocks of kLanes (so the loops vectorise).
template <typename F>
[[gnu::always_inline]] inline void for_lanes(int64_t m, F add) {
  const int64_t full = m / kLanes * kLanes;
  for (int64_t i = 0; i < full; i += kLanes) {
    for (int64_t j = 0; j < kLanes; ++j) add(i + j, j);
  }
  for (int64_t i = full; i < m; ++i) add(i, i - full);
}

// s[i % kLanes] += v[i], i < m, in order.
template <typename T>
[[gnu::always_inline]] inline void add_lanes(const T* v, int64_t m, double* s) {
  for_lanes(m, [&](int64_t i, int64_t j) { s[j] += v[i]; });
}
ACLGRAD_SIMD_VARIANTS(void, add_lanes, (const float* v, int64_t m, double* s), (v, m, s))

// q[i % kLanes] += (v[i] - mu)^2.
template <typename T>
[[gnu::always_inline]] inline void add_square_lanes(const T* v, int64_t m, double mu, double* q) {
  for_lanes(m, [&](int64_t i, int64_t j) {
    const double d = static_cast<double>(v[i]) - mu;
    q[j] += d * d;
  });
}
ACLGRAD_SIMD_VARIANTS(void, add_square_lanes, (const float* v, int64_t m, double mu, double* q),
                      (v, m, mu, q))

// sg[i % kLanes] += g[i]; sgx[i % kLanes] += g[i] (x[i] - mu).
template <typename T>
[[gnu::always_inline]] inline void add_grad_lanes(const T* gv, const T* xv, int64_t m, double mu,
                                                  double* sg, double* sgx) {
  for_lanes(m, [&](int64_t i, int64_t j) {
    const double gd = static_cast<double>(gv[i]);
    sg[j] += gd;
    sgx[j] += gd * (static_cast<double>(xv[i]) - mu);
  });
}
ACLGRAD_SIMD_VARIANTS(void, add_grad_lanes,
                      (const float* gv, const float* xv, int64_t m, double mu, double* sg,
                       double* sgx),
                      (gv, xv, m, mu, sg, sgx))

// Calls f(offset, m) for the chunks of every row of channel c, in memory order.
template <typename F>
void for_channel_chunks(const ChannelGeometry& g, int64_t c, F f) {
  for (int64_t n = 0; n < g.N; ++n) {
    const int64_t r = (n * g.C + c) * g.S;
    for (int64_t at = 0; at < g.S; at += kChunk16) f(r + at, std::min(kChunk16, g.S - at));
  }
}

template <typename T>
requires kernels::is_16bit_v<T>
void stats_of_channel(const ChannelGeometry& g, const T* x, int64_t c, double* mean, double* var) {
  alignas(64) float v[kChunk16];
  Lanes s, q;
  for_channel_chunks(g, c, [&](int64_t at, int64_t m) {
    ops::convert16::widen(x + at, v, m);
    add_lanes(v, m, s.v);
  });
  const double mu = s.total() / static_cast<double>(g.per_channel());
  for_channel_chunks(g, c, [&](int64_t at, int64_t m) {
    ops::convert16::widen(x + at, v, m);
    add_square_lanes(v, m, mu, q.v);
  });
  *mean = mu;
  *var = q.total() / static_cast<double>(g.per_channel());
}

template <typename T>
requires kernels::is_16bit_v<T>
void affine_rows(const ChannelGeometry& g, const T* x, T* y, const double* scale,
                 const double* shift, int64_t r0, int64_t r1) {
  alignas(64) float v[kChunk16];
  for (int64_t r = r0; r < r1; ++r) {
    const float a = static_cast<float>(scale[r % g.C]), b = static_cast<float>(shift[r % g.C]);
    for (int64_t at = r * g.S; at < (r + 1) * g.S; at += kChunk16) {
      const int64_t m = std::min(kChunk16, (r + 1) * g.S - at);
      ops::convert16::widen(x + at, v, m);
      for (int64_t i = 0; i < m; ++i) v[i] = v[i] * a + b;
      ops::convert16::narrow(v, y + at, m);
    }
  }
}

template <typename T>
requires kernels::is_16bit_v<T>
void grad_sums_of_channel(const ChannelGeometry& g, const T* x, const T* gp, int64_t c, double mu,
                          double* sum_g, double* sum_gxc) {
  alignas(64) float gv[kChunk16], xv[kChunk16];
  Lanes sg, sgx;
  for_channel_chunks(g, c, [&](int64_t at, int64_t m) {
    ops::convert16::widen(gp + at, gv, m);
    ops::convert16::widen(x + at, xv, m);
    add_grad_lanes(gv, xv, m, mu, sg.v, sgx.v);
  });
  *sum_g = sg.total();
  *sum_gxc = sgx.total();
}

// dp may be gp (each chunk is read before it is written).
template <typename T>
requires kernels::is_16bit_v<T>
void grad_input_rows(const ChannelGeometry& g, const T* x, const T* gp, T* dp, const double* k,
                     const double* a, const double* b, const double* mean, int64_t r0, int64_t r1) {
  alignas(64) float gv[kChunk16], xv[kChunk16];
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t c = r % g.C;
    const float kc = float(k[c]), ac = float(a[c]), bc = float(b[c]), mc = float(mean[c]);
    for (int64_t at = r * g.S; at < (r + 1) * g.S; at += kChunk16) {
      const int64_t m = std::min(kChunk16, (r + 1) * g.S - at);
      ops::convert16::widen(gp + at, gv, m);
      ops::convert16::widen(x + at, xv, m);
      for (int64_t i = 0; i < m; ++i) gv[i] = kc * (gv[i] - ac - (xv[i] - mc) * bc);
      ops::convert16::narrow(gv, dp + at, m);
    }
  }
}

// Each kernel below is a template forced inline, plus a plain float overload of the same name
// compiled for AVX-512, AVX2 and baseline x86-64 (simd_variants.h) that instantiates it, so each
// variant compiles the loop for its own target: their double sums run 4 or 8 lanes a vector instead
// of SSE2's 2, the same lanes in the same order, which made a training step faster (measured:
// bench/RESULTS.md, design batch_norm.simd-variants). Callers name no type: overload resolution
// prefers the plain function for float and takes the template for every other type.

// Batch mean and biased variance of channel c (two passes: mean, then squared deviations).
template <typename T>
[[gnu::always_inline]] inline void stats_of_channel(const ChannelGeometry& g, const T* x, int64_t c,
                                                    double* mean, double* var) {
  const double M = static_cast<double>(g.per_channel());
  Lanes s, q;
  for_channel_lanes(g, c, [&](int64_t i, int64_t j) { s.v[j] += convert<double>(x[i]); });
  const double mu = s.total() / M;
  for_channel_lanes(g, c, [&](int64_t i, int64_t j) {
    const double d = convert<double>(x[i]) - mu;
    q.v[j] += d * d;
  });
  *mean = mu;
  *var = q.total() / M;
}
ACLGRAD_SIMD_VARIANTS(void, stats_of_channel,
                      (const ChannelGeometry& g, const float* x, int64_t c, double* mean,
                       double* var),
                      (g, x, c, mean, var))

template <typename T>
void channel_stats(const ChannelGeometry& g, const T* x, std::vector<double>& mean,
                   std::vector<double>& var) {
  parallel_chunks(g.C, g.per_channel(), [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      stats_of_channel(g, x, c, &mean[c], &var[c]);
    }
  });
}

// Values of an optional per-channel tensor as doubles (fill when undefined).
std::vector<double> channel_values(const Tensor& t, int64_t C, double fill) {
  if (!t.defined()) return std::vector<double>(C, fill);
  return t.contiguous().view({C}).to_vector<double>();
}

// y = x * scale[c] + shift[c], rows [r0, r1) of S.
template <typename T>
[[gnu::always_inline]] inline void affine_rows(const ChannelGeometry& g, const T* x, T* y,
                                               const double* scale, const double* shift, int64_t r0,
                                               int64_t r1) {
  using C = kernels::compute_t<T>;
  for (int64_t r = r0; r < r1; ++r) {
    const C a = static_cast<C>(scale[r % g.C]), b = static_cast<C>(shift[r % g.C]);
    const T* xr = x + r * g.S;
    T* yr = y + r * g.S;
    for (int64_t i = 0; i < g.S; ++i) yr[i] = convert<T>(convert<C>(xr[i]) * a + b);
  }
}
ACLGRAD_SIMD_VARIANTS(void, affine_rows,
                      (const ChannelGeometry& g, const float* x, float* y, const double* scale,
                       const double* shift, int64_t r0, int64_t r1),
                      (g, x, y, scale, shift, r0, r1))

template <typename T>
void apply_affine(const ChannelGeometry& g, const T* x, T* y, const std::vector<double>& scale,
                  const std::vector<double>& shift) {
  parallel_chunks(g.N * g.C, g.S, [&](int64_t r0, int64_t r1) {
    affine_rows(g, x, y, scale.data(), shift.data(), r0, r1);
  });
}

// Σ g and Σ g (x - mean[c]) of channel c (x̂ = (x - mean) invstd: the caller scales the second).
template <typename T>
[[gnu::always_inline]] inline void grad_sums_of_channel(const ChannelGeometry& g, const T* x,
                                                        const T* gp, int64_t c, double mu,
                                                        double* sum_g, double* sum_gxc) {
  Lanes sg, sgx;
  for_channel_lanes(g, c, [&](int64_t i, int64_t j) {
    const double gv = convert<double>(gp[i]);
    sg.v[j] += gv;
    sgx.v[j] += gv * (convert<double>(x[i]) - mu);
  });
  *sum_g = sg.total();
  *sum_gxc = sgx.total();
}
ACLGRAD_SIMD_VARIANTS(void, grad_sums_of_channel,
                      (const ChannelGeometry& g, const float* x, const float* gp, int64_t c,
                       double mu, double* sum_g, double* sum_gxc),
                      (g, x, gp, c, mu, sum_g, sum_gxc))

// dx = k (g - a - (x - mean) b) per channel, rows [r0, r1) of S (the backward's second pass).
template <typename T>
[[gnu::always_inline]] inline void grad_input_rows(const ChannelGeometry& g, const T* x,
                                                   const T* gp, T* dp, const double* k,
                                                   const double* a, const double* b,
                                                   const double* mean, int64_t r0, int64_t r1) {
  using C = kernels::compute_t<T>;
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t c = r % g.C;
    const C kc = C(k[c]), ac = C(a[c]), bc = C(b[c]), mc = C(mean[c]);
    for (int64_t i = r * g.S; i < (r + 1) * g.S; ++i) {
      dp[i] = convert<T>(kc * (convert<C>(gp[i]) - ac - (convert<C>(x[i]) - mc) * bc));
    }
  }
}
ACLGRAD_SIMD_VARIANTS(void, grad_input_rows,
                      (const ChannelGeometry& g, const float* x, const float* gp, float* dp,
                       const double* k, const double* a, const double* b, const double* mean,
                       int64_t r0, int64_t r1),
                      (g, x, gp, dp, k, a, b, mean, r0, r1))

// Dims reduced for per-channel sums: all but 1.
Shape reduced_dims(int64_t ndim) {
  Shape d{0};
  for (int64_t i = 2; i < ndim; ++i) d.push_back(i);
  return d;
}

Shape channel_shape(int64_t C, int64_t ndim) {
  Shape s(ndim, 1);
  s[1] = C;
  return s;
}

// y = batch_norm(x, weight, bias). Keeps the per-channel mean and 1/sqrt(var + eps) that the
// forward used (batch statistics in training, running ones in eval).
struct BatchNormBackward final : Node {
  BatchNormBackward(bool training, double eps, std::vector<double> mean, std::vector<double> invstd)
      : Node("BatchNormBackward"),
        training(training),
        eps(eps),
        mean(std::move(mean)),
        invstd(std::move(invstd)) {}
  bool training;
  double eps;
  std::vector<double> mean, invstd;  // [C]
  size_t x = 0, w = 0;
  bool has_weight = false;
  bool mixed = false;  // float32 weight or bias beside a 16-bit input

  tensor_list apply(tensor_list&& grads) override {
    return GradMode::is_enabled() ? composed(grads[0]) : fused(grads[0]);
  }

  // The formulas of batch_norm.h with one pass for the sums Σg, Σg x̂ and one for dx.
  tensor_list fused(const Tensor& g_in) {
    // dx element i reads g element i only (after the sums pass): it may take g's buffer.
    Tensor dx = needs_grad(0) ? autograd::gradient_buffer(g_in) : Tensor();
    const Tensor xv = saved(x).contiguous(), g = g_in.contiguous();
    const ChannelGeometry geo = geometry_of(xv);
    const std::vector<double> wv =
        has_weight ? channel_values(saved(w), geo.C, 1) : std::vector<double>(geo.C, 1.0);
    std::vector<double> sum_g(geo.C), sum_gx(geo.C);
    dispatch_floating_dtype(xv.dtype(), "batch_norm", [&]<typename T>() {
      const T* xp = xv.data_ptr<T>();
      const T* gp = g.data_ptr<T>();
      parallel_chunks(geo.C, geo.per_channel(), [&](int64_t c0, int64_t c1) {
        for (int64_t c = c0; c < c1; ++c) {
          double sgx = 0;  // Σ g (x - mean); Σ g x̂ = sgx invstd
          grad_sums_of_channel(geo, xp, gp, c, mean[c], &sum_g[c], &sgx);
          sum_gx[c] = sgx * invstd[c];
        }
      });
      if (!dx.defined()) return;
      // dx = k (g - a - (x - mean) b): k = w invstd; in training a = Σg / M (the mean term) and
      // b = invstd Σ(g x̂) / M (the variance term x̂ Σ(g x̂) / M on raw x); a = b = 0 in eval.
      const double M = static_cast<double>(geo.per_channel());
      std::vector<double> k(geo.C), a(geo.C, 0.0), b(geo.C, 0.0);
      for (int64_t c = 0; c < geo.C; ++c) {
        k[c] = wv[c] * invstd[c];
        if (training) a[c] = sum_g[c] / M, b[c] = invstd[c] * sum_gx[c] / M;
      }
      T* dp = dx.data_ptr<T>();
      parallel_chunks(geo.N * geo.C, geo.S, [&](int64_t r0, int64_t r1) {
        grad_input_rows(geo, xp, gp, dp, k.data(), a.data(), b.data(), mean.data(), r0, r1);
      });
    });
    // In the parameters' own dtypes (float32 beside a 16-bit input), from the double sums.
    return {dx, needs_grad(1) ? from_vector(sum_gx, {geo.C}, input_meta(1).dtype) : Tensor(),
            needs_grad(2) ? from_vector(sum_g, {geo.C}, input_meta(2).dtype) : Tensor()};
  }

  // Same formulas from differentiable ops; in training the statistics are recomputed from x so
  // that their dependence on x is differentiated too.
  tensor_list composed(const Tensor& g_in) {
    // A 16-bit input with float32 parameters: the formulas run in float32 (recorded casts), the
    // input gradient is cast back.
    const Dtype x_dtype = input_meta(0).dtype;
    const Tensor xv = mixed ? cast(saved(x), Dtype::Float32) : saved(x);
    const Tensor g = mixed ? cast(g_in, Dtype::Float32) : g_in;
    const int64_t nd = xv.dim(), C = xv.size(1);
    const Shape red = reduced_dims(nd), cs = channel_shape(C, nd);
    Tensor xc, inv;  // x - mean, 1/sqrt(var + eps): [N, C, *], [1, C, 1...]
    if (training) {
      xc = sub(xv, mean_of(xv, red));
      inv = reciprocal(sqrt(add(mean_of(mul(xc, xc), red), eps)));
    } else {
      xc = sub(xv, from_vector(mean, cs, xv.dtype()));
      inv = from_vector(invstd, cs, xv.dtype());
    }
    const Tensor xhat = mul(xc, inv);
    Tensor dx;
    if (needs_grad(0)) {
      const Tensor gw = has_weight ? mul(g, reshape(saved(w), cs)) : g;
      dx = training
               ? mul(sub(sub(gw, mean_of(gw, red)), mul(xhat, mean_of(mul(gw, xhat), red))), inv)
               : mul(gw, inv);
    }
    auto in_dtype = [](const Tensor& t, Dtype d) { return t.defined() ? cast(t, d) : t; };
    return {in_dtype(dx, x_dtype),
            needs_grad(1) ? in_dtype(sum(mul(g, xhat), red), input_meta(1).dtype) : Tensor(),
            needs_grad(2) ? in_dtype(sum(g, red), input_meta(2).dtype) : Tensor()};
  }

  static Tensor mean_of(const Tensor& t, const Shape& red) { return aclgrad::mean(t, red, true); }
};

void check_channel_param(const char* name, const Tensor& t, const Tensor& x, bool vector) {
  if (!t.defined()) return;
  const int64_t C = x.size(1);
  check<ShapeError>(t.numel() == C, "batch_norm: ", name, " should contain ", C, " elements not ",
                    t.numel());
  check<ShapeError>(!vector || t.dim() == 1, "batch_norm: expected ", name, " of shape [", C,
                    "], got shape ", t.sizes());
  check<DtypeError>(t.is_floating_point(), "batch_norm: expected ", name,
                    " to have a floating point dtype, got ", t.dtype());
  // A 16-bit input may come with float32 parameters (PyTorch's mixed-precision batch norm).
  const bool mixed =
      t.dtype() == Dtype::Float32 && (x.dtype() == Dtype::BFloat16 || x.dtype() == Dtype::Float16);
  check<DtypeError>(
      !vector || t.dtype() == x.dtype() || mixed, "batch_norm: expected ", name,
      " to have the input's dtype ", x.dtype(),
      x.dtype() == Dtype::BFloat16 || x.dtype() == Dtype::Float16 ? " or float32" : "", ", got ",
      t.dtype());
  check(vector || !t.requires_grad(), "batch_norm: ", name,
        " must not require grad (running statistics are updated in place, never differentiated)");
}

}  // namespace

Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight, const Tensor& bias, bool training, double momentum,
                  double eps) {
  check<ShapeError>(x.dim() >= 2, "batch_norm: expected input with at least 2 dims [N, C, *], got ",
                    "input of shape ", x.sizes());
  check<DtypeError>(x.is_floating_point(), "batch_norm: expected a floating point dtype, got ",
                    x.dtype());
  check_channel_param("running_mean", running_mean, x, false);
  check_channel_param("running_var", running_var, x, false);
  check_channel_param("weight", weight, x, true);
  check_channel_param("bias", bias, x, true);
  check(training || (running_mean.defined() && running_var.defined()),
        "batch_norm: ", running_mean.defined() ? "running_var" : "running_mean",
        " must be defined in evaluation mode");
  check(running_mean.defined() == running_var.defined(),
        "batch_norm: running_mean and running_var must both be defined or both be undefined");

  const Tensor xc = x.contiguous();
  const ChannelGeometry geo = geometry_of(xc);
  const int64_t M = geo.per_channel();
  check(!training || M != 1, "batch_norm: expected more than 1 value per channel when training, ",
        "got input of shape ", x.sizes());

  std::vector<double> mean(geo.C), var(geo.C);
  if (training) {
    dispatch_floating_dtype(x.dtype(), "batch_norm", [&]<typename T>() {
      channel_stats<T>(geo, xc.data_ptr<T>(), mean, var);
    });
    if (running_mean.defined() && M > 0) {
      const std::vector<double> rm = channel_values(running_mean, geo.C, 0);
      const std::vector<double> rv = channel_values(running_var, geo.C, 0);
      std::vector<double> new_m(geo.C), new_v(geo.C);
      const double unbias = static_cast<double>(M) / static_cast<double>(M - 1);
      for (int64_t c = 0; c < geo.C; ++c) {
        new_m[c] = (1 - momentum) * rm[c] + momentum * mean[c];
        new_v[c] = (1 - momentum) * rv[c] + momentum * var[c] * unbias;
      }
      running_mean.copy_(from_vector(new_m, running_mean.sizes(), Dtype::Float64));  // bumps
      running_var.copy_(from_vector(new_v, running_var.sizes(), Dtype::Float64));    // version
    }
  } else {
    mean = channel_values(running_mean, geo.C, 0);
    var = channel_values(running_var, geo.C, 1);
  }

  // y = x * scale + shift, scale = w invstd, shift = b - mean scale.
  std::vector<double> invstd(geo.C), scale(geo.C), shift(geo.C);
  const std::vector<double> wv = channel_values(weight, geo.C, 1);
  const std::vector<double> bv = channel_values(bias, geo.C, 0);
  for (int64_t c = 0; c < geo.C; ++c) {
    invstd[c] = 1 / std::sqrt(var[c] + eps);
    scale[c] = wv[c] * invstd[c];
    shift[c] = bv[c] - mean[c] * scale[c];
  }
  Tensor y = empty(x.sizes(), x.dtype());
  dispatch_floating_dtype(x.dtype(), "batch_norm", [&]<typename T>() {
    apply_affine<T>(geo, xc.data_ptr<T>(), y.data_ptr<T>(), scale, shift);
  });

  if (auto node = make_node<BatchNormBackward>({x, weight, bias}, training, eps, std::move(mean),
                                               std::move(invstd))) {
    node->x = node->save(x);
    node->mixed = (weight.defined() && weight.dtype() != x.dtype()) ||
                  (bias.defined() && bias.dtype() != x.dtype());
    if (weight.defined() && node->needs_grad(0)) {
      node->has_weight = true;
      node->w = node->save(weight);
    }
    node->set_history(y);
  }
  return y;
}

}  // namespace aclgrad
