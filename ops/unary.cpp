// Unary elementwise ops, clamp, masks and masked_fill: forward kernel, then its backward node.
#include <cmath>

#include "autograd/function.h"
#include "ops/autocast.h"
#include "ops/elementwise.h"
#include "ops/kernels.h"

namespace aclgrad {

using autograd::make_node;
using autograd::Node;
using autograd::tensor_list;
using kernels::map_predicate;
using kernels::map_unary;

namespace {

// y = 1 / x: dy/dx = -1 / x^2 = -y^2.
struct ReciprocalBackward final : Node {
  ReciprocalBackward() : Node("ReciprocalBackward") {}
  size_t y = 0;
  tensor_list apply(tensor_list&& grads) override {
    const Tensor yv = saved(y);
    return {neg(mul(grads[0], mul(yv, yv)))};
  }
};

// y = exp(x): dy/dx = y.
struct ExpBackward final : Node {
  ExpBackward() : Node("ExpBackward") {}
  size_t y = 0;
  tensor_list apply(tensor_list&& grads) override { return {mul(grads[0], saved(y))}; }
};

// y = log(x): dy/dx = 1 / x.
struct LogBackward final : Node {
  LogBackward() : Node("LogBackward") {}
  size_t x = 0;
  tensor_list apply(tensor_list&& grads) override { return {div(grads[0], saved(x))}; }
};

// y = sqrt(x): dy/dx = 1 / (2 y).
struct SqrtBackward final : Node {
  SqrtBackward() : Node("SqrtBackward") {}
  size_t y = 0;
  tensor_list apply(tensor_list&& grads) override { return {div(grads[0], mul(saved(y), 2))}; }
};

// y = |x|: dy/dx = sign(x).
struct AbsBackward final : Node {
  AbsBackward() : Node("AbsBackward") {}
  size_t x = 0;
  tensor_list apply(tensor_list&& grads) override { return {mul(grads[0], sign(saved(x)))}; }
};

// y = sign(x): dy/dx = 0.
struct SignBackward final : Node {
  SignBackward() : Node("SignBackward") {}
  tensor_list apply(tensor_list&&) override { return {zeros(input_sizes(0), input_meta(0).dtype)}; }
};

// y = clamp(x, lo, hi): dy/dx = 1 where lo <= x <= hi, else 0.
struct ClampBackward final : Node {
  ClampBackward(std::optional<Scalar> lo, std::optional<Scalar> hi)
      : Node("ClampBackward"), lo(lo), hi(hi) {}
  std::optional<Scalar> lo, hi;
  size_t x = 0;
  tensor_list apply(tensor_list&& grads) override {
    const Tensor xv = saved(x);
    const Tensor outside = dispatch_floating_dtype(xv.dtype(), "clamp", [&]<typename T>() {
      using C = kernels::compute_t<T>;
      const C l = lo ? lo->to<C>() : -INFINITY, h = hi ? hi->to<C>() : INFINITY;
      return map_predicate("clamp", xv, [l, h](auto v) { return !(v >= l && v <= h); });
    });
    return {masked_fill(grads[0], outside, 0)};
  }
};

// y = masked_fill(x, mask, v): dy/dx = 0 where mask, else 1. The mask has no gradient.
struct MaskedFillBackward final : Node {
  explicit MaskedFillBackward(Tensor mask) : Node("MaskedFillBackward"), mask(std::move(mask)) {}
  Tensor mask;  // Bool, no history
  tensor_list apply(tensor_list&& grads) override { return {masked_fill(grads[0], mask, 0)}; }
  void release_state() override { mask = Tensor(); }
};

}  // namespace

Tensor reciprocal(const Tensor& x) {
  Tensor out = map_unary("reciprocal", x, [](auto v) { return 1 / v; });
  if (auto node = make_node<ReciprocalBackward>({x})) {
    node->set_history(out);
    node->y = node->save(out);
  }
  return out;
}

Tensor exp(const Tensor& x) {
  Tensor out = map_unary("exp", x, [](auto v) { return std::exp(v); });
  if (auto node = make_node<ExpBackward>({x})) {
    node->set_history(out);
    node->y = node->save(out);
  }
  return out;
}

Tensor log(const Tensor& x) {
  Tensor out = map_unary("log", x, [](auto v) { return std::log(v); });
  if (auto node = make_node<LogBackward>({x})) {
    node->x = node->save(x);
    node->set_history(out);
  }
  return out;
}

Tensor sqrt(const Tensor& x) {
  Tensor out = map_unary("sqrt", x, [](auto v) { return std::sqrt(v); });
  if (auto node = make_node<SqrtBackward>({x})) {
    node->set_history(out);
    node->y = node->save(out);
  }
  return out;
}

Tensor abs(const Tensor& x) {
  Tensor out = map_unary("abs", x, [](auto v) { return std::abs(v); });
  if (auto node = make_node<AbsBackward>({x})) {
    node->x = node->save(x);
    node->set_history(out);
  }
  return out;
}

Tensor sign(const Tensor& x) {
  Tensor out = map_unary("sign", x, [](auto v) -> decltype(v) {
    if (std::isnan(v)) return v;
    return v > 0 ? 1 : (v < 0 ? -1 : 0);
  });
  if (auto node = make_node<SignBackward>({x})) node->set_history(out);
  return out;
}

Tensor clamp(const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max) {
  check(min.has_value() || max.has_value(), "clamp: at least one of min and max must be given");
  Tensor out = dispatch_floating_dtype(x.dtype(), "clamp", [&]<typename T>() {
    using C = kernels::compute_t<T>;
    const C lo = min ? min->to<C>() : -INFINITY, hi = max ? max->to<C>() : INFINITY;
    // NaN stays NaN (comparisons with NaN are false); min wins when min > max, like PyTorch.
    return map_unary("clamp", x, [lo, hi](auto v) { return v < lo ? lo : (v > hi ? hi : v); });
  });
  if (auto node = make_node<ClampBackward>({x}, min, max)) {
    node->x = node->save(x);
    node->set_history(out);
  }
  return out;
}

Tensor clamp_min(const Tensor& x, Scalar min) {
  return clamp(x, min, std::nullopt);
}

Tensor clamp_max(const Tensor& x, Scalar max) {
  return clamp(x, std::nullopt, max);
}

// ---- masks ----

namespace {
template <typename Pred>
Tensor compare_scalar(const char* op, const Tensor& a, Scalar b, Pred pred) {
  return dispatch_floating_dtype(a.dtype(), op, [&]<typename T>() {
    const auto s = b.to<kernels::compute_t<T>>();
    return map_predicate(op, a, [s, pred](auto v) { return pred(v, s); });
  });
}
}  // namespace

Tensor gt(const Tensor& a, Scalar b) {
  return compare_scalar("gt", a, b, [](auto u, auto v) { return u > v; });
}
Tensor ge(const Tensor& a, Scalar b) {
  return compare_scalar("ge", a, b, [](auto u, auto v) { return u >= v; });
}
Tensor lt(const Tensor& a, Scalar b) {
  return compare_scalar("lt", a, b, [](auto u, auto v) { return u < v; });
}
Tensor le(const Tensor& a, Scalar b) {
  return compare_scalar("le", a, b, [](auto u, auto v) { return u <= v; });
}
Tensor eq(const Tensor& a, Scalar b) {
  return compare_scalar("eq", a, b, [](auto u, auto v) { return u == v; });
}
Tensor gt(const Tensor& a, const Tensor& b) {
  if (autocast::is_active()) {
    const autocast::OpInputs in(AutocastOp::kGt, {a, b});
    return gt(in[0], in[1]);
  }
  return map_predicate("gt", a, b, [](auto u, auto v) { return u > v; });
}
Tensor lt(const Tensor& a, const Tensor& b) {
  if (autocast::is_active()) {
    const autocast::OpInputs in(AutocastOp::kLt, {a, b});
    return lt(in[0], in[1]);
  }
  return map_predicate("lt", a, b, [](auto u, auto v) { return u < v; });
}
Tensor eq(const Tensor& a, const Tensor& b) {
  if (autocast::is_active()) {
    const autocast::OpInputs in(AutocastOp::kEq, {a, b});
    return eq(in[0], in[1]);
  }
  return map_predicate("eq", a, b, [](auto u, auto v) { return u == v; });
}

Tensor masked_fill(const Tensor& x, const Tensor& mask, Scalar value) {
  check<DtypeError>(mask.dtype() == Dtype::Bool, "masked_fill: expected a bool mask, got ",
                    mask.dtype());
  Tensor out = empty(x.sizes(), x.dtype());
  dispatch_floating_dtype(x.dtype(), "masked_fill", [&]<typename T>() {
    const T v = value.to<T>();
    map_elementwise<T, T, bool>(out, {x, mask},
                                [v](T u, bool m) { return kernels::select(m, v, u); });
  });
  if (auto node = make_node<MaskedFillBackward>({x}, mask)) node->set_history(out);
  return out;
}

}  // namespace aclgrad
