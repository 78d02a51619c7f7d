// Definitions of the opaque aclnn meta objects (aclTensor, arrays, executor). A tensor is a
// description of memory the caller owns: view dims, element strides and offset over a storage.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "aclnn/aclnn_base.h"

struct aclTensor {
  std::vector<int64_t> view_dims;
  std::vector<int64_t> strides;  // elements, one per view dim (never empty when dims are not)
  int64_t offset = 0;            // elements from `data` to element (0, ..., 0)
  std::vector<int64_t> storage_dims;
  aclDataType dtype = ACL_FLOAT;
  aclFormat format = ACL_FORMAT_ND;
  void* data = nullptr;  // storage base

  int64_t dim() const { return static_cast<int64_t>(view_dims.size()); }
  int64_t numel() const;       // product of view dims (validated not to overflow at creation)
  bool is_contiguous() const;  // row-major dense strides (size-1 dims ignored)
};

struct aclIntArray {
  std::vector<int64_t> values;
};
struct aclFloatArray {
  std::vector<float> values;
};
struct aclBoolArray {
  std::vector<bool> values;
};
struct aclScalar {
  aclDataType dtype = ACL_FLOAT;
  double value = 0;  // every supported scalar dtype is exactly representable... except int64
  int64_t int_value = 0;
};
struct aclTensorList {
  std::vector<const aclTensor*> tensors;
};

// The plan phase 1 made. `run` receives the workspace (workspace_bytes long, maybe null when 0)
// and must use no other scratch memory. The tensors it needs are captured by value. Owned by the
// registry (executor.cpp) and by each launch running it.
struct aclOpExecutor {
  std::string api;  // e.g. "aclnnConvolutionBackward", for messages
  uint64_t workspace_bytes = 0;
  std::atomic<bool> repeatable{false};  // set by one thread while another may launch
  std::function<void(void* workspace)> run;
};

namespace aclnn_cpu {

// Registers a new executor, taking ownership (so a consumed or foreign pointer is detected
// rather than used).
aclOpExecutor* register_executor(aclOpExecutor* executor);

// Phase 2 common part: checks the executor is live and belongs to `api`, the workspace is large
// enough and non-null when needed, and the stream is valid (null = default stream); runs the plan;
// consumes the executor unless it was made repeatable. Returns an aclnnStatus.
aclnnStatus launch(const char* api, void* workspace, uint64_t workspace_size,
                   aclOpExecutor* executor, aclrtStream stream);

// True when `stream` is null (the default stream) or a stream created and not yet destroyed.
bool stream_is_valid(aclrtStream stream);

// The integer a caller passed where the C API takes an enum, read from the object's bytes: loading
// a value outside the enum's range as the enum type is undefined behaviour in C++, and a C caller
// may pass any int. Check it (known_dtype, ...) before the value is used as the enum.
template <typename E>
int32_t raw_enum(const E& e) {
  static_assert(sizeof(E) == sizeof(int32_t));
  int32_t v;
  std::memcpy(&v, &e, sizeof v);
  return v;
}
// Whether v is one of the enumerators of aclDataType / aclFormat (acl_base.h).
bool known_dtype(int32_t v);
bool known_format(int32_t v);

// Element size in bytes of the dtypes aclnn computes with; 0 for others.
size_t dtype_size(aclDataType dtype);
const char* dtype_name(aclDataType dtype);
const char* format_name(aclFormat format);

}  // namespace aclnn_cpu
