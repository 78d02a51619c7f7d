#include "autograd/hooks.h"

#include <algorithm>
#include <atomic>

#include "autograd/error.h"
#include "autograd/meta.h"

namespace aclgrad::autograd {

uint64_t register_post_accumulate_grad_hook(const Tensor& leaf, PostAccumulateGradHook hook) {
  check<AutogradError>(leaf.defined(), "register_post_accumulate_grad_hook: leaf is undefined");
  check<AutogradError>(leaf.requires_grad() && leaf.is_leaf(),
                       "register_post_accumulate_grad_hook: expected a leaf tensor that requires "
                       "grad, got a tensor of shape ",
                       leaf.sizes(),
                       leaf.is_leaf() ? " with requires_grad=false" : " with history");
  check<AutogradError>(static_cast<bool>(hook), "register_post_accumulate_grad_hook: empty hook");
  static std::atomic<uint64_t> next_handle{1};
  const uint64_t handle = next_handle++;
  ensure_meta(leaf).post_accumulate_hooks.emplace_back(handle, std::move(hook));
  return handle;
}

bool remove_post_accumulate_grad_hook(const Tensor& leaf, uint64_t handle) {
  AutogradMetaImpl* meta = leaf.defined() ? meta_of(leaf) : nullptr;
  if (meta == nullptr) return false;
  auto& hooks = meta->post_accumulate_hooks;
  const auto it = std::find_if(hooks.begin(), hooks.end(),
                               [handle](const auto& entry) { return entry.first == handle; });
  if (it == hooks.end()) return false;
  hooks.erase(it);
  return true;
}

}  // namespace aclgrad::autograd
