#include "autograd/autocast_mode.h"

#include <map>
#include <utility>

namespace aclgrad {

namespace {

struct CachedCast {
  Tensor source;  // keeps the key's impl alive
  Tensor cast;
  uint64_t version = 0;  // source's version when cast: a later in-place change makes it stale
};

struct AutocastState {
  bool enabled = false;
  Dtype dtype = Dtype::BFloat16;
  int nesting = 0;  // live AutocastGuards
  std::map<std::pair<const TensorImpl*, Dtype>, CachedCast> cache;
};

thread_local AutocastState state;

Dtype checked_dtype(Dtype dtype) {
  check<DtypeError>(dtype == Dtype::BFloat16 || dtype == Dtype::Float16,
                    "AutocastGuard: dtype must be bfloat16 or float16 (the lower precision ops "
                    "run in), got ",
                    dtype);
  return dtype;
}

}  // namespace

bool AutocastMode::is_enabled() {
  return state.enabled;
}

Dtype AutocastMode::dtype() {
  return state.dtype;
}

AutocastGuard::AutocastGuard(Dtype dtype, bool enabled)
    : previous_enabled_(state.enabled), previous_dtype_(state.dtype) {
  state.dtype = checked_dtype(dtype);
  state.enabled = enabled;
  ++state.nesting;
}

AutocastGuard::AutocastGuard(bool enabled)
    : previous_enabled_(state.enabled), previous_dtype_(state.dtype) {
  state.enabled = enabled;
  ++state.nesting;
}

AutocastGuard::~AutocastGuard() {
  state.enabled = previous_enabled_;
  state.dtype = previous_dtype_;
  if (--state.nesting == 0) state.cache.clear();
}

namespace autocast_detail {

Suspend::Suspend() : previous_(state.enabled) {
  state.enabled = false;
}

Suspend::~Suspend() {
  state.enabled = previous_;
}

Tensor find_cached_cast(const Tensor& source, Dtype dtype) {
  const auto it = state.cache.find({source.impl(), dtype});
  if (it == state.cache.end() || it->second.version != source.version()) return Tensor();
  return it->second.cast;
}

void store_cached_cast(const Tensor& source, const Tensor& cast) {
  if (state.nesting == 0) return;  // no guard to clear it: never cache
  state.cache[{source.impl(), cast.dtype()}] = {source, cast, source.version()};
}

size_t cached_cast_count() {
  return state.cache.size();
}

}  // namespace autocast_detail

}  // namespace aclgrad
