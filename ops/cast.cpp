#include "ops/cast.h"

#include "autograd/function.h"

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
}  // namespace

Tensor cast(const Tensor& x, Dtype dtype) {
  if (x.dtype() == dtype) return x;
  Tensor out = x.to(dtype);
  if (!x.is_floating_point() || !is_floating_point(dtype)) return out;
  if (auto node = make_node<CastBackward>({x})) node->set_history(out);
  return out;
}

}  // namespace aclgrad
