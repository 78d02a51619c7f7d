#include "ops/cast.h"

#include "autograd/function.h"
#include "ops/map16.h"
#include "tensor/creation.h"

namespace aclgrad {

using autograd::make_node;
using autograd::Node;
using autograd::tensor_list;

namespace {
// y = x in another dtype: dL/dx = dL/dy in x's dtype.
struct CastBackward final : Node {
  CastBackward() : Node("CastBackward") {}
  tensor_list apply(tensor_list&& grads) override { return {cast(grads[0], input_meta(0).dtype)}; }
};

// x.to(dtype) for float32 <-> float16 / bfloat16 (autocast's casts, both ways), converted a chunk
// at a time by ops/convert16: the same bits as Tensor::to's element-by-element conversion.
template <typename T>
Tensor convert_float32(const Tensor& x, Dtype dtype) {
  Tensor out = empty(x.sizes(), dtype);
  kernels::convert16_into<T>(out, x);
  return out;
}

Tensor convert(const Tensor& x, Dtype dtype) {
  const Dtype other = x.dtype() == Dtype::Float32 ? dtype : x.dtype();
  const bool float32_side = x.dtype() == Dtype::Float32 || dtype == Dtype::Float32;
  if (float32_side && other == Dtype::Float16) return convert_float32<Half>(x, dtype);
  if (float32_side && other == Dtype::BFloat16) return convert_float32<BFloat16>(x, dtype);
  return x.to(dtype);
}

}  // namespace

Tensor cast(const Tensor& x, Dtype dtype) {
  if (x.dtype() == dtype) return x;
  Tensor out = convert(x, dtype);
  if (!x.is_floating_point() || !is_floating_point(dtype)) return out;
  if (auto node = make_node<CastBackward>({x})) node->set_history(out);
  return out;
}

}  // namespace aclgrad
