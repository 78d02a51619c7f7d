// Activations: forward kernel and backward node side by side.
//
// relu, leaky_relu, sigmoid, tanh: backward composed of differentiable ops.
// gelu, softplus: y = f(x) with a fused backward kernel g * f'(x). That backward is itself an op
// (fused_backward) whose node knows f'' and runs raw kernels, so it supports exactly one more
// derivative. A new activation of this kind only needs a struct with f' and f'' (see Gelu).
#include <cmath>
#include <string>

#include "autograd/function.h"
#include "ops/activation.h"
#include "ops/elementwise.h"
#include "ops/kernels.h"

namespace aclgrad {

using autograd::make_node;
using autograd::Node;
using autograd::tensor_list;
using kernels::map_binary;
using kernels::map_ternary;
using kernels::map_unary;

namespace {

// ---- the fused-backward pattern ----
// D provides: kName (node of y = f(x), e.g. "GeluBackward"), kBackwardName (node of the fused
// backward op), d1(x) = f'(x) and d2(x) = f''(x), templated on the compute type.

template <typename D>
Tensor fused_backward(const Tensor& g, const Tensor& x, const D& d);

// z = g * f'(x): dz/dg = f'(x), dz/dx = g * f''(x). Raw kernels: no further derivative.
template <typename D>
struct FusedBackwardBackward final : Node {
  explicit FusedBackwardBackward(const D& d)
      : Node(D::kBackwardName, /*supports_double_backward=*/false), d(d) {}
  D d;
  size_t g = 0, x = 0;
  tensor_list apply(tensor_list&& grads) override {
    const Tensor& gg = grads[0];
    const Tensor xv = saved(x);
    const D dd = d;
    Tensor dg, dx;
    if (needs_grad(0)) {
      dg = map_binary(D::kBackwardName, gg, xv, [dd](auto a, auto v) { return a * dd.d1(v); });
    }
    if (needs_grad(1)) {
      dx = map_ternary(D::kBackwardName, gg, saved(g), xv,
                       [dd](auto a, auto b, auto v) { return a * b * dd.d2(v); });
    }
    return {dg, dx};
  }
};

template <typename D>
Tensor fused_backward(const Tensor& g, const Tensor& x, const D& d) {
  Tensor out = map_binary(D::kName, g, x, [d](auto a, auto v) { return a * d.d1(v); });
  if (auto node = make_node<FusedBackwardBackward<D>>({g, x}, d)) {
    if (node->needs_grad(1)) node->g = node->save(g);
    node->x = node->save(x);
    node->set_history(out);
  }
  return out;
}

template <typename D>
struct FusedActivationBackward final : Node {
  explicit FusedActivationBackward(const D& d) : Node(D::kName), d(d) {}
  D d;
  size_t x = 0;
  tensor_list apply(tensor_list&& grads) override {
    return {fused_backward(grads[0], saved(x), d)};
  }
};

// y = f(x) computed by `forward`, recorded with the fused backward of D.
template <typename D, typename F>
Tensor fused_activation(const char* op, const Tensor& x, const D& d, F forward) {
  Tensor out = map_unary(op, x, forward);
  if (auto node = make_node<FusedActivationBackward<D>>({x}, d)) {
    node->x = node->save(x);
    node->set_history(out);
  }
  return out;
}

constexpr double kSqrt2OverPi = 0.79788456080286535588;  // sqrt(2 / pi)
constexpr double kInvSqrt2Pi = 0.39894228040143267794;   // 1 / sqrt(2 pi)
constexpr double kInvSqrt2 = 0.70710678118654752440;     // 1 / sqrt(2)
constexpr double kGeluTanhC = 0.044715;

// gelu(x) = x Phi(x): f' = Phi + x phi, f'' = phi (2 - x^2), phi the standard normal density.
struct GeluErf {
  static constexpr const char* kName = "GeluBackward";
  static constexpr const char* kBackwardName = "GeluBackwardBackward";
  template <typename C>
  C d1(C x) const {
    const C cdf = C(0.5) * (1 + std::erf(x * C(kInvSqrt2)));
    return cdf + x * C(kInvSqrt2Pi) * std::exp(C(-0.5) * x * x);
  }
  template <typename C>
  C d2(C x) const {
    return C(kInvSqrt2Pi) * std::exp(C(-0.5) * x * x) * (2 - x * x);
  }
};

// gelu_tanh(x) = x/2 (1 + t), t = tanh(u), u = k (x + c x^3), s = 1 - t^2:
// f' = (1 + t)/2 + x s u'/2, f'' = s (u' + x (u'' - 2 t u'^2) / 2), u' = k (1 + 3 c x^2),
// u'' = 6 k c x.
struct GeluTanh {
  static constexpr const char* kName = "GeluBackward";
  static constexpr const char* kBackwardName = "GeluBackwardBackward";
  template <typename C>
  C d1(C x) const {
    const C k = C(kSqrt2OverPi), c = C(kGeluTanhC);
    const C t = std::tanh(k * (x + c * x * x * x));
    const C du = k * (1 + 3 * c * x * x);
    return C(0.5) * (1 + t) + C(0.5) * x * (1 - t * t) * du;
  }
  template <typename C>
  C d2(C x) const {
    const C k = C(kSqrt2OverPi), c = C(kGeluTanhC);
    const C t = std::tanh(k * (x + c * x * x * x));
    const C du = k * (1 + 3 * c * x * x), ddu = 6 * k * c * x;
    return (1 - t * t) * (du + C(0.5) * x * (ddu - 2 * t * du * du));
  }
};

// softplus(x) = log(1 + exp(b x)) / b (x where b x > threshold): f' = sigmoid(b x) (1 above the
// threshold), f'' = b sigmoid(b x) (1 - sigmoid(b x)) (0 above).
struct Softplus {
  static constexpr const char* kName = "SoftplusBackward";
  static constexpr const char* kBackwardName = "SoftplusBackwardBackward";
  double beta, threshold;
  template <typename C>
  C d1(C x) const {
    const C bx = x * C(beta);
    if (bx > C(threshold)) return 1;
    const C z = std::exp(bx);
    return z / (z + 1);
  }
  template <typename C>
  C d2(C x) const {
    const C bx = x * C(beta);
    if (bx > C(threshold)) return 0;
    const C z = std::exp(bx), s = z / (z + 1);
    return C(beta) * s * (1 - s);
  }
};

// ---- composed backwards ----

// dx = y <= 0 ? +0 : g for 16-bit T, on the bits (no conversion; what select gives): y <= 0 is
// a zero, or a negative that is not NaN (magnitude at most the infinity pattern). Plain uint16_t
// loops, so the contiguous one vectorises.
template <typename T>
void relu_backward16(const Tensor& dx, const Tensor& g, const Tensor& y) {
  constexpr uint16_t kInf = std::is_same_v<T, Half> ? 0x7c00 : 0x7f80;
  auto kept = [](uint16_t a, uint16_t v) -> uint16_t {
    const uint16_t magnitude = v & 0x7fffu;
    const bool at_most_zero = magnitude == 0 || ((v & 0x8000u) && magnitude <= kInf);
    return at_most_zero ? uint16_t{0} : a;
  };
  for_each_strided(
      dx, {g, y},
      [&kept](int64_t n, char* o, const char* const* in, const int64_t* s) {
        if (s[0] == 2 && s[1] == 2 && s[2] == 2) {
          auto* d = reinterpret_cast<uint16_t*>(o);
          const auto* a = reinterpret_cast<const uint16_t*>(in[0]);
          const auto* v = reinterpret_cast<const uint16_t*>(in[1]);
          for (int64_t i = 0; i < n; ++i) d[i] = kept(a[i], v[i]);
        } else {
          for (int64_t i = 0; i < n; ++i) {
            *reinterpret_cast<uint16_t*>(o + i * s[0]) =
                kept(*reinterpret_cast<const uint16_t*>(in[0] + i * s[1]),
                     *reinterpret_cast<const uint16_t*>(in[1] + i * s[2]));
          }
        }
      },
      Parallel::Yes);
}

// y = relu(x): dy/dx = 1 where y > 0. Differentiable ops under create_graph; otherwise one fused
// pass with the same values (masked_fill(g, y <= 0, 0) without the bool mask in between).
struct ReluBackward final : Node {
  ReluBackward() : Node("ReluBackward") {}
  size_t y = 0;
  tensor_list apply(tensor_list&& grads) override {
    const Tensor& g = grads[0];
    const Tensor yv = saved(y);
    if (GradMode::is_enabled()) return {masked_fill(g, le(yv, 0), 0)};
    kernels::check_same_dtype("relu_backward", g, yv);
    Tensor dx = autograd::gradient_buffer(g);  // (g's own buffer when no one else sees it)
    dispatch_floating_dtype(g.dtype(), "relu_backward", [&]<typename T>() {
      using C = kernels::compute_t<T>;
      const T zero = convert<T>(0.0);
      if constexpr (kernels::is_16bit_v<T>) {
        relu_backward16<T>(dx, g, yv);
      } else {
        map_elementwise<T, T, T>(dx, {g, yv}, [zero](T a, T v) {
          return kernels::select(convert<C>(v) <= C(0), zero, a);
        });
      }
    });
    return {dx};
  }
};

// y = leaky_relu(x): dy/dx = 1 where x > 0, else the slope.
struct LeakyReluBackward final : Node {
  explicit LeakyReluBackward(double slope) : Node("LeakyReluBackward"), slope(slope) {}
  double slope;
  size_t x = 0;
  tensor_list apply(tensor_list&& grads) override {
    const double s = slope;
    const Tensor factor = map_unary("leaky_relu", saved(x), [s](auto v) {
      using C = decltype(v);
      return kernels::select(v > 0, C(1), static_cast<C>(s));
    });
    return {mul(grads[0], factor)};
  }
};

// y = sigmoid(x): dy/dx = y (1 - y).
struct SigmoidBackward final : Node {
  SigmoidBackward() : Node("SigmoidBackward") {}
  size_t y = 0;
  tensor_list apply(tensor_list&& grads) override {
    const Tensor yv = saved(y);
    return {mul(grads[0], mul(yv, rsub(yv, 1)))};
  }
};

// y = tanh(x): dy/dx = 1 - y^2.
struct TanhBackward final : Node {
  TanhBackward() : Node("TanhBackward") {}
  size_t y = 0;
  tensor_list apply(tensor_list&& grads) override {
    const Tensor yv = saved(y);
    return {mul(grads[0], rsub(mul(yv, yv), 1))};
  }
};

}  // namespace

Tensor relu(const Tensor& x) {
  Tensor out = map_unary("relu", x, [](auto v) -> decltype(v) { return v < 0 ? 0 : v; });
  if (auto node = make_node<ReluBackward>({x})) {
    node->set_history(out);
    node->y = node->save(out);
  }
  return out;
}

Tensor leaky_relu(const Tensor& x, double negative_slope) {
  Tensor out = map_unary("leaky_relu", x, [negative_slope](auto v) {
    return kernels::select(v > 0, v, v * static_cast<decltype(v)>(negative_slope));
  });
  if (auto node = make_node<LeakyReluBackward>({x}, negative_slope)) {
    node->x = node->save(x);
    node->set_history(out);
  }
  return out;
}

Tensor sigmoid(const Tensor& x) {
  Tensor out = map_unary("sigmoid", x, [](auto v) {
    // e = exp(-|v|) never overflows: 1 / (1 + e) for v >= 0, e / (1 + e) for v < 0.
    const auto e = std::exp(-std::abs(v));
    const auto r = 1 / (1 + e);
    return kernels::select(v >= 0, r, e * r);
  });
  if (auto node = make_node<SigmoidBackward>({x})) {
    node->set_history(out);
    node->y = node->save(out);
  }
  return out;
}

Tensor tanh(const Tensor& x) {
  Tensor out = map_unary("tanh", x, [](auto v) { return std::tanh(v); });
  if (auto node = make_node<TanhBackward>({x})) {
    node->set_history(out);
    node->y = node->save(out);
  }
  return out;
}

Tensor gelu(const Tensor& x, std::string_view approximate) {
  check(approximate == "none" || approximate == "tanh",
        "gelu: approximate must be \"none\" or \"tanh\", got \"", std::string(approximate), "\"");
  if (approximate == "tanh") {
    return fused_activation("gelu", x, GeluTanh{}, [](auto v) -> decltype(v) {
      using C = decltype(v);
      const C k = C(kSqrt2OverPi), c = C(kGeluTanhC);
      return C(0.5) * v * (1 + std::tanh(k * (v + c * v * v * v)));
    });
  }
  return fused_activation("gelu", x, GeluErf{}, [](auto v) -> decltype(v) {
    using C = decltype(v);
    return C(0.5) * v * (1 + std::erf(v * C(kInvSqrt2)));
  });
}

Tensor softplus(const Tensor& x, double beta, double threshold) {
  return fused_activation("softplus", x, Softplus{beta, threshold},
                          [beta, threshold](auto v) -> decltype(v) {
                            using C = decltype(v);
                            const C bv = v * C(beta);
                            return bv > C(threshold) ? v : std::log1p(std::exp(bv)) / C(beta);
                          });
}

}  // namespace aclgrad
