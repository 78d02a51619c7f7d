// Building blocks for pointwise kernels of ops/: typed maps over tensor/iter.h's strided
// iteration (with its contiguous fast path), for every floating dtype.
//
// Dtype policy of ops/: float32 and float64 compute natively; float16 and bfloat16 are loaded,
// computed in float32 and rounded once on store (a chunk at a time, ops/map16.h, converted by
// vector instructions where the CPU has them). Other dtypes are a DtypeError naming the op.
// Binary ops need both operands to have the same dtype (no implicit promotion).
#pragma once

#include <bit>
#include <cstdint>
#include <type_traits>

#include "ops/map16.h"
#include "tensor/creation.h"
#include "tensor/iter.h"

namespace aclgrad::kernels {

/// The type a kernel computes in for element type T: double for float64, float otherwise.
template <typename T>
using compute_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

/// DtypeError unless a and b have the same dtype.
inline void check_same_dtype(const char* op, const Tensor& a, const Tensor& b) {
  check<DtypeError>(a.dtype() == b.dtype(), op,
                    ": expected both operands to have the same dtype, "
                    "got ",
                    a.dtype(), " and ", b.dtype());
}

/// m ? a : b without a branch (masks like relu's are random, and a branch would mispredict);
/// bit-exact for every element type (NaN payloads, signed zeros).
template <typename T>
inline T select(bool m, T a, T b) {
  using Bits = std::conditional_t<sizeof(T) == 8, uint64_t,
                                  std::conditional_t<sizeof(T) == 4, uint32_t, uint16_t>>;
  static_assert(sizeof(T) == sizeof(Bits));
  const Bits mask = static_cast<Bits>(Bits(0) - static_cast<Bits>(m));
  return std::bit_cast<T>(
      static_cast<Bits>((std::bit_cast<Bits>(a) & mask) | (std::bit_cast<Bits>(b) & ~mask)));
}

/// out = f(x), f called with compute_t values: map_unary("exp", x, [](auto v) { return
/// std::exp(v); }). The output is a new contiguous tensor of x's shape and dtype.
template <typename F>
Tensor map_unary(const char* op, const Tensor& x, F f) {
  Tensor out = empty(x.sizes(), x.dtype());
  dispatch_floating_dtype(x.dtype(), op, [&]<typename T>() {
    using C = compute_t<T>;
    if constexpr (is_16bit_v<T>) {
      map16<T, T, 1>(out, {x}, f);
    } else {
      map_elementwise<T, T>(out, {x}, [&f](T v) { return convert<T>(f(convert<C>(v))); });
    }
  });
  return out;
}

/// out = f(a, b) with broadcasting; a and b must have the same floating dtype.
template <typename F>
Tensor map_binary(const char* op, const Tensor& a, const Tensor& b, F f) {
  check_same_dtype(op, a, b);
  Tensor out = empty(broadcast_shapes(a.sizes(), b.sizes()), a.dtype());
  dispatch_floating_dtype(a.dtype(), op, [&]<typename T>() {
    using C = compute_t<T>;
    if constexpr (is_16bit_v<T>) {
      map16<T, T, 2>(out, {a, b}, f);
    } else {
      map_elementwise<T, T, T>(
          out, {a, b}, [&f](T u, T v) { return convert<T>(f(convert<C>(u), convert<C>(v))); });
    }
  });
  return out;
}

/// out = f(a, b, c) with broadcasting; all three must have the same floating dtype.
template <typename F>
Tensor map_ternary(const char* op, const Tensor& a, const Tensor& b, const Tensor& c, F f) {
  check_same_dtype(op, a, b);
  check_same_dtype(op, a, c);
  Tensor out =
      empty(broadcast_shapes(broadcast_shapes(a.sizes(), b.sizes()), c.sizes()), a.dtype());
  dispatch_floating_dtype(a.dtype(), op, [&]<typename T>() {
    using C = compute_t<T>;
    if constexpr (is_16bit_v<T>) {
      map16<T, T, 3>(out, {a, b, c}, f);
    } else {
      map_elementwise<T, T, T, T>(out, {a, b, c}, [&f](T u, T v, T w) {
        return convert<T>(f(convert<C>(u), convert<C>(v), convert<C>(w)));
      });
    }
  });
  return out;
}

/// Bool mask = pred(x) for a floating x.
template <typename F>
Tensor map_predicate(const char* op, const Tensor& x, F pred) {
  Tensor out = empty(x.sizes(), Dtype::Bool);
  dispatch_floating_dtype(x.dtype(), op, [&]<typename T>() {
    using C = compute_t<T>;
    if constexpr (is_16bit_v<T>) {
      map16<bool, T, 1>(out, {x}, pred);
    } else {
      map_elementwise<bool, T>(out, {x}, [&pred](T v) { return pred(convert<C>(v)); });
    }
  });
  return out;
}

/// Bool mask = pred(a, b) with broadcasting; same floating dtype.
template <typename F>
Tensor map_predicate(const char* op, const Tensor& a, const Tensor& b, F pred) {
  check_same_dtype(op, a, b);
  Tensor out = empty(broadcast_shapes(a.sizes(), b.sizes()), Dtype::Bool);
  dispatch_floating_dtype(a.dtype(), op, [&]<typename T>() {
    using C = compute_t<T>;
    if constexpr (is_16bit_v<T>) {
      map16<bool, T, 2>(out, {a, b}, pred);
    } else {
      map_elementwise<bool, T, T>(out, {a, b},
                                  [&pred](T u, T v) { return pred(convert<C>(u), convert<C>(v)); });
    }
  });
  return out;
}

}  // namespace aclgrad::kernels
