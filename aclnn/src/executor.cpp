// The executor registry and phase 2's common part.
//
// The registry owns every live executor through a shared_ptr, and a launch holds its own
// reference while the plan runs: destroying (or consuming) an executor only drops the registry's
// reference, so a repeatable executor destroyed on one thread while another thread is still
// launching it is freed when that launch returns, not under it.
#include <memory>
#include <mutex>
#include <unordered_map>

#include "error.h"
#include "meta.h"

namespace aclnn_cpu {
namespace {

struct ExecutorRegistry {
  std::mutex mutex;
  std::unordered_map<aclOpExecutor*, std::shared_ptr<aclOpExecutor>> live;
};

ExecutorRegistry& executors() {
  static ExecutorRegistry* r = new ExecutorRegistry;  // never destroyed: see runtime.cpp
  return *r;
}

// A reference to a live executor (null if it is not live); with `take`, it leaves the registry.
std::shared_ptr<aclOpExecutor> find_live(aclOpExecutor* e, bool take) {
  auto& r = executors();
  std::lock_guard lock(r.mutex);
  auto it = r.live.find(e);
  if (it == r.live.end()) return nullptr;
  std::shared_ptr<aclOpExecutor> held = it->second;
  if (take) r.live.erase(it);
  return held;
}

}  // namespace

aclOpExecutor* register_executor(aclOpExecutor* executor) {
  std::shared_ptr<aclOpExecutor> owned(executor);
  auto& r = executors();
  std::lock_guard lock(r.mutex);
  r.live.emplace(executor, std::move(owned));
  return executor;
}

aclnnStatus launch(const char* api, void* workspace, uint64_t workspace_size,
                   aclOpExecutor* executor, aclrtStream stream) {
  return guard_aclnn(api, [&] {
    check(executor != nullptr, ACLNN_ERR_PARAM_NULLPTR, "executor is null");
    // Peek first: a failed launch (bad workspace or stream) leaves the executor usable. `held`
    // keeps the executor alive until this launch returns, whoever destroys it meanwhile.
    const std::shared_ptr<aclOpExecutor> held = find_live(executor, false);
    check(held != nullptr, ACLNN_ERR_PARAM_INVALID, "executor ", executor,
          " is not live: it was already consumed by a launch (call aclSetAclOpExecutorRepeatable "
          "to launch it again) or destroyed");
    check(held->api == api, ACLNN_ERR_PARAM_INVALID, "executor was made by ", held->api,
          "GetWorkspaceSize, not by ", api, "GetWorkspaceSize");
    check(workspace_size >= held->workspace_bytes, ACLNN_ERR_PARAM_INVALID, "workspaceSize ",
          workspace_size, " is smaller than the ", held->workspace_bytes,
          " bytes phase 1 asked for");
    check(workspace != nullptr || held->workspace_bytes == 0, ACLNN_ERR_PARAM_NULLPTR,
          "workspace is null but ", held->workspace_bytes, " bytes are needed");
    check(stream_is_valid(stream), ACLNN_ERR_PARAM_INVALID, "stream ", stream,
          " is not a live stream");
    if (!held->repeatable.load()) {
      check(find_live(executor, true) != nullptr, ACLNN_ERR_PARAM_INVALID,
            "executor was consumed or destroyed concurrently by another thread");
    }
    held->run(workspace);
    return ACLNN_SUCCESS;
  });
}

}  // namespace aclnn_cpu

using namespace aclnn_cpu;

extern "C" {

aclnnStatus aclSetAclOpExecutorRepeatable(aclOpExecutor* executor) {
  return guard_aclnn("aclSetAclOpExecutorRepeatable", [&] {
    check(executor != nullptr, ACLNN_ERR_PARAM_NULLPTR, "executor is null");
    const std::shared_ptr<aclOpExecutor> held = find_live(executor, false);
    check(held != nullptr, ACLNN_ERR_PARAM_INVALID, "executor ", executor,
          " is not live (already consumed or destroyed)");
    held->repeatable.store(true);
    return ACLNN_SUCCESS;
  });
}

// Drops the registry's reference: a launch running on another thread keeps its own until it
// returns, so the plan is freed after it.
aclnnStatus aclDestroyAclOpExecutor(aclOpExecutor* executor) {
  return guard_aclnn("aclDestroyAclOpExecutor", [&] {
    if (executor == nullptr) return ACLNN_SUCCESS;
    check(find_live(executor, true) != nullptr, ACLNN_ERR_PARAM_INVALID, "executor ", executor,
          " is not live (already consumed or destroyed)");
    return ACLNN_SUCCESS;
  });
}

}  // extern "C"
