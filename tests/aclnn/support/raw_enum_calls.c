/* libaclnn functions called from C, as a C program calls them: enum parameters arrive as plain
 * integers (a C enum is an int), including values that are not enumerators. Calling them from C++
 * with such values would load an out-of-range enum on the caller's side, which UBSan reports. */
#include "support/raw_enum_calls.h"

aclTensor* acltest_create_tensor_raw(const int64_t* dims, uint64_t dims_num, int32_t dtype,
                                     const int64_t* strides, int64_t offset, int32_t format,
                                     const int64_t* storage_dims, uint64_t storage_dims_num,
                                     void* data) {
  return aclCreateTensor(dims, dims_num, (aclDataType)dtype, strides, offset, (aclFormat)format,
                         storage_dims, storage_dims_num, data);
}

aclScalar* acltest_create_scalar_raw(void* value, int32_t dtype) {
  return aclCreateScalar(value, (aclDataType)dtype);
}

size_t acltest_data_type_size_raw(int32_t dtype) {
  return aclDataTypeSize((aclDataType)dtype);
}

aclError acltest_malloc_raw(void** ptr, size_t size, int32_t policy) {
  return aclrtMalloc(ptr, size, (aclrtMemMallocPolicy)policy);
}

aclError acltest_memcpy_raw(void* dst, size_t dest_max, const void* src, size_t count,
                            int32_t kind) {
  return aclrtMemcpy(dst, dest_max, src, count, (aclrtMemcpyKind)kind);
}

aclError acltest_ctx_set_sys_param_opt_raw(int32_t opt, int64_t value) {
  return aclrtCtxSetSysParamOpt((aclSysParamOpt)opt, value);
}
