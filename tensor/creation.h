// Tensor factories: empty/zeros/ones/full/arange and tensors from C++ values.
// (Random factories are in tensor/random.h.)
#pragma once

#include <cstdint>
#include <initializer_list>
#include <type_traits>
#include <vector>

#include "../tensor/tensor.h"

namespace aclgrad {

/// A new contiguous tensor with uninitialised values. ShapeError on negative sizes/overflow.
Tensor empty(const Shape& sizes, Dtype dtype = Dtype::Float32);
Tensor zeros(const Shape& sizes, Dtype dtype = Dtype::Float32);
Tensor ones(const Shape& sizes, Dtype dtype = Dtype::Float32);
Tensor full(const Shape& sizes, Scalar value, Dtype dtype = Dtype::Float32);
Tensor empty_like(const Tensor& t);
Tensor zeros_like(const Tensor& t);
Tensor ones_like(const Tensor& t);

/// [0, end) with step 1.
Tensor arange(double end, Dtype dtype = Dtype::Float32);
/// start, start + step, ... while < end (> end for a negative step); value i is start + i * step
/// computed in double. Error if step is 0 or its sign walks away from end.
Tensor arange(double start, double end, double step, Dtype dtype = Dtype::Float32);

/// The dtype a C++ value type maps to: integers -> int64, float -> float32, double -> float64.
template <typename T>
constexpr Dtype natural_dtype() {
  if constexpr (std::is_same_v<T, bool>)
    return Dtype::Bool;
  else if constexpr (std::is_integral_v<T>)
    return Dtype::Int64;
  else if constexpr (std::is_same_v<T, double>)
    return Dtype::Float64;
  else if constexpr (std::is_same_v<T, Half>)
    return Dtype::Float16;
  else if constexpr (std::is_same_v<T, BFloat16>)
    return Dtype::BFloat16;
  else
    return Dtype::Float32;
}

/// A tensor of the given sizes and dtype holding values (row-major, converted to dtype).
/// ShapeError unless values.size() equals the element count of sizes.
template <typename T>
Tensor from_vector(const std::vector<T>& values, const Shape& sizes, Dtype dtype) {
  const int64_t n = checked_numel(sizes, "from_vector");
  check<ShapeError>(n == static_cast<int64_t>(values.size()), "from_vector: ", values.size(),
                    " values do not fill shape ", sizes, " (", n, " elements)");
  Tensor t = empty(sizes, dtype);
  dispatch_dtype(dtype, [&]<typename D>() {
    D* p = t.data_ptr<D>();
    for (int64_t i = 0; i < n; ++i) p[i] = convert<D>(values[i]);
  });
  return t;
}
template <typename T>
Tensor from_vector(const std::vector<T>& values, const Shape& sizes) {
  return from_vector(values, sizes, natural_dtype<T>());
}
template <typename T>
Tensor from_vector(const std::vector<T>& values) {
  return from_vector(values, {static_cast<int64_t>(values.size())}, natural_dtype<T>());
}

/// tensor({1.f, 2.f, 3.f, 4.f}, {2, 2}): from_vector for literals.
template <typename T>
Tensor tensor(std::initializer_list<T> values, const Shape& sizes, Dtype dtype) {
  return from_vector(std::vector<T>(values), sizes, dtype);
}
template <typename T>
Tensor tensor(std::initializer_list<T> values, const Shape& sizes) {
  return from_vector(std::vector<T>(values), sizes);
}
template <typename T>
Tensor tensor(std::initializer_list<T> values) {
  return from_vector(std::vector<T>(values));
}

}  // namespace aclgrad
