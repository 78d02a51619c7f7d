// batch_norm: per-channel statistics and normalisation kernels, the running-statistics update,
// and the backward node (a fused kernel for first derivatives; differentiable ops under
// create_graph).
//
// The kernels (ops/batch_norm_kernels) see x as contiguous [N, C, S]; statistics accumulate in
// double.
#include "ops/batch_norm.h"

#include <cmath>
#include <vector>

#include "autograd/function.h"
#include "ops/cast.h"
#include "ops/elementwise.h"
#include "ops/batch_norm_kernels.h"
#include "ops/reduction.h"
#include "ops/shape.h"
#include "tensor/creation.h"

namespace aclgrad {

using autograd::make_node;
using autograd::Node;
using autograd::tensor_list;
using batch_norm_kernels::ChannelGeometry;
using batch_norm_kernels::geometry_of;

namespace {

// Values of an optional per-channel tensor as doubles (fill when undefined).
std::vector<double> channel_values(const Tensor& t, int64_t C, double fill) {
  if (!t.defined()) return std::vector<double>(C, fill);
  return t.contiguous().view({C}).to_vector<double>();
}

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
    batch_norm_kernels::grad_sums(xv, g, geo, mean, invstd, sum_g, sum_gx);
    if (dx.defined()) {
      // dx = k (g - a - (x - mean) b): k = w invstd; in training a = Σg / M (the mean term) and
      // b = invstd Σ(g x̂) / M (the variance term x̂ Σ(g x̂) / M on raw x); a = b = 0 in eval.
      const double M = static_cast<double>(geo.per_channel());
      std::vector<double> k(geo.C), a(geo.C, 0.0), b(geo.C, 0.0);
      for (int64_t c = 0; c < geo.C; ++c) {
        k[c] = wv[c] * invstd[c];
        if (training) a[c] = sum_g[c] / M, b[c] = invstd[c] * sum_gx[c] / M;
      }
      batch_norm_kernels::grad_input(xv, g, dx, geo, k, a, b, mean);
    }
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
    batch_norm_kernels::channel_stats(xc, geo, mean, var);
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
  batch_norm_kernels::apply_affine(xc, y, geo, scale, shift);

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
