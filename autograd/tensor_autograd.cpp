// The autograd methods of Tensor (declared in tensor/tensor.h, defined here so that the tensor
// layer does not depend on autograd; libtorch splits Tensor the same way).
#include "autograd/engine.h"
#include "autograd/error.h"
#include "autograd/grad_mode.h"
#include "autograd/meta.h"
#include "tensor/creation.h"

namespace aclgrad {

using autograd::AutogradMetaImpl;
using autograd::ensure_meta;
using autograd::meta_of;

const Tensor& Tensor::requires_grad_(bool requires_grad) const {
  check<AutogradError>(is_leaf() || requires_grad,
                       "requires_grad_: you can only change requires_grad flags of leaf "
                       "variables; use detach() to get a tensor without history");
  return set_requires_grad(requires_grad);
}

bool Tensor::is_leaf() const {
  const AutogradMetaImpl* meta = meta_of(*this);
  return meta == nullptr || meta->grad_fn == nullptr;
}

std::shared_ptr<autograd::Node> Tensor::grad_fn() const {
  const AutogradMetaImpl* meta = meta_of(*this);
  return meta == nullptr ? nullptr : meta->grad_fn;
}

uint32_t Tensor::output_nr() const {
  const AutogradMetaImpl* meta = meta_of(*this);
  return meta == nullptr ? 0 : meta->output_nr;
}

Tensor Tensor::grad() const {
  const AutogradMetaImpl* meta = meta_of(*this);
  return meta == nullptr ? Tensor() : meta->grad;
}

void Tensor::set_grad(const Tensor& grad) const {
  if (grad.defined()) {
    check<AutogradError>(grad.sizes() == sizes() && grad.dtype() == dtype(),
                         "set_grad: gradient of shape ", grad.sizes(), " and dtype ", grad.dtype(),
                         " does not match the tensor's shape ", sizes(), " and dtype ", dtype());
  }
  AutogradMetaImpl& meta = ensure_meta(*this);
  meta.grad = grad;
  meta.grad_owned = false;  // the caller may alias it: accumulate out of place
}

void Tensor::zero_grad(bool set_to_none) const {
  AutogradMetaImpl* meta = meta_of(*this);
  if (meta == nullptr || !meta->grad.defined()) return;
  if (set_to_none) {
    meta->grad = Tensor();
  } else if (!meta->grad.requires_grad()) {
    meta->grad.fill_(0);  // in place, like PyTorch: handles to .grad see the zeros
  } else {                // a gradient with history (create_graph): start a fresh buffer instead
    meta->grad = zeros(sizes(), dtype());
    meta->grad_owned = true;
  }
}

void Tensor::retain_grad() const {
  check<AutogradError>(requires_grad(),
                       "retain_grad: can't retain_grad on a tensor that has requires_grad=false");
  AutogradMetaImpl& meta = ensure_meta(*this);
  if (meta.grad_fn == nullptr || meta.retains_grad) return;  // leaves always keep .grad
  meta.retains_grad = true;
  meta.grad_fn->add_retained_grad(meta.output_nr, meta.weak_from_this());
}

bool Tensor::retains_grad() const {
  const AutogradMetaImpl* meta = meta_of(*this);
  return meta != nullptr && meta->retains_grad;
}

void Tensor::backward(const Tensor& gradient, std::optional<bool> retain_graph,
                      bool create_graph) const {
  autograd::backward({*this},
                     gradient.defined() ? autograd::tensor_list{gradient} : autograd::tensor_list{},
                     retain_graph, create_graph);
}

}  // namespace aclgrad
