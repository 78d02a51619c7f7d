// Binary elementwise ops (tensor-tensor with broadcasting, tensor-scalar): forward kernel, then
// the backward node next to it. Gradients of broadcast operands are summed back with sum_to().
#include <cmath>

#include "autograd/function.h"
#include "ops/autocast.h"
#include "ops/elementwise.h"
#include "ops/kernels.h"
#include "ops/reduction.h"

namespace aclgrad {

using autograd::make_node;
using autograd::Node;
using autograd::tensor_list;
using kernels::map_binary;
using kernels::map_unary;

// ---------------------------------------------------------------------------------------------
// add / sub: y = a ± b. dy/da = 1, dy/db = ±1.

namespace {
struct AddBackward final : Node {
  AddBackward() : Node("AddBackward") {}
  tensor_list apply(tensor_list&& grads) override {
    const Tensor& g = grads[0];
    return {needs_grad(0) ? sum_to(g, input_sizes(0)) : Tensor(),
            needs_grad(1) ? sum_to(g, input_sizes(1)) : Tensor()};
  }
};
struct SubBackward final : Node {
  SubBackward() : Node("SubBackward") {}
  tensor_list apply(tensor_list&& grads) override {
    const Tensor& g = grads[0];
    return {needs_grad(0) ? sum_to(g, input_sizes(0)) : Tensor(),
            needs_grad(1) ? neg(sum_to(g, input_sizes(1))) : Tensor()};
  }
};
}  // namespace

Tensor add(const Tensor& a, const Tensor& b) {
  if (autocast::is_active()) {
    const autocast::OpInputs in(AutocastOp::kAdd, {a, b});
    return add(in[0], in[1]);
  }
  Tensor out = map_binary("add", a, b, [](auto u, auto v) { return u + v; });
  if (auto node = make_node<AddBackward>({a, b})) node->set_history(out);
  return out;
}

Tensor sub(const Tensor& a, const Tensor& b) {
  if (autocast::is_active()) {
    const autocast::OpInputs in(AutocastOp::kSub, {a, b});
    return sub(in[0], in[1]);
  }
  Tensor out = map_binary("sub", a, b, [](auto u, auto v) { return u - v; });
  if (auto node = make_node<SubBackward>({a, b})) node->set_history(out);
  return out;
}

// ---------------------------------------------------------------------------------------------
// mul: y = a * b. dy/da = b, dy/db = a.

namespace {
struct MulBackward final : Node {
  MulBackward() : Node("MulBackward") {}
  size_t a = 0, b = 0;
  tensor_list apply(tensor_list&& grads) override {
    const Tensor& g = grads[0];
    return {needs_grad(0) ? sum_to(mul(g, saved(b)), input_sizes(0)) : Tensor(),
            needs_grad(1) ? sum_to(mul(g, saved(a)), input_sizes(1)) : Tensor()};
  }
};
}  // namespace

Tensor mul(const Tensor& a, const Tensor& b) {
  if (autocast::is_active()) {
    const autocast::OpInputs in(AutocastOp::kMul, {a, b});
    return mul(in[0], in[1]);
  }
  Tensor out = map_binary("mul", a, b, [](auto u, auto v) { return u * v; });
  if (auto node = make_node<MulBackward>({a, b})) {
    if (node->needs_grad(0)) node->b = node->save(b);
    if (node->needs_grad(1)) node->a = node->save(a);
    node->set_history(out);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// div: y = a / b. dy/da = 1 / b, dy/db = -a / b^2.

namespace {
struct DivBackward final : Node {
  DivBackward() : Node("DivBackward") {}
  size_t a = 0, b = 0;
  tensor_list apply(tensor_list&& grads) override {
    const Tensor& g = grads[0];
    const Tensor bv = saved(b);
    Tensor ga, gb;
    if (needs_grad(0)) ga = sum_to(div(g, bv), input_sizes(0));
    if (needs_grad(1)) gb = neg(sum_to(div(mul(g, saved(a)), mul(bv, bv)), input_sizes(1)));
    return {ga, gb};
  }
};
}  // namespace

Tensor div(const Tensor& a, const Tensor& b) {
  if (autocast::is_active()) {
    const autocast::OpInputs in(AutocastOp::kDiv, {a, b});
    return div(in[0], in[1]);
  }
  Tensor out = map_binary("div", a, b, [](auto u, auto v) { return u / v; });
  if (auto node = make_node<DivBackward>({a, b})) {
    node->b = node->save(b);
    if (node->needs_grad(1)) node->a = node->save(a);
    node->set_history(out);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// pow: y = x^e. dy/dx = e * x^(e-1) (0 where e == 0), dy/de = y * log(x) (0 where x == 0 and
// e >= 0, where the limit is finite; PyTorch's convention).

namespace {
struct PowBackward final : Node {
  PowBackward() : Node("PowBackward") {}
  size_t x = 0, e = 0, y = 0;
  tensor_list apply(tensor_list&& grads) override {
    const Tensor& g = grads[0];
    const Tensor xv = saved(x), ev = saved(e);
    Tensor gx, ge;
    if (needs_grad(0)) {
      const Tensor d = masked_fill(mul(ev, pow(xv, sub(ev, 1))), eq(ev, 0), 0);
      gx = sum_to(mul(g, d), input_sizes(0));
    }
    if (needs_grad(1)) {
      const Tensor zero_base =
          kernels::map_predicate("pow", xv, ev, [](auto u, auto v) { return u == 0 && v >= 0; });
      const Tensor d = masked_fill(mul(saved(y), log(xv)), zero_base, 0);
      ge = sum_to(mul(g, d), input_sizes(1));
    }
    return {gx, ge};
  }
};
}  // namespace

Tensor pow(const Tensor& base, const Tensor& exponent) {
  if (autocast::is_active()) {
    const autocast::OpInputs in(AutocastOp::kPow, {base, exponent});
    return pow(in[0], in[1]);
  }
  Tensor out = map_binary("pow", base, exponent, [](auto u, auto v) { return std::pow(u, v); });
  if (auto node = make_node<PowBackward>({base, exponent})) {
    node->x = node->save(base);
    node->e = node->save(exponent);
    node->set_history(out);
    if (node->needs_grad(1)) node->y = node->save(out);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// With a scalar: y = a + s, a * s, a / s, s - a, a^s.

namespace {
struct AddScalarBackward final : Node {
  AddScalarBackward() : Node("AddBackward") {}
  tensor_list apply(tensor_list&& grads) override { return {grads[0]}; }
};
struct NegBackward final : Node {
  explicit NegBackward(const char* name) : Node(name) {}
  tensor_list apply(tensor_list&& grads) override { return {neg(grads[0])}; }
};
struct MulScalarBackward final : Node {
  explicit MulScalarBackward(Scalar s) : Node("MulBackward"), s(s) {}
  Scalar s;
  tensor_list apply(tensor_list&& grads) override { return {mul(grads[0], s)}; }
};
struct DivScalarBackward final : Node {
  explicit DivScalarBackward(Scalar s) : Node("DivBackward"), s(s) {}
  Scalar s;
  tensor_list apply(tensor_list&& grads) override { return {div(grads[0], s)}; }
};
struct PowScalarBackward final : Node {
  explicit PowScalarBackward(double p) : Node("PowBackward"), p(p) {}
  double p;
  size_t x = 0;
  tensor_list apply(tensor_list&& grads) override {
    if (p == 0) return {zeros(input_sizes(0), input_meta(0).dtype)};
    return {mul(grads[0], mul(pow(saved(x), p - 1), p))};
  }
};
}  // namespace

Tensor add(const Tensor& a, Scalar b) {
  Tensor out = dispatch_floating_dtype(a.dtype(), "add", [&]<typename T>() {
    const auto s = b.to<kernels::compute_t<T>>();
    return map_unary("add", a, [s](auto v) { return v + s; });
  });
  if (auto node = make_node<AddScalarBackward>({a})) node->set_history(out);
  return out;
}

Tensor sub(const Tensor& a, Scalar b) {
  Tensor out = dispatch_floating_dtype(a.dtype(), "sub", [&]<typename T>() {
    const auto s = b.to<kernels::compute_t<T>>();
    return map_unary("sub", a, [s](auto v) { return v - s; });
  });
  if (auto node = make_node<AddScalarBackward>({a})) node->set_history(out);
  return out;
}

Tensor rsub(const Tensor& a, Scalar b) {
  Tensor out = dispatch_floating_dtype(a.dtype(), "rsub", [&]<typename T>() {
    const auto s = b.to<kernels::compute_t<T>>();
    return map_unary("rsub", a, [s](auto v) { return s - v; });
  });
  if (auto node = make_node<NegBackward>({a}, "RsubBackward")) node->set_history(out);
  return out;
}

Tensor mul(const Tensor& a, Scalar b) {
  Tensor out = dispatch_floating_dtype(a.dtype(), "mul", [&]<typename T>() {
    const auto s = b.to<kernels::compute_t<T>>();
    return map_unary("mul", a, [s](auto v) { return v * s; });
  });
  if (auto node = make_node<MulScalarBackward>({a}, b)) node->set_history(out);
  return out;
}

Tensor div(const Tensor& a, Scalar b) {
  Tensor out = dispatch_floating_dtype(a.dtype(), "div", [&]<typename T>() {
    const auto s = b.to<kernels::compute_t<T>>();
    return map_unary("div", a, [s](auto v) { return v / s; });
  });
  if (auto node = make_node<DivScalarBackward>({a}, b)) node->set_history(out);
  return out;
}

Tensor pow(const Tensor& base, Scalar exponent) {
  const double p = exponent.to<double>();
  Tensor out = dispatch_floating_dtype(base.dtype(), "pow", [&]<typename T>() {
    using C = kernels::compute_t<T>;
    const C e = static_cast<C>(p);
    if (p == 2) return map_unary("pow", base, [](auto v) { return v * v; });
    return map_unary("pow", base, [e](auto v) { return std::pow(v, e); });
  });
  if (auto node = make_node<PowScalarBackward>({base}, p)) {
    if (p != 0) node->x = node->save(base);
    node->set_history(out);
  }
  return out;
}

Tensor neg(const Tensor& x) {
  Tensor out = map_unary("neg", x, [](auto v) { return -v; });
  if (auto node = make_node<NegBackward>({x}, "NegBackward")) node->set_history(out);
  return out;
}

Tensor operator/(Scalar a, const Tensor& b) {
  return mul(reciprocal(b), a);
}

}  // namespace aclgrad
