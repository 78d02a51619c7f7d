// Adam and AdamW: PyTorch 1.13's _single_tensor_adam / _single_tensor_adamw, same order of
// operations (each PyTorch tensor op becomes one rounding in the parameter's type here).
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>

#include "autograd/grad_mode.h"
#include "nn/optim.h"
#include "nn/optim_kernel.h"
#include "tensor/creation.h"

namespace aclgrad::optim {

Options AdamOptions::to_map() const {
  return {{"lr", lr},
          {"beta1", beta1},
          {"beta2", beta2},
          {"eps", eps},
          {"weight_decay", weight_decay},
          {"amsgrad", amsgrad ? 1.0 : 0.0},
          {"maximize", maximize ? 1.0 : 0.0}};
}

Adam::Adam(std::vector<Tensor> params, const AdamOptions& options)
    : Adam("Adam", false, std::vector<ParamGroup>{ParamGroup{std::move(params), {}}}, options) {}

Adam::Adam(std::vector<ParamGroup> groups, const AdamOptions& options)
    : Adam("Adam", false, std::move(groups), options) {}

Adam::Adam(std::string name, bool decoupled, std::vector<ParamGroup> groups,
           const AdamOptions& options)
    : Optimizer(std::move(name), options.to_map()), decoupled_(decoupled) {
  validate(defaults());
  for (ParamGroup& g : groups) add_param_group(std::move(g));
}

AdamW::AdamW(std::vector<Tensor> params, const AdamWOptions& options)
    : Adam("AdamW", true, std::vector<ParamGroup>{ParamGroup{std::move(params), {}}}, options) {}

AdamW::AdamW(std::vector<ParamGroup> groups, const AdamWOptions& options)
    : Adam("AdamW", true, std::move(groups), options) {}

void Adam::validate(const Options& o) const {
  check(o.at("lr") >= 0, name(), ": invalid learning rate ", o.at("lr"));
  check(o.at("eps") >= 0, name(), ": invalid epsilon value ", o.at("eps"));
  check(o.at("beta1") >= 0 && o.at("beta1") < 1, name(),
        ": invalid beta parameter at index 0: ", o.at("beta1"));
  check(o.at("beta2") >= 0 && o.at("beta2") < 1, name(),
        ": invalid beta parameter at index 1: ", o.at("beta2"));
  check(o.at("weight_decay") >= 0, name(), ": invalid weight_decay value ", o.at("weight_decay"));
}

namespace {

struct AdamScalars {
  double lr, beta1, beta2, eps, weight_decay;
  bool amsgrad, maximize, decoupled;
  int64_t step;
};

template <typename T>
void adam_update(const Tensor& p, const Tensor& grad, const Tensor& m, const Tensor& v,
                 const Tensor& vmax, const AdamScalars& a) {
  const double bias_correction1 = 1 - std::pow(a.beta1, static_cast<double>(a.step));
  const double bias_correction2 = 1 - std::pow(a.beta2, static_cast<double>(a.step));
  const T neg_step_size = static_cast<T>(-(a.lr / bias_correction1));
  const T bc2_sqrt = static_cast<T>(std::sqrt(bias_correction2));
  const T beta1 = static_cast<T>(a.beta1), beta2 = static_cast<T>(a.beta2);
  const T one_minus_beta1 = static_cast<T>(1 - a.beta1);
  const T one_minus_beta2 = static_cast<T>(1 - a.beta2);
  const T eps = static_cast<T>(a.eps), wd = static_cast<T>(a.weight_decay);
  const T decay = static_cast<T>(1 - a.lr * a.weight_decay);  // AdamW
  const bool coupled = !a.decoupled && a.weight_decay != 0, maximize = a.maximize;
  const bool decoupled = a.decoupled;  // PyTorch multiplies even when weight_decay == 0
  auto moments = [=](T& x, T& g, T& m_, T& v_) {
    if (maximize) g = -g;
    if (decoupled) x = x * decay;
    if (coupled) g = g + wd * x;
    m_ = m_ * beta1 + one_minus_beta1 * g;
    v_ = v_ * beta2 + one_minus_beta2 * g * g;  // addcmul: (value * g) * g
  };
  auto apply_root = [=](T& x, T m_, T root) {  // root = sqrt(v) (or sqrt(max v))
    const T denom = root / bc2_sqrt + eps;
    x = x + neg_step_size * m_ / denom;  // addcdiv: (value * m) / denom
  };
  const bool amsgrad = a.amsgrad;
  const bool contiguous = p.is_contiguous() && grad.is_contiguous() && m.is_contiguous() &&
                          v.is_contiguous() && (!amsgrad || vmax.is_contiguous());
  if (contiguous) {
    // Blocks: moments (vectorised), sqrt of the block (detail::sqrt_in_place, vectorised), then
    // the update (vectorised). Same operations, same order, as the element loop below.
    T* x = p.data_ptr<T>();
    const T* g = grad.data_ptr<T>();
    T* m_ = m.data_ptr<T>();
    T* v_ = v.data_ptr<T>();
    T* vm = amsgrad ? vmax.data_ptr<T>() : nullptr;
    constexpr int64_t kBlock = 256;
    auto update = [&](int64_t begin, int64_t end) {
      // Local copies of the bodies: their captured scalars cannot alias the buffers, so they
      // stay in registers and the loops vectorise.
      const auto moments_ = moments;
      const auto apply_root_ = apply_root;
      alignas(64) T root[kBlock];
      for (int64_t start = begin; start < end; start += kBlock) {
        const int64_t len = std::min(kBlock, end - start);
        T* xb = x + start;
        T* mb = m_ + start;
        T* vb = v_ + start;
        const T* gb = g + start;
        if (amsgrad) {
          T* vmb = vm + start;
          for (int64_t i = 0; i < len; ++i) {
            T gi = gb[i];
            moments_(xb[i], gi, mb[i], vb[i]);
            vmb[i] = std::max(vmb[i], vb[i]);
            root[i] = vmb[i];
          }
        } else {
          for (int64_t i = 0; i < len; ++i) {
            T gi = gb[i];
            moments_(xb[i], gi, mb[i], vb[i]);
            root[i] = vb[i];
          }
        }
        detail::sqrt_in_place(root, len);
        for (int64_t i = 0; i < len; ++i) apply_root_(xb[i], mb[i], root[i]);
      }
    };
    // Large parameters: disjoint ranges of kParallelGrain elements (a multiple of kBlock) as
    // oneTBB tasks; every element gets the same operations either way.
    const int64_t n = p.numel(), tasks = n / kParallelGrain;
    if (tasks < 2) {
      update(0, n);
    } else {
      tbb::parallel_for(
          tbb::blocked_range<int64_t>(0, tasks), [&](const tbb::blocked_range<int64_t>& r) {
            update(r.begin() * kParallelGrain, r.end() == tasks ? n : r.end() * kParallelGrain);
          });
    }
  } else if (amsgrad) {
    detail::for_each_param_element<T>(
        p, grad,
        [=](T& x, T g, T& m_, T& v_, T& vm) {
          moments(x, g, m_, v_);
          vm = std::max(vm, v_);
          apply_root(x, m_, std::sqrt(vm));
        },
        m, v, vmax);
  } else {
    detail::for_each_param_element<T>(
        p, grad,
        [=](T& x, T g, T& m_, T& v_) {
          moments(x, g, m_, v_);
          apply_root(x, m_, std::sqrt(v_));
        },
        m, v);
  }
}

}  // namespace

void Adam::step() {
  NoGradGuard no_grad;
  for (ParamGroup& group : param_groups()) {
    AdamScalars a{group.get("lr"),
                  group.get("beta1"),
                  group.get("beta2"),
                  group.get("eps"),
                  group.get("weight_decay"),
                  group.get("amsgrad") != 0,
                  group.get("maximize") != 0,
                  decoupled_,
                  0};
    for (const Tensor& p : group.params) {
      const Tensor grad = p.grad();
      if (!grad.defined()) continue;
      ParamState& s = state(p);
      Tensor& step_t = s["step"];
      if (!step_t.defined()) {  // lazy state initialisation, as in PyTorch
        step_t = zeros({}, Dtype::Int64);
        s["exp_avg"] = zeros(p.sizes(), p.dtype());
        s["exp_avg_sq"] = zeros(p.sizes(), p.dtype());
      }
      if (a.amsgrad && s.count("max_exp_avg_sq") == 0) {
        s["max_exp_avg_sq"] = zeros(p.sizes(), p.dtype());
      }
      a.step = step_t.item<int64_t>() + 1;
      step_t.fill_(a.step);
      const Tensor& m = s.at("exp_avg");
      const Tensor& v = s.at("exp_avg_sq");
      const Tensor vm = a.amsgrad ? s.at("max_exp_avg_sq") : Tensor();
      dispatch_floating_dtype(p.dtype(), name().c_str(), [&]<typename T>() {
        if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
          adam_update<T>(p, grad, m, v, vm, a);
        } else {
          check<DtypeError>(false, name(), ": unsupported parameter dtype ", p.dtype());
        }
      });
      p.bump_version();
      m.bump_version();
      v.bump_version();
      if (vm.defined()) vm.bump_version();
    }
  }
}

}  // namespace aclgrad::optim
