// Dynamic loss scaling for float16 training, with the semantics of PyTorch 1.13's
// torch.cuda.amp.GradScaler. float16 keeps only 5 exponent bits: small gradients underflow to 0
// unless the loss is multiplied by a large scale before backward; the gradients are divided by
// it again before the optimizer sees them. bfloat16 has float32's range and needs no scaler.
//
//   amp::GradScaler scaler;                        // scale 65536, x2 every 2000 clean steps
//   for (...) {
//     Tensor loss;
//     { AutocastGuard autocast(Dtype::Float16); loss = cross_entropy(model(x), y); }
//     opt.zero_grad();
//     scaler.scale(loss).backward();
//     scaler.unscale_(opt);                         // optional: before clipping
//     nn::utils::clip_grad_norm_(params, 1.0);
//     scaler.step(opt);                             // skipped if a gradient is inf or NaN
//     scaler.update();                              // x0.5 after a skip, x2 after N clean steps
//   }
//
// The scale is a float32 value, updated as PyTorch's _amp_update_scale_ does (in float32): after
// a step with an inf/NaN gradient scale *= backoff_factor and the count of clean steps restarts;
// otherwise the count grows, and when it reaches growth_interval scale *= growth_factor (unless
// that is not finite) and the count restarts.
#pragma once

#include <cstdint>
#include <map>

#include "../nn/optim.h"
#include "../tensor/tensor.h"

namespace aclgrad::amp {

/// torch.cuda.amp.GradScaler's constructor arguments and defaults.
struct GradScalerOptions {
  double init_scale = 65536.0;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
  /// A disabled scaler is a pass-through: scale() returns its input, step() just steps.
  bool enabled = true;
};

class GradScaler {
 public:
  /// Error naming the option for a non-positive or non-finite scale, growth_factor <= 1,
  /// backoff_factor outside (0, 1) or growth_interval < 1 (PyTorch's asserts).
  explicit GradScaler(const GradScalerOptions& options = {});

  /// outputs * scale, recorded (backward gives scaled gradients). A 16-bit output is cast to
  /// float32 first, so that the scaled loss cannot overflow float16 (PyTorch promotes the same
  /// way). Disabled: outputs itself.
  Tensor scale(const Tensor& outputs) const;

  /// Divides the gradients of optimizer's parameters by the scale, in place, and records whether
  /// any element was inf or NaN. Call it before anything that reads gradients (clipping); step()
  /// then does not divide again. Once per optimizer between update()s: Error if called again,
  /// or after step(). (The optimizers take float32 and float64 parameters only: the master
  /// weights stay float32 and autocast lowers the ops, so gradients are never 16-bit.)
  void unscale_(optim::Optimizer& optimizer);

  /// unscale_(optimizer) unless already done, then optimizer.step() only if no gradient was inf
  /// or NaN. Returns whether the step ran. Error if called twice before update(), or when no
  /// parameter of optimizer has a gradient. Disabled: optimizer.step(), returns true.
  bool step(optim::Optimizer& optimizer);

  /// Backs off or grows the scale from the inf checks of every optimizer since the last
  /// update() (Error if there were none), and starts a new iteration.
  void update();
  /// Sets the scale to new_scale instead (the count of clean steps is kept), and starts a new
  /// iteration.
  void update(double new_scale);

  /// The current scale (1 when disabled).
  double get_scale() const { return enabled_ ? static_cast<double>(scale_) : 1.0; }
  /// Clean steps since the scale last changed.
  int64_t growth_tracker() const { return growth_tracker_; }
  const GradScalerOptions& options() const { return options_; }
  bool is_enabled() const { return enabled_; }

  /// Metadata "scale", "growth_factor", "backoff_factor", "growth_interval", "growth_tracker"
  /// (PyTorch's keys; "_growth_tracker" there); empty when disabled.
  optim::StateDict state_dict() const;
  /// Restores a state_dict(); Error naming the key if one is missing or not a number, or if the
  /// dict is empty (saved from a disabled scaler). Nothing changes on error.
  void load_state_dict(const optim::StateDict& dict);

 private:
  enum class Stage { kReady, kUnscaled, kStepped };
  struct OptimizerState {
    Stage stage = Stage::kReady;
    bool checked = false;    // an inf check ran (some parameter had a gradient)
    bool found_inf = false;  // it found an inf or NaN
  };

  GradScalerOptions options_;
  bool enabled_;
  float scale_;
  int64_t growth_tracker_ = 0;
  std::map<const optim::Optimizer*, OptimizerState> per_optimizer_;
};

}  // namespace aclgrad::amp
