#include "handles.h"

#include <mutex>
#include <unordered_map>

namespace aclnn_cpu {
namespace {

struct HandleRegistry {
  std::mutex mutex;
  std::unordered_map<const void*, HandleKind> live;
};

HandleRegistry& handles() {
  static HandleRegistry* r = new HandleRegistry;  // never destroyed: handles outlive main
  return *r;
}

// The message of a pointer that is not a live object of `kind` (r.mutex held).
std::string not_live(const HandleRegistry& r, const void* p, HandleKind kind, const char* param) {
  auto it = r.live.find(p);
  if (it != r.live.end()) {
    return cat(param, " ", p, " is an ", handle_kind_name(it->second), ", not an ",
               handle_kind_name(kind));
  }
  return cat(param, " ", p, " is not a live ", handle_kind_name(kind),
             ": it was already destroyed or never created by aclCreate");
}

// p's entry, or throws ApiError (161002) unless p is a live object of `kind` (r.mutex held).
std::unordered_map<const void*, HandleKind>::iterator find_live(HandleRegistry& r, const void* p,
                                                                HandleKind kind,
                                                                const char* param) {
  auto it = r.live.find(p);
  if (it == r.live.end() || it->second != kind)
    fail(ACLNN_ERR_PARAM_INVALID, not_live(r, p, kind, param));
  return it;
}

}  // namespace

const char* handle_kind_name(HandleKind kind) {
  switch (kind) {
    case HandleKind::kTensor:
      return "aclTensor";
    case HandleKind::kScalar:
      return "aclScalar";
    case HandleKind::kIntArray:
      return "aclIntArray";
    case HandleKind::kFloatArray:
      return "aclFloatArray";
    case HandleKind::kBoolArray:
      return "aclBoolArray";
    case HandleKind::kTensorList:
      return "aclTensorList";
  }
  return "handle";
}

void register_handle(const void* p, HandleKind kind) {
  auto& r = handles();
  std::lock_guard lock(r.mutex);
  r.live[p] = kind;
}

void unregister_handle(const void* p, HandleKind kind, const char* param) {
  auto& r = handles();
  std::lock_guard lock(r.mutex);
  r.live.erase(find_live(r, p, kind, param));
}

void require_live(const void* p, HandleKind kind, const char* param) {
  auto& r = handles();
  std::lock_guard lock(r.mutex);
  find_live(r, p, kind, param);
}

}  // namespace aclnn_cpu
