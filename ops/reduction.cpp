// sum, mean, sum_to, broadcast_to: forward kernels on tensor/iter.h's reduce_elements, and their
// backward nodes. Each backward is the adjoint op, so double backward works:
//   sum/mean over dims  <->  expand_reduced (broadcast the reduced gradient back)
//   sum_to              <->  broadcast_to
#include <algorithm>
#include <cmath>

#include "autograd/function.h"
#include "ops/elementwise.h"
#include "ops/map16.h"
#include "ops/reduction.h"
#include "ops/reduction_util.h"
#include "tensor/creation.h"
#include "tensor/iter.h"

namespace aclgrad {

using autograd::make_node;
using autograd::Node;
using autograd::tensor_list;

namespace reduction {

Shape normalize_dims(const char* op, const Shape& dims, int64_t ndim) {
  Shape out;
  for (int64_t d : dims) {
    const int64_t w = wrap_dim(d, ndim, op);
    check<IndexError>(std::find(out.begin(), out.end(), w) == out.end(), op, ": dim ", w,
                      " appears more than once in dims ", dims);
    out.push_back(w);
  }
  std::sort(out.begin(), out.end());
  return out;
}

Shape reduced_shape(const Shape& sizes, const Shape& dims, bool keepdim) {
  Shape out;
  for (int64_t d = 0; d < static_cast<int64_t>(sizes.size()); ++d) {
    const bool reduced = std::find(dims.begin(), dims.end(), d) != dims.end();
    if (!reduced)
      out.push_back(sizes[d]);
    else if (keepdim)
      out.push_back(1);
  }
  return out;
}

Tensor sum_kernel(const char* op, const Tensor& x, const Shape& dims, bool keepdim, double scale) {
  Tensor acc = zeros(reduced_shape(x.sizes(), dims, keepdim), Dtype::Float64);
  dispatch_floating_dtype(x.dtype(), op, [&]<typename T>() {
    if constexpr (kernels::is_16bit_v<T>) {  // widened a chunk at a time, the same sums
      kernels::reduce16<double, T>(acc, x, dims, [](double a, float v) { return a + v; });
    } else {
      reduce_elements<double, T>(acc, x, dims,
                                 [](double a, T v) { return a + convert<double>(v); });
    }
  });
  if (scale != 1)
    map_elementwise<double, double>(acc, {acc}, [scale](double v) { return v * scale; });
  return acc.to(x.dtype());
}

}  // namespace reduction

using reduction::normalize_dims;
using reduction::reduced_shape;
using reduction::sum_kernel;

namespace {

Tensor sum_impl(const Tensor& x, const Shape& dims, bool keepdim);

// y = g broadcast from the reduced shape back to in_shape; its gradient sums over dims again.
struct ExpandReducedBackward final : Node {
  ExpandReducedBackward(Shape dims, bool keepdim)
      : Node("ExpandBackward"), dims(std::move(dims)), keepdim(keepdim) {}
  Shape dims;
  bool keepdim;
  tensor_list apply(tensor_list&& grads) override { return {sum_impl(grads[0], dims, keepdim)}; }
};

// g has x's shape reduced over (sorted, wrapped) dims; returns a stride-0 view of in_shape.
Tensor expand_reduced(const Tensor& g, const Shape& in_shape, const Shape& dims, bool keepdim) {
  Tensor v = g;
  if (!keepdim) {
    for (int64_t d : dims) v = v.unsqueeze(d);
  }
  Tensor out = v.expand(in_shape);  // a new tensor over g's data
  if (auto node = make_node<ExpandReducedBackward>({g}, dims, keepdim)) node->set_history(out);
  return out;
}

// y = sum(x, dims): dy/dx = 1 everywhere.
struct SumBackward final : Node {
  SumBackward(Shape dims, bool keepdim)
      : Node("SumBackward"), dims(std::move(dims)), keepdim(keepdim) {}
  Shape dims;
  bool keepdim;
  tensor_list apply(tensor_list&& grads) override {
    return {expand_reduced(grads[0], input_sizes(0), dims, keepdim)};
  }
};

// y = mean(x, dims): dy/dx = 1 / count.
struct MeanBackward final : Node {
  MeanBackward(Shape dims, bool keepdim, int64_t count)
      : Node("MeanBackward"), dims(std::move(dims)), keepdim(keepdim), count(count) {}
  Shape dims;
  bool keepdim;
  int64_t count;
  tensor_list apply(tensor_list&& grads) override {
    return {
        div(expand_reduced(grads[0], input_sizes(0), dims, keepdim), static_cast<double>(count))};
  }
};

// dims already normalized; an empty list reduces nothing (a copy).
Tensor sum_impl(const Tensor& x, const Shape& dims, bool keepdim) {
  Tensor out = sum_kernel("sum", x, dims, keepdim, 1.0);
  if (auto node = make_node<SumBackward>({x}, dims, keepdim)) node->set_history(out);
  return out;
}

Tensor mean_impl(const Tensor& x, const Shape& dims, bool keepdim) {
  int64_t count = 1;
  for (int64_t d : dims) count *= x.sizes()[d];
  const double scale = count == 0 ? NAN : 1.0 / static_cast<double>(count);
  Tensor out = sum_kernel("mean", x, dims, keepdim, scale);
  if (auto node = make_node<MeanBackward>({x}, dims, keepdim, count)) node->set_history(out);
  return out;
}

Shape all_dims(const Tensor& x) {
  Shape dims(x.dim());
  for (int64_t d = 0; d < x.dim(); ++d) dims[d] = d;
  return dims;
}

}  // namespace

Tensor sum(const Tensor& x) {
  return sum_impl(x, all_dims(x), false);
}

Tensor sum(const Tensor& x, const Shape& dims, bool keepdim) {
  check<IndexError>(!dims.empty(), "sum: dims is empty; use sum(x) to reduce all dimensions");
  return sum_impl(x, normalize_dims("sum", dims, x.dim()), keepdim);
}

Tensor mean(const Tensor& x) {
  return mean_impl(x, all_dims(x), false);
}

Tensor mean(const Tensor& x, const Shape& dims, bool keepdim) {
  check<IndexError>(!dims.empty(), "mean: dims is empty; use mean(x) to reduce all dimensions");
  return mean_impl(x, normalize_dims("mean", dims, x.dim()), keepdim);
}

// ---------------------------------------------------------------------------------------------
// sum_to / broadcast_to

namespace {

struct SumToBackward final : Node {
  SumToBackward() : Node("SumToBackward") {}
  tensor_list apply(tensor_list&& grads) override {
    return {broadcast_to(grads[0], input_sizes(0))};
  }
};

struct BroadcastToBackward final : Node {
  BroadcastToBackward() : Node("BroadcastToBackward") {}
  tensor_list apply(tensor_list&& grads) override { return {sum_to(grads[0], input_sizes(0))}; }
};

}  // namespace

Tensor sum_to(const Tensor& x, const Shape& shape) {
  if (x.sizes() == shape) return x;
  const Shape& sizes = x.sizes();
  const int64_t lead = x.dim() - static_cast<int64_t>(shape.size());
  bool ok = lead >= 0;
  Shape dims;
  for (int64_t d = 0; ok && d < x.dim(); ++d) {
    if (d < lead) {
      dims.push_back(d);
    } else if (shape[d - lead] != sizes[d]) {
      ok = shape[d - lead] == 1;
      dims.push_back(d);
    }
  }
  check<ShapeError>(ok, "sum_to: shape ", shape, " does not broadcast to the tensor's shape ",
                    sizes);
  Tensor out = sum_kernel("sum_to", x, dims, true, 1.0).view(shape);
  if (auto node = make_node<SumToBackward>({x})) node->set_history(out);
  return out;
}

Tensor broadcast_to(const Tensor& x, const Shape& shape) {
  if (x.sizes() == shape) return x;
  Tensor out = x.expand(shape);  // a new tensor over x's data; ShapeError if impossible
  if (auto node = make_node<BroadcastToBackward>({x})) node->set_history(out);
  return out;
}

}  // namespace aclgrad
