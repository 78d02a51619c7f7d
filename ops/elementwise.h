// Differentiable elementwise ops with PyTorch broadcasting, and the C++ operators on Tensors.
//
// Binary ops broadcast their operands (tensor/iter.h's rule); the gradient of a broadcast operand
// is summed back to its shape (sum_to). Both operands must have the same floating dtype; scalar
// overloads compute in the tensor's dtype. float16/bfloat16 compute in float32 (ops/kernels.h).
// Every backward is written with these differentiable ops, so all of them support double
// backward (create_graph=true).
#pragma once

#include <optional>

#include "../tensor/tensor.h"

namespace aclgrad {

// ---- binary, with broadcasting ----
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
/// base ** exponent elementwise. d/dexponent is 0 where base == 0 and exponent >= 0 (PyTorch).
Tensor pow(const Tensor& base, const Tensor& exponent);

// ---- with a scalar ----
Tensor add(const Tensor& a, Scalar b);
Tensor sub(const Tensor& a, Scalar b);
Tensor mul(const Tensor& a, Scalar b);
Tensor div(const Tensor& a, Scalar b);
/// b - a.
Tensor rsub(const Tensor& a, Scalar b);
/// base ** exponent; exponent 0 gives ones (and a zero gradient).
Tensor pow(const Tensor& base, Scalar exponent);

// ---- unary ----
Tensor neg(const Tensor& x);
Tensor reciprocal(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
/// |x|; the gradient at 0 is 0 (sign(0) = 0), as in PyTorch.
Tensor abs(const Tensor& x);
/// -1, 0 or 1 (NaN stays NaN); its gradient is zero.
Tensor sign(const Tensor& x);
/// Limits x to [min, max] (either bound optional; Error if both are missing). The gradient is
/// passed where min <= x <= max and is 0 elsewhere (PyTorch's convention at the bounds).
Tensor clamp(const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max);
Tensor clamp_min(const Tensor& x, Scalar min);
Tensor clamp_max(const Tensor& x, Scalar max);

// ---- masks (Bool results, not differentiable) ----
Tensor gt(const Tensor& a, Scalar b);
Tensor ge(const Tensor& a, Scalar b);
Tensor lt(const Tensor& a, Scalar b);
Tensor le(const Tensor& a, Scalar b);
Tensor eq(const Tensor& a, Scalar b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& a, const Tensor& b);
/// x with value wherever mask (Bool, broadcast to x's shape) is true; gradient: masked to 0.
Tensor masked_fill(const Tensor& x, const Tensor& mask, Scalar value);

// ---- operators (same ops; a Scalar is any C++ number) ----
inline Tensor operator+(const Tensor& a, const Tensor& b) {
  return add(a, b);
}
inline Tensor operator-(const Tensor& a, const Tensor& b) {
  return sub(a, b);
}
inline Tensor operator*(const Tensor& a, const Tensor& b) {
  return mul(a, b);
}
inline Tensor operator/(const Tensor& a, const Tensor& b) {
  return div(a, b);
}
inline Tensor operator-(const Tensor& x) {
  return neg(x);
}
inline Tensor operator+(const Tensor& a, Scalar b) {
  return add(a, b);
}
inline Tensor operator-(const Tensor& a, Scalar b) {
  return sub(a, b);
}
inline Tensor operator*(const Tensor& a, Scalar b) {
  return mul(a, b);
}
inline Tensor operator/(const Tensor& a, Scalar b) {
  return div(a, b);
}
inline Tensor operator+(Scalar a, const Tensor& b) {
  return add(b, a);
}
inline Tensor operator-(Scalar a, const Tensor& b) {
  return rsub(b, a);
}
inline Tensor operator*(Scalar a, const Tensor& b) {
  return mul(b, a);
}
/// a / b = a * reciprocal(b).
Tensor operator/(Scalar a, const Tensor& b);

}  // namespace aclgrad
