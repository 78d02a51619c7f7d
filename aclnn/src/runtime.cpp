// The AscendCL runtime on the CPU: init/finalize, one device (the host), streams and memory.
//
// Every handle the runtime hands out is kept in a registry and looked up before use, so a stale,
// repeated or uninitialised handle (CANN samples call aclrtDestroyStream/aclFinalize again on
// their error paths, sometimes with a stream that was never created) yields an error code and a
// message, never a crash. Streams execute at launch: aclnn phase 2 runs synchronously on the
// calling thread, so by the time aclrtSynchronizeStream is called the work is done.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <mutex>
#include <set>

#include "acl/acl.h"
#include "asan.h"
#include "error.h"
#include "meta.h"
#include "runtime_options.h"

namespace aclnn_cpu {
namespace {

constexpr int32_t kDeviceCount = 1;  // device 0 is the host CPU
constexpr size_t kAlignment = 64;

enum class AllocKind { Device, Host };
struct Allocation {
  size_t size;
  AllocKind kind;
};

// Memory released with aclrtFree / aclrtFreeHost is not given back to the C heap at once but kept
// in a quarantine, so a later aclrtMemcpy / aclrtMemset through a stale pointer finds it there and
// is refused: were it freed, the heap could hand the addresses to anything, and a pointer the
// runtime does not know is taken for the caller's host memory. The oldest blocks leave first,
// once more than kQuarantineBlocks are held or their resident bytes exceed kQuarantineBytes;
// their whole pages are returned to the system at once (only the address range stays reserved).
constexpr size_t kQuarantineBlocks = 4096;
constexpr size_t kQuarantineBytes = size_t{64} << 20;
struct Quarantined {
  const char* base;  // its Allocation is freed[base]
  size_t resident;   // bytes still backed by memory after the pages were dropped
};

struct StreamImpl {
  int32_t device;
};

struct Runtime {
  std::mutex mutex;
  bool initialized = false;
  int32_t current_device = -1;  // process-wide (see aclrtSetDevice)
  std::set<StreamImpl*> streams;
  std::map<const char*, Allocation> allocations;  // keyed by base address
  std::map<const char*, Allocation> freed;        // the quarantine, keyed by base address
  std::deque<Quarantined> freed_order;            // the quarantine, oldest first
  size_t freed_resident = 0;
  // aclSysParamOpt values of the current device's default context (index = opt); the context
  // dies with aclrtResetDevice / aclFinalize, and its successor starts at 0.
  int64_t sys_params[2] = {0, 0};
};

Runtime& runtime() {
  static Runtime* r = new Runtime;  // never destroyed: handles may be released during exit
  return *r;
}

// Runs a runtime API body under the error guard (aclError codes).
template <typename Body>
aclError guard_rt(const char* api, Body&& body) noexcept {
  return guard(api, ACL_ERROR_BAD_ALLOC, ACL_ERROR_INTERNAL_ERROR, std::forward<Body>(body));
}

const char* kind_name(AllocKind k) {
  return k == AllocKind::Device ? "aclrtMalloc" : "aclrtMallocHost";
}

// The block of `blocks` whose [base, base + size) contains p, if any.
const std::pair<const char* const, Allocation>* containing(
    const std::map<const char*, Allocation>& blocks, const char* p) {
  auto it = blocks.upper_bound(p);
  if (it == blocks.begin()) return nullptr;
  --it;
  return static_cast<size_t>(p - it->first) < it->second.size ? &*it : nullptr;
}

// Throws when [p, p + count) overruns the allocation containing p, or p lies in a released one;
// a pointer in neither is the caller's host memory.
void check_range(const Runtime& r, const void* p, size_t count, const char* param) {
  const char* c = static_cast<const char*>(p);
  if (const auto* f = containing(r.freed, c)) {
    fail(ACL_ERROR_INVALID_PARAM,
         cat(param, " ", p, " lies in a ", f->second.size, "-byte buffer from ",
             kind_name(f->second.kind), " at offset ", c - f->first,
             " that was already released; allocate a live buffer"));
  }
  const auto* a = containing(r.allocations, c);
  if (a == nullptr) return;  // not runtime memory: the caller vouches for it
  const size_t start = static_cast<size_t>(c - a->first);
  check(count <= a->second.size - start, ACL_ERROR_INVALID_PARAM, param, " ", p, " lies in a ",
        a->second.size, "-byte buffer from ", kind_name(a->second.kind), " at offset ", start,
        ", so only ", a->second.size - start, " bytes are available but count is ", count);
}

// Returns the whole pages inside a released block to the system; returns the bytes that stay
// resident. The first and last pages are kept: the heap's bookkeeping may share them.
size_t drop_pages(char* p, size_t size) {
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t b = (reinterpret_cast<uintptr_t>(p) + 2 * page - 1) / page * page;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + size) / page * page - page;
  if (end <= b) return size;
  if (madvise(reinterpret_cast<void*>(b), end - b, MADV_DONTNEED) != 0) return size;
  return size - (end - b);
}

// Puts a released block into the quarantine and frees what leaves it (r.mutex held). Under ASan
// the block is poisoned meanwhile, so a kernel reading it through a stale tensor is still reported.
void quarantine(Runtime& r, char* p, Allocation a) {
  const size_t resident = drop_pages(p, a.size);
  ASAN_POISON_MEMORY_REGION(p, a.size);
  r.freed[p] = a;
  r.freed_order.push_back({p, resident});
  r.freed_resident += resident;
  while (r.freed_order.size() > kQuarantineBlocks ||
         (r.freed_resident > kQuarantineBytes && r.freed_order.size() > 1)) {
    const Quarantined& q = r.freed_order.front();
    r.freed_resident -= q.resident;
    const auto it = r.freed.find(q.base);
    ASAN_UNPOISON_MEMORY_REGION(q.base, it->second.size);
    r.freed.erase(it);
    std::free(const_cast<char*>(q.base));
    r.freed_order.pop_front();
  }
}

// The memory and stream calls need an initialised runtime, as in CANN (the host memory they
// manage stays valid meanwhile: aclFinalize frees nothing, so a buffer freed after it is kept).
void require_initialized(const Runtime& r) {
  check(r.initialized, ACL_ERROR_UNINITIALIZE,
        "the runtime is not initialised; call aclInit first (and again after aclFinalize)");
}
void require_initialized() {
  auto& r = runtime();
  std::lock_guard lock(r.mutex);
  require_initialized(r);
}

aclError allocate(void** ptr, size_t size, AllocKind kind) {
  require_initialized();
  check(ptr != nullptr, ACL_ERROR_INVALID_PARAM, "the output pointer is null");
  check(size > 0, ACL_ERROR_INVALID_PARAM, "size is 0; allocate at least one byte");
  check(size <= (size_t{1} << 46), ACL_ERROR_BAD_ALLOC, "size ", size,
        " bytes exceeds the largest allocation (64 TiB)");
  const size_t rounded = (size + kAlignment - 1) / kAlignment * kAlignment;
  void* p = std::aligned_alloc(kAlignment, rounded);
  check(p != nullptr, ACL_ERROR_BAD_ALLOC, "cannot allocate ", size, " bytes");
  auto& r = runtime();
  std::lock_guard lock(r.mutex);
  r.allocations[static_cast<const char*>(p)] = Allocation{size, kind};
  *ptr = p;
  return ACL_SUCCESS;
}

aclError release(void* ptr, AllocKind kind) {
  auto& r = runtime();
  std::lock_guard lock(r.mutex);
  require_initialized(r);
  check(ptr != nullptr, ACL_ERROR_INVALID_PARAM, "the pointer is null");
  auto it = r.allocations.find(static_cast<const char*>(ptr));
  check(it != r.allocations.end(), ACL_ERROR_INVALID_PARAM, "pointer ", ptr,
        " was not returned by ", kind_name(kind), " or was already freed");
  check(it->second.kind == kind, ACL_ERROR_INVALID_PARAM, "pointer ", ptr, " was allocated by ",
        kind_name(it->second.kind), "; free it with the matching function");
  const Allocation a = it->second;
  r.allocations.erase(it);
  quarantine(r, static_cast<char*>(ptr), a);
  return ACL_SUCCESS;
}

}  // namespace

