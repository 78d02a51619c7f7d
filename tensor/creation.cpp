#include "tensor/creation.h"

#include <cmath>

namespace aclgrad {

Tensor empty(const Shape& sizes, Dtype dtype) {
  const int64_t n = checked_numel(sizes, "empty");
  int64_t nbytes;
  check<ShapeError>(!__builtin_mul_overflow(n, element_size(dtype), &nbytes), "empty: sizes ",
                    sizes, " of ", dtype, " overflow the byte count");
  return Tensor::make(Storage::allocate(static_cast<size_t>(nbytes)), Layout::contiguous(sizes),
                      dtype);
}

Tensor full(const Shape& sizes, Scalar value, Dtype dtype) {
  Tensor t = empty(sizes, dtype);
  t.fill_(value);
  return t;
}

Tensor zeros(const Shape& sizes, Dtype dtype) {
  return full(sizes, 0, dtype);
}
Tensor ones(const Shape& sizes, Dtype dtype) {
  return full(sizes, 1, dtype);
}
Tensor empty_like(const Tensor& t) {
  return empty(t.sizes(), t.dtype());
}
Tensor zeros_like(const Tensor& t) {
  return zeros(t.sizes(), t.dtype());
}
Tensor ones_like(const Tensor& t) {
  return ones(t.sizes(), t.dtype());
}

Tensor arange(double end, Dtype dtype) {
  return arange(0, end, 1, dtype);
}

Tensor arange(double start, double end, double step, Dtype dtype) {
  check(std::isfinite(start) && std::isfinite(end), "arange: start ", start, " and end ", end,
        " must be finite");
  check(step != 0 && std::isfinite(step), "arange: step must be finite and non-zero, got ", step);
  check((step > 0 && start <= end) || (step < 0 && start >= end), "arange: step ", step,
        " moves away from end ", end, " starting at ", start);
  const double count = std::ceil((end - start) / step);
  check<ShapeError>(count < 0x1p62, "arange: ", count, " elements are too many");
  const int64_t n = static_cast<int64_t>(count);
  Tensor t = empty({n}, dtype);
  dispatch_dtype(dtype, [&]<typename T>() {
    T* p = static_cast<T*>(t.data_ptr());
    for (int64_t i = 0; i < n; ++i) p[i] = convert<T>(start + static_cast<double>(i) * step);
  });
  return t;
}

}  // namespace aclgrad
