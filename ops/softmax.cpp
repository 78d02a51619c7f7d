// softmax / log_softmax along one dim: a three-pass kernel on tensor/iter.h (row max, sum of
// exp(x - max), normalise) that works on any strides without permuting (16-bit x: on its float32
// widening, rounded once at the end), and backward formulas written with differentiable ops (so
// double backward works):
//   y = softmax(x):      dL/dx = y * (g - sum(g * y, dim))
//   y = log_softmax(x):  dL/dx = g - exp(y) * sum(g, dim)
#include "ops/softmax.h"

#include <cmath>
#include <limits>

#include "autograd/function.h"
#include "ops/elementwise.h"
#include "ops/kernels.h"
#include "ops/reduction.h"
#include "ops/reduction_util.h"

namespace aclgrad {

using autograd::make_node;
using autograd::Node;
using autograd::tensor_list;

namespace {

// out = softmax (or log_softmax) of a float32 / float64 x over dims ({d}, or {} for a 0-dim x,
// whose single element is its own row); out has x's shape and dtype. For softmax out may be x
// itself (each pass reads an element before writing it); log_softmax reads x again at the end.
template <bool Log, typename C>
void softmax_compute(const Tensor& out, const Tensor& x, const Shape& dims) {
  const Shape row_shape = reduction::reduced_shape(x.sizes(), dims, /*keepdim=*/true);
  // m = max along dim [.., 1, ..]; a NaN anywhere in the row makes it NaN.
  Tensor m = full(row_shape, -std::numeric_limits<C>::infinity(), dtype_of<C>());
  reduce_elements<C, C>(m, x, dims, [](C acc, C u) { return u > acc || std::isnan(u) ? u : acc; });
  // e = exp(x - m), in out; s = sum of e, accumulated in double.
  const Tensor& e = out;
  map_elementwise<C, C, C>(e, {x, m}, [](C v, C mx) { return std::exp(v - mx); });
  Tensor s = zeros(row_shape, Dtype::Float64);
  reduce_elements<double, C>(s, e, dims, [](double acc, C v) { return acc + v; });
  if constexpr (Log) {
    // out = x - m - log(s)
    map_elementwise<double, double>(s, {s}, [](double v) { return std::log(v); });
    map_elementwise<C, C, C, double>(
        out, {x, m, s}, [](C v, C mx, double ls) { return v - mx - static_cast<C>(ls); });
  } else {
    // out = e / s
    map_elementwise<C, C, double>(out, {e, s},
                                  [](C v, double sm) { return v / static_cast<C>(sm); });
  }
}

template <bool Log>
Tensor softmax_kernel(const char* op, const Tensor& x, const Shape& dims) {
  Tensor out = empty(x.sizes(), x.dtype());
  dispatch_floating_dtype(x.dtype(), op, [&]<typename T>() {
    if constexpr (kernels::is_16bit_v<T>) {
      // Computed in float32 on x widened in bulk, every output rounded once: the 16-bit
      // definition (compute from the exact float32 values, round once), the same bits.
      Tensor x32 = empty(x.sizes(), Dtype::Float32);
      kernels::convert16_into<T>(x32, x);
      const Tensor y32 = Log ? empty(x.sizes(), Dtype::Float32) : x32;
      softmax_compute<Log, float>(y32, x32, dims);
      kernels::convert16_into<T>(out, y32);
    } else {
      softmax_compute<Log, T>(out, x, dims);
    }
  });
  return out;
}

struct SoftmaxBackward final : Node {
  explicit SoftmaxBackward(int64_t dim) : Node("SoftmaxBackward"), dim(dim) {}
  int64_t dim;
  size_t y = 0;
  tensor_list apply(tensor_list&& grads) override {
    const Tensor& g = grads[0];
    const Tensor yv = saved(y);
    if (yv.dim() == 0) return {mul(g, 0.0)};  // y = 1 whatever x is
    // dL/dx_i = sum_j g_j dy_j/dx_i = sum_j g_j y_j (δ_ij - y_i) = y_i (g_i - sum_j g_j y_j)
    return {mul(yv, sub(g, sum(mul(g, yv), {dim}, true)))};
  }
};

struct LogSoftmaxBackward final : Node {
  explicit LogSoftmaxBackward(int64_t dim) : Node("LogSoftmaxBackward"), dim(dim) {}
  int64_t dim;
  size_t y = 0;
  tensor_list apply(tensor_list&& grads) override {
    const Tensor& g = grads[0];
    const Tensor yv = saved(y);
    if (yv.dim() == 0) return {mul(g, 0.0)};  // y = 0 whatever x is
    // dy_j/dx_i = δ_ij - softmax_i, so dL/dx_i = g_i - exp(y_i) sum_j g_j
    return {sub(g, mul(exp(yv), sum(g, {dim}, true)))};
  }
};

template <bool Log, typename N>
Tensor softmax_impl(const char* op, const Tensor& x, int64_t dim) {
  const int64_t d = wrap_dim(dim, x.dim(), op);
  Tensor out = softmax_kernel<Log>(op, x, x.dim() == 0 ? Shape{} : Shape{d});
  if (auto node = make_node<N>({x}, d)) {
    node->set_history(out);
    node->y = node->save(out);
  }
  return out;
}

}  // namespace

Tensor softmax(const Tensor& x, int64_t dim) {
  return softmax_impl<false, SoftmaxBackward>("softmax", x, dim);
}

Tensor log_softmax(const Tensor& x, int64_t dim) {
  return softmax_impl<true, LogSoftmaxBackward>("log_softmax", x, dim);
}

}  // namespace aclgrad
