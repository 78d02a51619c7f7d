// SGD with momentum, dampening, Nesterov and weight decay: PyTorch 1.13's _single_tensor_sgd.
#include "autograd/grad_mode.h"
#include "nn/optim.h"
#include "nn/optim_kernel.h"
#include "tensor/creation.h"

namespace aclgrad::optim {

Options SGDOptions::to_map() const {
  return {{"lr", lr},
          {"momentum", momentum},
          {"dampening", dampening},
          {"weight_decay", weight_decay},
          {"nesterov", nesterov ? 1.0 : 0.0},
          {"maximize", maximize ? 1.0 : 0.0}};
}

SGD::SGD(std::vector<Tensor> params, const SGDOptions& options)
    : SGD(std::vector<ParamGroup>{ParamGroup{std::move(params), {}}}, options) {}

SGD::SGD(std::vector<ParamGroup> groups, const SGDOptions& options)
    : Optimizer("SGD", options.to_map()) {
  validate(defaults());
  for (ParamGroup& g : groups) add_param_group(std::move(g));
}

void SGD::validate(const Options& o) const {
  check(o.at("lr") >= 0, "SGD: invalid learning rate ", o.at("lr"));
  check(o.at("momentum") >= 0, "SGD: invalid momentum value ", o.at("momentum"));
  check(o.at("weight_decay") >= 0, "SGD: invalid weight_decay value ", o.at("weight_decay"));
  check(o.at("nesterov") == 0 || (o.at("momentum") > 0 && o.at("dampening") == 0),
        "SGD: Nesterov momentum requires a momentum and zero dampening (momentum ",
        o.at("momentum"), ", dampening ", o.at("dampening"), ")");
}

namespace {

template <typename T>
void sgd_update(const Tensor& p, const Tensor& grad, Tensor* buf, bool first, double lr_d,
                double momentum_d, double dampening_d, double wd_d, bool nesterov, bool maximize) {
  // Scalars are rounded to the parameter type once, as PyTorch's kernels do with alpha.
  const T neg_lr = static_cast<T>(-lr_d), wd = static_cast<T>(wd_d);
  const T momentum = static_cast<T>(momentum_d), keep = static_cast<T>(1 - dampening_d);
  const bool decay = wd_d != 0;
  if (buf == nullptr) {  // plain SGD
    detail::for_each_param_element<T>(p, grad, [=](T& x, T g) {
      if (maximize) g = -g;
      if (decay) g = g + wd * x;
      x = x + neg_lr * g;
    });
  } else {
    detail::for_each_param_element<T>(
        p, grad,
        [=](T& x, T g, T& b) {
          if (maximize) g = -g;
          if (decay) g = g + wd * x;
          b = first ? g : b * momentum + keep * g;  // first step: buf = clone(g), no dampening
          g = nesterov ? g + momentum * b : b;
          x = x + neg_lr * g;
        },
        *buf);
  }
}

}  // namespace

void SGD::step() {
  NoGradGuard no_grad;
  for (ParamGroup& group : param_groups()) {
    const double lr = group.get("lr"), momentum = group.get("momentum");
    const double dampening = group.get("dampening"), wd = group.get("weight_decay");
    const bool nesterov = group.get("nesterov") != 0, maximize = group.get("maximize") != 0;
    for (const Tensor& p : group.params) {
      const Tensor grad = p.grad();
      if (!grad.defined()) continue;
      Tensor* buf = nullptr;
      bool first = false;
      if (momentum != 0) {
        ParamState& s = state(p);
        Tensor& b = s["momentum_buffer"];
        first = !b.defined();
        if (first) b = empty(p.sizes(), p.dtype());
        buf = &b;
      }
      dispatch_floating_dtype(p.dtype(), "SGD", [&]<typename T>() {
        if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
          sgd_update<T>(p, grad, buf, first, lr, momentum, dampening, wd, nesterov, maximize);
        } else {
          check<DtypeError>(false, "SGD: unsupported parameter dtype ", p.dtype());
        }
      });
      p.bump_version();
      if (buf != nullptr) buf->bump_version();
    }
  }
}

}  // namespace aclgrad::optim
