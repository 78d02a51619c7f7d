// Grad mode: whether ops record the graph. Thread-local, on by default (like PyTorch).
//
//   { aclgrad::NoGradGuard no_grad; y = x * 2; }   // y has no grad_fn
#pragma once

namespace aclgrad {

class GradMode {
 public:
  /// True when ops record autograd history on this thread.
  static bool is_enabled();
  static void set_enabled(bool enabled);
};

/// Sets grad mode for a scope and restores the previous mode on exit.
class AutoGradMode {
 public:
  explicit AutoGradMode(bool enabled) : previous_(GradMode::is_enabled()) {
    GradMode::set_enabled(enabled);
  }
  ~AutoGradMode() { GradMode::set_enabled(previous_); }
  AutoGradMode(const AutoGradMode&) = delete;
  AutoGradMode& operator=(const AutoGradMode&) = delete;

 private:
  bool previous_;
};

/// Disables recording for a scope (torch::NoGradGuard).
class NoGradGuard : public AutoGradMode {
 public:
  NoGradGuard() : AutoGradMode(false) {}
};

/// Re-enables recording for a scope, e.g. inside a NoGradGuard.
class EnableGradGuard : public AutoGradMode {
 public:
  EnableGradGuard() : AutoGradMode(true) {}
};

}  // namespace aclgrad
