/* C-compiled wrappers (raw_enum_calls.c) that pass plain integers where the API takes an enum. */
#ifndef ACLTEST_RAW_ENUM_CALLS_H_
#define ACLTEST_RAW_ENUM_CALLS_H_

#include <stddef.h>
#include <stdint.h>

#include "acl/acl.h"
#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

aclTensor* acltest_create_tensor_raw(const int64_t* dims, uint64_t dims_num, int32_t dtype,
                                     const int64_t* strides, int64_t offset, int32_t format,
                                     const int64_t* storage_dims, uint64_t storage_dims_num,
                                     void* data);
aclScalar* acltest_create_scalar_raw(void* value, int32_t dtype);
size_t acltest_data_type_size_raw(int32_t dtype);
aclError acltest_malloc_raw(void** ptr, size_t size, int32_t policy);
aclError acltest_memcpy_raw(void* dst, size_t dest_max, const void* src, size_t count,
                            int32_t kind);
aclError acltest_ctx_set_sys_param_opt_raw(int32_t opt, int64_t value);

#ifdef __cplusplus
}
#endif

#endif /* ACLTEST_RAW_ENUM_CALLS_H_ */
