// Gradient clipping, after PyTorch 1.13's torch/nn/utils/clip_grad.py.
#include "nn/clip.h"

#include <algorithm>
#include <cmath>

#include "autograd/grad_mode.h"
#include "tensor/iter.h"

namespace aclgrad::nn::utils {

namespace {

std::vector<Tensor> defined_grads(const std::vector<Tensor>& params, const char* op) {
  std::vector<Tensor> grads;
  for (const Tensor& p : params) {
    const Tensor g = p.defined() ? p.grad() : Tensor();
    if (!g.defined()) continue;
    check<DtypeError>(g.dtype() == Dtype::Float32 || g.dtype() == Dtype::Float64, op,
                      ": gradients must be float32 or float64, got ", g.dtype());
    grads.push_back(g);
  }
  return grads;
}

enum class Norm { Two, Inf, P };

// The norm's accumulation over g in double: sum of squares (Two), max |x| (Inf, NaN if any
// element is NaN) or sum of |x|^p (P). Contiguous runs use independent partial sums so the
// additions pipeline (and vectorise).
template <typename T>
double accumulate(const Tensor& g, Norm kind, double p) {
  double total = 0;
  bool nan = false;
  for_each_strided(g, {}, [&](int64_t n, char* base, const char* const*, const int64_t* s) {
    auto at = [&](int64_t i) {
      return static_cast<double>(*reinterpret_cast<const T*>(base + i * s[0]));
    };
    if (kind == Norm::Two && s[0] == sizeof(T)) {
      const T* x = reinterpret_cast<const T*>(base);
      constexpr int64_t kLanes = 8;
      double part[kLanes] = {};
      int64_t i = 0;
      for (; i + kLanes <= n; i += kLanes) {
        for (int64_t k = 0; k < kLanes; ++k) {
          const double v = static_cast<double>(x[i + k]);
          part[k] += v * v;
        }
      }
      for (; i < n; ++i) total += at(i) * at(i);
      for (double v : part) total += v;
    } else if (kind == Norm::Two) {
      for (int64_t i = 0; i < n; ++i) total += at(i) * at(i);
    } else if (kind == Norm::Inf) {
      for (int64_t i = 0; i < n; ++i) {
        const double a = std::abs(at(i));
        nan |= a != a;
        total = a > total ? a : total;
      }
    } else {
      for (int64_t i = 0; i < n; ++i) total += std::pow(std::abs(at(i)), p);
    }
  });
  return nan ? NAN : total;
}

double accumulate(const Tensor& g, Norm kind, double p) {
  return g.dtype() == Dtype::Float64 ? accumulate<double>(g, kind, p)
                                     : accumulate<float>(g, kind, p);
}

// g = op(g) in place, element by element in g's type.
template <typename F>
void update_in_place(const Tensor& g, F op) {
  dispatch_floating_dtype(g.dtype(), "clip_grad", [&]<typename T>() {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      map_elementwise<T, T>(g, {g}, [&](T x) { return op(x); });
    }
  });
  g.bump_version();
}

}  // namespace

double clip_grad_norm_(const std::vector<Tensor>& params, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  check(norm_type > 0, "clip_grad_norm_: norm_type must be positive or infinity, got ", norm_type);
  NoGradGuard no_grad;
  const std::vector<Tensor> grads = defined_grads(params, "clip_grad_norm_");
  if (grads.empty()) return 0.0;
  double total = 0;
  if (std::isinf(norm_type)) {
    for (const Tensor& g : grads) {
      const double m = accumulate(g, Norm::Inf, 0);
      total = std::isnan(m) || std::isnan(total) ? NAN : std::max(total, m);
    }
  } else if (norm_type == 2) {
    for (const Tensor& g : grads) total += accumulate(g, Norm::Two, 2);
    total = std::sqrt(total);
  } else {
    for (const Tensor& g : grads) total += accumulate(g, Norm::P, norm_type);
    total = std::pow(total, 1 / norm_type);
  }
  check(!error_if_nonfinite || std::isfinite(total), "clip_grad_norm_: the total norm of order ",
        norm_type, " for gradients from `parameters` is non-finite (", total,
        "), so it cannot be clipped; set error_if_nonfinite=false to clip anyway");
  const double clip_coef = max_norm / (total + 1e-6);
  // PyTorch multiplies by min(coef, 1); multiplying by 1 changes nothing, so skip it. A NaN
  // total norm makes every gradient NaN, as in PyTorch.
  if (clip_coef < 1 || std::isnan(clip_coef)) {
    for (const Tensor& g : grads) {
      update_in_place(g, [c = clip_coef](auto x) { return x * static_cast<decltype(x)>(c); });
    }
  }
  return total;
}

void clip_grad_value_(const std::vector<Tensor>& params, double clip_value) {
  NoGradGuard no_grad;
  for (const Tensor& g : defined_grads(params, "clip_grad_value_")) {
    update_in_place(g, [v = clip_value](auto x) {
      using T = decltype(x);
      // clamp(x, -v, v), NaN stays NaN as in torch.clamp
      const T lo = static_cast<T>(-v), hi = static_cast<T>(v);
      return x < lo ? lo : (x > hi ? hi : x);
    });
  }
}

}  // namespace aclgrad::nn::utils