bool deterministic_requested() {
  auto& r = runtime();
  std::lock_guard lock(r.mutex);
  return r.current_device >= 0 && r.sys_params[ACL_OPT_DETERMINISTIC] != 0;
}

bool stream_is_valid(aclrtStream stream) {
  if (stream == nullptr) return true;
  auto& r = runtime();
  std::lock_guard lock(r.mutex);
  return r.streams.count(static_cast<StreamImpl*>(stream)) != 0;
}

}  // namespace aclnn_cpu

using namespace aclnn_cpu;

extern "C" {

aclError aclInit(const char* configPath) {
  return guard_rt("aclInit", [&] {
    if (configPath != nullptr && configPath[0] != '\0') {
      std::ifstream f(configPath);
      check(f.good(), ACL_ERROR_INVALID_FILE, "configPath \"", configPath,
            "\" cannot be opened; pass nullptr or an existing JSON file");
    }
    auto& r = runtime();
    std::lock_guard lock(r.mutex);
    check(!r.initialized, ACL_ERROR_REPEAT_INITIALIZE,
          "already initialised; call aclFinalize before initialising again");
    r.initialized = true;
    return ACL_SUCCESS;
  });
}

aclError aclFinalize(void) {
  return guard_rt("aclFinalize", [&] {
    auto& r = runtime();
    std::lock_guard lock(r.mutex);
    check(r.initialized, ACL_ERROR_REPEAT_FINALIZE, "not initialised (already finalised?)");
    for (StreamImpl* s : r.streams) delete s;
    r.streams.clear();
    r.current_device = -1;
    r.sys_params[ACL_OPT_DETERMINISTIC] = r.sys_params[ACL_OPT_ENABLE_DEBUG_KERNEL] = 0;
    r.initialized = false;
    return ACL_SUCCESS;
  });
}

aclError aclrtGetVersion(int32_t* majorVersion, int32_t* minorVersion, int32_t* patchVersion) {
  return guard_rt("aclrtGetVersion", [&] {
    check(majorVersion && minorVersion && patchVersion, ACL_ERROR_INVALID_PARAM,
          "every output pointer must be non-null");
    *majorVersion = ACL_MAJOR_VERSION;
    *minorVersion = ACL_MINOR_VERSION;
    *patchVersion = ACL_PATCH_VERSION;
    return ACL_SUCCESS;
  });
}

const char* aclGetRecentErrMsg(void) {
  return recent_error();
}

// The device binding is process-wide (CANN binds a context per thread); aclnn phase 2 may run on
// worker threads, and the host is the only device, so a per-thread binding would add nothing.
aclError aclrtSetDevice(int32_t deviceId) {
  return guard_rt("aclrtSetDevice", [&] {
    auto& r = runtime();
    std::lock_guard lock(r.mutex);
    check(r.initialized, ACL_ERROR_UNINITIALIZE, "call aclInit first");
    check(deviceId >= 0 && deviceId < kDeviceCount, ACL_ERROR_RT_INVALID_DEVICEID, "deviceId ",
          deviceId, " is invalid; this CPU runtime has ", kDeviceCount, " device (id 0)");
    r.current_device = deviceId;
    return ACL_SUCCESS;
  });
}

aclError aclrtResetDevice(int32_t deviceId) {
  return guard_rt("aclrtResetDevice", [&] {
    check(deviceId >= 0 && deviceId < kDeviceCount, ACL_ERROR_RT_INVALID_DEVICEID, "deviceId ",
          deviceId, " is invalid; this CPU runtime has ", kDeviceCount, " device (id 0)");
    auto& r = runtime();
    std::lock_guard lock(r.mutex);
    // Resetting releases the device's streams; resetting again is harmless.
    for (auto it = r.streams.begin(); it != r.streams.end();) {
      if ((*it)->device == deviceId) {
        delete *it;
        it = r.streams.erase(it);
      } else {
        ++it;
      }
    }
    if (r.current_device == deviceId) {
      r.current_device = -1;
      r.sys_params[ACL_OPT_DETERMINISTIC] = r.sys_params[ACL_OPT_ENABLE_DEBUG_KERNEL] = 0;
    }
    return ACL_SUCCESS;
  });
}

aclError aclrtGetDevice(int32_t* deviceId) {
  return guard_rt("aclrtGetDevice", [&] {
    check(deviceId != nullptr, ACL_ERROR_INVALID_PARAM, "deviceId is null");
    auto& r = runtime();
    std::lock_guard lock(r.mutex);
    check(r.current_device >= 0, ACL_ERROR_RT_CONTEXT_NULL,
          "no device is set; call aclrtSetDevice");
    *deviceId = r.current_device;
    return ACL_SUCCESS;
  });
}

aclError aclrtGetDeviceCount(uint32_t* count) {
  return guard_rt("aclrtGetDeviceCount", [&] {
    check(count != nullptr, ACL_ERROR_INVALID_PARAM, "count is null");
    *count = kDeviceCount;
    return ACL_SUCCESS;
  });
}

aclError aclrtGetRunMode(aclrtRunMode* runMode) {
  return guard_rt("aclrtGetRunMode", [&] {
    check(runMode != nullptr, ACL_ERROR_INVALID_PARAM, "runMode is null");
    *runMode = ACL_HOST;
    return ACL_SUCCESS;
  });
}

namespace {
const char* sys_param_name(int32_t opt) {
  return opt == ACL_OPT_DETERMINISTIC ? "ACL_OPT_DETERMINISTIC" : "ACL_OPT_ENABLE_DEBUG_KERNEL";
}
// The option as an index into sys_params, read as the integer the caller passed (see raw_enum).
int32_t check_sys_param_opt(const aclSysParamOpt& opt_enum) {
  const int32_t opt = raw_enum(opt_enum);
  check(opt == ACL_OPT_DETERMINISTIC || opt == ACL_OPT_ENABLE_DEBUG_KERNEL, ACL_ERROR_INVALID_PARAM,
        "opt = ", opt, " is invalid; it must be ACL_OPT_DETERMINISTIC (0) or ",
        "ACL_OPT_ENABLE_DEBUG_KERNEL (1)");
  return opt;
}
}  // namespace

aclError aclrtCtxSetSysParamOpt(aclSysParamOpt opt_enum, int64_t value) {
  return guard_rt("aclrtCtxSetSysParamOpt", [&] {
    const int32_t opt = check_sys_param_opt(opt_enum);
    check(value == 0 || value == 1, ACL_ERROR_INVALID_PARAM, "value = ", value, " for ",
          sys_param_name(opt), " is invalid; it must be 0 (off) or 1 (on)");
    auto& r = runtime();
    std::lock_guard lock(r.mutex);
    check(r.current_device >= 0, ACL_ERROR_RT_CONTEXT_NULL,
          "there is no current context; call aclInit and aclrtSetDevice first");
    r.sys_params[opt] = value;
    return ACL_SUCCESS;
  });
}

aclError aclrtCtxGetSysParamOpt(aclSysParamOpt opt_enum, int64_t* value) {
  return guard_rt("aclrtCtxGetSysParamOpt", [&] {
    const int32_t opt = check_sys_param_opt(opt_enum);
    check(value != nullptr, ACL_ERROR_INVALID_PARAM, "value is null");
    auto& r = runtime();
    std::lock_guard lock(r.mutex);
    check(r.current_device >= 0, ACL_ERROR_RT_CONTEXT_NULL,
          "there is no current context; call aclInit and aclrtSetDevice first");
    *value = r.sys_params[opt];
    return ACL_SUCCESS;
  });
}

aclError aclrtCreateStream(aclrtStream* stream) {
  return guard_rt("aclrtCreateStream", [&] {
    check(stream != nullptr, ACL_ERROR_INVALID_PARAM, "stream is null");
    auto& r = runtime();
    std::lock_guard lock(r.mutex);
    check(r.current_device >= 0, ACL_ERROR_RT_CONTEXT_NULL,
          "no device is set; call aclInit and aclrtSetDevice first");
    auto* s = new StreamImpl{r.current_device};
    r.streams.insert(s);
    *stream = s;
    return ACL_SUCCESS;
  });
}

aclError aclrtDestroyStream(aclrtStream stream) {
  return guard_rt("aclrtDestroyStream", [&] {
    check(stream != nullptr, ACL_ERROR_INVALID_PARAM, "stream is null");
    auto& r = runtime();
    std::lock_guard lock(r.mutex);
    auto it = r.streams.find(static_cast<StreamImpl*>(stream));
    check(it != r.streams.end(), ACL_ERROR_INVALID_PARAM, "stream ", stream,
          " is not a live stream (already destroyed, released by aclrtResetDevice/aclFinalize, or "
          "never created)");
    delete *it;
    r.streams.erase(it);
    return ACL_SUCCESS;
  });
}

aclError aclrtSynchronizeStream(aclrtStream stream) {
  return guard_rt("aclrtSynchronizeStream", [&] {
    require_initialized();
    check(stream_is_valid(stream), ACL_ERROR_INVALID_PARAM, "stream ", stream,
          " is not a live stream");
    return ACL_SUCCESS;  // work ran at launch
  });
}

aclError aclrtMalloc(void** devPtr, size_t size, aclrtMemMallocPolicy policy) {
  return guard_rt("aclrtMalloc", [&] {
    const int32_t p = raw_enum(policy);  // any int a caller passed (see meta.h)
    check(p >= ACL_MEM_MALLOC_HUGE_FIRST && p <= ACL_MEM_MALLOC_NORMAL_ONLY,
          ACL_ERROR_INVALID_PARAM, "policy ", p, " is not an aclrtMemMallocPolicy (0, 1 or 2)");
    return allocate(devPtr, size, AllocKind::Device);
  });
}

aclError aclrtFree(void* devPtr) {
  return guard_rt("aclrtFree", [&] { return release(devPtr, AllocKind::Device); });
}

aclError aclrtMallocHost(void** hostPtr, size_t size) {
  return guard_rt("aclrtMallocHost", [&] { return allocate(hostPtr, size, AllocKind::Host); });
}

aclError aclrtFreeHost(void* hostPtr) {
  return guard_rt("aclrtFreeHost", [&] { return release(hostPtr, AllocKind::Host); });
}

aclError aclrtMemcpy(void* dst, size_t destMax, const void* src, size_t count,
                     aclrtMemcpyKind kind) {
  return guard_rt("aclrtMemcpy", [&] {
    auto& r = runtime();
    std::unique_lock lock(r.mutex);
    require_initialized(r);
    const int32_t k = raw_enum(kind);  // any int a caller passed (see meta.h)
    check(k >= ACL_MEMCPY_HOST_TO_HOST && k <= ACL_MEMCPY_DEFAULT, ACL_ERROR_INVALID_PARAM, "kind ",
          k, " is not an aclrtMemcpyKind (0..4)");
    check(dst != nullptr, ACL_ERROR_INVALID_PARAM, "dst is null");
    check(src != nullptr, ACL_ERROR_INVALID_PARAM, "src is null");
    check(count <= destMax, ACL_ERROR_INVALID_PARAM, "count ", count, " bytes exceeds destMax ",
          destMax);
    check_range(r, dst, count, "dst");
    check_range(r, src, count, "src");
    lock.unlock();
    if (count) std::memmove(dst, src, count);
    return ACL_SUCCESS;
  });
}

aclError aclrtMemset(void* devPtr, size_t maxCount, int32_t value, size_t count) {
  return guard_rt("aclrtMemset", [&] {
    auto& r = runtime();
    std::unique_lock lock(r.mutex);
    require_initialized(r);
    check(devPtr != nullptr, ACL_ERROR_INVALID_PARAM, "devPtr is null");
    check(count <= maxCount, ACL_ERROR_INVALID_PARAM, "count ", count, " bytes exceeds maxCount ",
          maxCount);
    check_range(r, devPtr, count, "devPtr");
    lock.unlock();
    if (count) std::memset(devPtr, value, count);
    return ACL_SUCCESS;
  });
}

}  // extern "C"
