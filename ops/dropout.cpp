// dropout: the mask from the Generator, the masked product, and its backward.
#include "ops/dropout.h"

#include <mutex>

#include "autograd/function.h"
#include "ops/elementwise.h"
#include "ops/kernels.h"
#include "tensor/creation.h"

namespace aclgrad {

using autograd::make_node;
using autograd::Node;
using autograd::tensor_list;

namespace {

// y = x * mask: dL/dx = dL/dy * mask (mul is recorded, so this differentiates again).
struct DropoutBackward final : Node {
  explicit DropoutBackward(Tensor mask) : Node("DropoutBackward"), mask(std::move(mask)) {}
  Tensor mask;  // x's shape and dtype, values 0 or 1 / (1 - p); no history
  tensor_list apply(tensor_list&& grads) override { return {mul(grads[0], mask)}; }
  void release_state() override { mask = Tensor(); }
};

// Contiguous mask of x's shape: scale with probability 1 - p, else 0.
Tensor make_mask(const Tensor& x, double p, Generator& gen) {
  Tensor mask = empty(x.sizes(), x.dtype());
  const double keep = 1 - p;
  dispatch_floating_dtype(x.dtype(), "dropout", [&]<typename T>() {
    const T scale = convert<T>(1 / keep), zero = convert<T>(0.0);
    T* m = mask.data_ptr<T>();
    const std::lock_guard<std::mutex> lock(gen.mutex());
    for (int64_t i = 0; i < mask.numel(); ++i) m[i] = gen.uniform() < keep ? scale : zero;
  });
  return mask;
}

}  // namespace

Tensor dropout(const Tensor& x, double p, bool training, Generator* gen) {
  check(p >= 0 && p <= 1, "dropout: dropout probability has to be between 0 and 1, but got ", p);
  check<DtypeError>(x.is_floating_point(), "dropout: expected a floating point dtype, got ",
                    x.dtype());
  if (!training || p == 0 || x.numel() == 0) return x;
  if (p == 1) return mul(x, 0.0);  // keeps the graph (zero gradient), like PyTorch
  const Tensor mask = make_mask(x, p, gen ? *gen : default_generator());
  Tensor out = kernels::map_binary("dropout", x, mask, [](auto v, auto m) { return v * m; });
  if (auto node = make_node<DropoutBackward>({x}, mask)) node->set_history(out);
  return out;
}

}  // namespace aclgrad
