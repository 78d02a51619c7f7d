/* aclgrad's CPU implementation of the AscendCL runtime API (devices, streams, memory).
 * "Device" memory is ordinary host memory; device 0 is the CPU. A stream is an in-order queue
 * whose tasks run at launch (synchronously), so aclrtSynchronizeStream only validates the handle.
 * Handles are checked against a registry before use: a stale, repeated or garbage handle gives an
 * error code, never a crash (CANN samples destroy streams again on their error paths). */
#ifndef ACL_ACL_RT_H_
#define ACL_ACL_RT_H_

#include "acl/acl_base.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum aclrtMemcpyKind {
  ACL_MEMCPY_HOST_TO_HOST = 0,
  ACL_MEMCPY_HOST_TO_DEVICE = 1,
  ACL_MEMCPY_DEVICE_TO_HOST = 2,
  ACL_MEMCPY_DEVICE_TO_DEVICE = 3,
  ACL_MEMCPY_DEFAULT = 4
} aclrtMemcpyKind;

typedef enum aclrtMemMallocPolicy {
  ACL_MEM_MALLOC_HUGE_FIRST = 0,
  ACL_MEM_MALLOC_HUGE_ONLY = 1,
  ACL_MEM_MALLOC_NORMAL_ONLY = 2
} aclrtMemMallocPolicy;

typedef enum aclrtRunMode { ACL_DEVICE = 0, ACL_HOST = 1 } aclrtRunMode;

/* System parameters of the current context (CANN's aclSysParamOpt). */
typedef enum aclSysParamOpt {
  ACL_OPT_DETERMINISTIC = 0,      /* 1: deterministic computation, 0 (default): not required */
  ACL_OPT_ENABLE_DEBUG_KERNEL = 1 /* accepted and stored; no effect on the CPU */
} aclSysParamOpt;

ACL_FUNC_VISIBILITY aclError aclrtSetDevice(int32_t deviceId);
ACL_FUNC_VISIBILITY aclError aclrtResetDevice(int32_t deviceId);
ACL_FUNC_VISIBILITY aclError aclrtGetDevice(int32_t* deviceId);
ACL_FUNC_VISIBILITY aclError aclrtGetDeviceCount(uint32_t* count);
ACL_FUNC_VISIBILITY aclError aclrtGetRunMode(aclrtRunMode* runMode);

ACL_FUNC_VISIBILITY aclError aclrtCreateStream(aclrtStream* stream);
ACL_FUNC_VISIBILITY aclError aclrtDestroyStream(aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclrtSynchronizeStream(aclrtStream stream);

/* Sets / reads a system parameter of the current context, the default context of the device set
 * with aclrtSetDevice (ACL_ERROR_RT_CONTEXT_NULL without one). Values are 0 or 1
 * (ACL_ERROR_INVALID_PARAM otherwise, and for an unknown opt or a null value pointer); a context
 * starts with 0 and aclrtResetDevice / aclFinalize discard it. ACL_OPT_DETERMINISTIC = 1 is what
 * CANN documents for aclnnConvolutionBackward's deterministic mode. On the CPU every convolution is
 * already deterministic for a given thread count (fixed-order reductions); the flag is recorded
 * per context for the convolution engine, which is to make its reductions independent of the
 * thread count as well when it is set. */
ACL_FUNC_VISIBILITY aclError aclrtCtxSetSysParamOpt(aclSysParamOpt opt, int64_t value);
ACL_FUNC_VISIBILITY aclError aclrtCtxGetSysParamOpt(aclSysParamOpt opt, int64_t* value);

/* 64-byte aligned host allocation. size 0 is rejected with ACL_ERROR_INVALID_PARAM, as in CANN.
 * The memory functions below return ACL_ERROR_UNINITIALIZE before aclInit and after aclFinalize. */
ACL_FUNC_VISIBILITY aclError aclrtMalloc(void** devPtr, size_t size, aclrtMemMallocPolicy policy);
ACL_FUNC_VISIBILITY aclError aclrtFree(void* devPtr);
ACL_FUNC_VISIBILITY aclError aclrtMallocHost(void** hostPtr, size_t size);
ACL_FUNC_VISIBILITY aclError aclrtFreeHost(void* hostPtr);
/* Copies `count` bytes; fails with ACL_ERROR_INVALID_PARAM when count > destMax or a pointer is
 * null, when a pointer the runtime allocated is too small for `count`, and when a pointer lies in
 * a buffer already released with aclrtFree / aclrtFreeHost. */
ACL_FUNC_VISIBILITY aclError aclrtMemcpy(void* dst, size_t destMax, const void* src, size_t count,
                                         aclrtMemcpyKind kind);
ACL_FUNC_VISIBILITY aclError aclrtMemset(void* devPtr, size_t maxCount, int32_t value,
                                         size_t count);

#ifdef __cplusplus
}
#endif

#endif /* ACL_ACL_RT_H_ */
