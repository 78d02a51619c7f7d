// Autocast mode: whether ops run in a lower precision (PyTorch's torch.autocast for the CPU).
// Thread-local, off by default. Which op runs in which dtype is ops/autocast.h's policy table;
// this file holds only the state, so that the engine (below ops/) can turn it off while it runs a
// backward: backward ops run in the dtypes their forward recorded.
//
//   {
//     aclgrad::AutocastGuard autocast(Dtype::BFloat16);  // linear, matmul, conv* in bf16
//     loss = cross_entropy(model(x), y);                 // losses in float32
//     { aclgrad::AutocastGuard off(false); z = linear(h, w); }  // float32 again
//   }
//   loss.backward();  // gradients reach the float32 parameters in float32
#pragma once

#include "../tensor/tensor.h"

namespace aclgrad {

class AutocastMode {
 public:
  /// True when ops on this thread apply the autocast policy.
  static bool is_enabled();
  /// The lower precision of this thread's autocast (bfloat16 unless a guard chose float16).
  static Dtype dtype();
};

/// Autocast on (to dtype, float16 or bfloat16) or off for a scope; restores the previous state
/// on exit. Guards nest; within the outermost one, the lower-precision casts of float32 leaves
/// that require grad (parameters) are cached, so a weight used several times is cast once per
/// forward, and the cache is cleared when the outermost guard exits. DtypeError naming the
/// argument for any other dtype.
class AutocastGuard {
 public:
  explicit AutocastGuard(Dtype dtype, bool enabled = true);
  /// Turns autocast on or off keeping the current dtype (off inside an autocast region).
  explicit AutocastGuard(bool enabled);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  bool previous_enabled_;
  Dtype previous_dtype_;
};

namespace autocast_detail {

/// Turns autocast off for a scope without touching the nesting or the cache: ops hold one while
/// they run on inputs already cast (so the ops they are made of do not cast again), and the
/// engine while it runs a backward.
class Suspend {
 public:
  Suspend();
  ~Suspend();
  Suspend(const Suspend&) = delete;
  Suspend& operator=(const Suspend&) = delete;

 private:
  bool previous_;
};

/// The cached cast of source to dtype (made while source had its current version), or an
/// undefined tensor.
Tensor find_cached_cast(const Tensor& source, Dtype dtype);
/// Remembers cast as source's cast to cast.dtype() until the outermost guard exits. Keeps
/// source alive meanwhile (the key is its impl).
void store_cached_cast(const Tensor& source, const Tensor& cast);
/// Entries in this thread's cache (for tests).
size_t cached_cast_count();

}  // namespace autocast_detail

}  // namespace aclgrad
