// GradScaler, after PyTorch 1.13's torch/cuda/amp/grad_scaler.py and its two kernels
// (_amp_foreach_non_finite_check_and_unscale_, _amp_update_scale_).
#include "nn/grad_scaler.h"

#include <cmath>

#include "autograd/grad_mode.h"
#include "nn/optim_kernel.h"
#include "ops/cast.h"
#include "ops/elementwise.h"
#include "tensor/iter.h"

namespace aclgrad::amp {

namespace {

using optim::detail::format_double;
using optim::detail::lookup;
using optim::detail::parse_double;

// g *= inv_scale in place (in g's dtype, as PyTorch's kernel); true if any element of g was inf
// or NaN.
template <typename T>
bool unscale_and_check(const Tensor& g, T inv_scale) {
  bool non_finite = false;
  for_each_strided(g, {}, [&](int64_t n, char* base, const char* const*, const int64_t* s) {
    for (int64_t i = 0; i < n; ++i) {
      T& v = *reinterpret_cast<T*>(base + i * s[0]);
      non_finite |= !std::isfinite(v);
      v *= inv_scale;
    }
  });
  g.bump_version();
  return non_finite;
}

}  // namespace

GradScaler::GradScaler(const GradScalerOptions& options)
    : options_(options), enabled_(options.enabled), scale_(static_cast<float>(options.init_scale)) {
  check(std::isfinite(scale_) && scale_ > 0, "GradScaler: init_scale must be positive and finite ",
        "(as a float32), got ", options.init_scale);
  check(options.growth_factor > 1.0, "GradScaler: growth_factor should be > 1, got ",
        options.growth_factor);
  check(options.backoff_factor > 0.0 && options.backoff_factor < 1.0,
        "GradScaler: backoff_factor should be in (0, 1), got ", options.backoff_factor);
  check(options.growth_interval >= 1, "GradScaler: growth_interval should be >= 1, got ",
        options.growth_interval);
}

Tensor GradScaler::scale(const Tensor& outputs) const {
  if (!enabled_) return outputs;
  check<DtypeError>(outputs.is_floating_point(), "GradScaler::scale: outputs must be floating ",
                    "point, got ", outputs.dtype());
  const bool narrow = outputs.dtype() == Dtype::Float16 || outputs.dtype() == Dtype::BFloat16;
  return mul(narrow ? cast(outputs, Dtype::Float32) : outputs, static_cast<double>(scale_));
}

void GradScaler::unscale_(optim::Optimizer& optimizer) {
  if (!enabled_) return;
  OptimizerState& st = per_optimizer_[&optimizer];
  check(st.stage != Stage::kUnscaled,
        "GradScaler::unscale_: already called on this optimizer since the last update()");
  check(st.stage != Stage::kStepped,
        "GradScaler::unscale_: called after step() (call it "
        "before step(), once per iteration)");
  // PyTorch: the reciprocal in double, rounded to float32.
  const float inv_scale = static_cast<float>(1.0 / static_cast<double>(scale_));
  NoGradGuard no_grad;
  for (const optim::ParamGroup& group : optimizer.param_groups()) {
    for (const Tensor& p : group.params) {
      // The optimizers hold float32 and float64 parameters only, so these are the gradients'
      // dtypes (PyTorch's "Attempting to unscale FP16 gradients" cannot happen here).
      const Tensor g = p.grad();
      if (!g.defined()) continue;
      st.checked = true;
      const bool bad = g.dtype() == Dtype::Float32
                           ? unscale_and_check<float>(g, inv_scale)
                           : unscale_and_check<double>(g, static_cast<double>(inv_scale));
      st.found_inf |= bad;
    }
  }
  st.stage = Stage::kUnscaled;
}

bool GradScaler::step(optim::Optimizer& optimizer) {
  if (!enabled_) {
    optimizer.step();
    return true;
  }
  check(per_optimizer_[&optimizer].stage != Stage::kStepped,
        "GradScaler::step: already called on this optimizer since the last update()");
  if (per_optimizer_[&optimizer].stage == Stage::kReady) unscale_(optimizer);
  OptimizerState& st = per_optimizer_[&optimizer];
  check(st.checked, "GradScaler::step: no inf checks were recorded for this optimizer (none of ",
        "its parameters has a gradient)");
  st.stage = Stage::kStepped;
  if (st.found_inf) return false;
  optimizer.step();
  return true;
}

void GradScaler::update() {
  if (!enabled_) return;
  bool checked = false, found_inf = false;
  for (const auto& [opt, st] : per_optimizer_) checked |= st.checked, found_inf |= st.found_inf;
  check(checked,
        "GradScaler::update: no inf checks were recorded prior to update() (call "
        "step() or unscale_() first)");
  // _amp_update_scale_, in float32.
  if (found_inf) {
    scale_ = scale_ * static_cast<float>(options_.backoff_factor);
    growth_tracker_ = 0;
  } else if (growth_tracker_ + 1 == options_.growth_interval) {
    const float grown = scale_ * static_cast<float>(options_.growth_factor);
    if (std::isfinite(grown)) scale_ = grown;
    growth_tracker_ = 0;
  } else {
    ++growth_tracker_;
  }
  per_optimizer_.clear();
}

void GradScaler::update(double new_scale) {
  if (!enabled_) return;
  const float s = static_cast<float>(new_scale);
  check(std::isfinite(s) && s > 0, "GradScaler::update: new_scale must be positive and finite, ",
        "got ", new_scale);
  scale_ = s;
  per_optimizer_.clear();
}

optim::StateDict GradScaler::state_dict() const {
  optim::StateDict dict;
  if (!enabled_) return dict;
  dict.metadata = {{"scale", format_double(static_cast<double>(scale_))},
                   {"growth_factor", format_double(options_.growth_factor)},
                   {"backoff_factor", format_double(options_.backoff_factor)},
                   {"growth_interval", std::to_string(options_.growth_interval)},
                   {"growth_tracker", std::to_string(growth_tracker_)}};
  return dict;
}

void GradScaler::load_state_dict(const optim::StateDict& dict) {
  check(!dict.metadata.empty(),
        "GradScaler::load_state_dict: the state dict is empty, possibly "
        "because it was saved from a disabled GradScaler");
  auto number = [&](const char* key) { return parse_double(lookup(dict.metadata, key), key); };
  GradScalerOptions o = options_;
  o.init_scale = number("scale");
  o.growth_factor = number("growth_factor");
  o.backoff_factor = number("backoff_factor");
  o.growth_interval = static_cast<int64_t>(number("growth_interval"));
  const double tracker = number("growth_tracker");
  check(tracker >= 0 && tracker == std::floor(tracker),
        "GradScaler::load_state_dict: ", "growth_tracker must be a count, got ", tracker);
  const GradScaler checked(o);  // validates every value before anything changes
  options_ = checked.options_;
  scale_ = checked.scale_;
  growth_tracker_ = static_cast<int64_t>(tracker);
}

}  // namespace aclgrad::amp
