// The bridge from framework tensors to libaclnn (the CANN-compatible C API in aclnn/), used by
// ops/conv*.cpp only:
//   - AclnnError: a failed aclnn call as an aclgrad exception (status code + aclGetRecentErrMsg());
//   - zero-copy aclTensor views of Tensors (real sizes, strides and storage offset, no copy);
//   - shape-only stand-ins for operands an aclnn call requires but will not read;
//   - RAII for aclTensor / aclIntArray / aclBoolArray and run_two_phase(), which runs
//     GetWorkspaceSize + launch with a reused, per-thread workspace buffer.
//
// Internal to ops/ (not installed): AclnnError, which users catch, is in ops/aclnn_error.h. This
// header does not include the aclnn headers: the aclnn handle types are declared here exactly as
// acl_meta.h declares them.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <source_location>
#include <string>
#include <vector>

#include "ops/aclnn_error.h"
#include "tensor/function_ref.h"
#include "tensor/tensor.h"

extern "C" {
typedef struct aclTensor aclTensor;          // NOLINT: same declarations as aclnn/acl_meta.h
typedef struct aclIntArray aclIntArray;      // NOLINT
typedef struct aclBoolArray aclBoolArray;    // NOLINT
typedef struct aclOpExecutor aclOpExecutor;  // NOLINT
}

namespace aclgrad {

namespace aclnn {

/// The aclFormat an aclTensor gets (values as in acl_base.h).
enum class Format : int32_t { ND = 2, NCHW = 0, NCDHW = 30, NCL = 47 };
/// NCL for 3-d, NCHW for 4-d, NCDHW for 5-d, ND otherwise.
Format conv_format(int64_t dim);

struct TensorDeleter {
  void operator()(aclTensor* t) const noexcept;
};
struct IntArrayDeleter {
  void operator()(aclIntArray* a) const noexcept;
};
struct BoolArrayDeleter {
  void operator()(aclBoolArray* a) const noexcept;
};
using TensorHandle = std::unique_ptr<aclTensor, TensorDeleter>;
using IntArrayHandle = std::unique_ptr<aclIntArray, IntArrayDeleter>;
using BoolArrayHandle = std::unique_ptr<aclBoolArray, BoolArrayDeleter>;

/// A zero-copy aclTensor view of t: t's sizes, strides and storage offset (in elements) over its
/// whole storage (storage dims = [storage element count], data = storage base pointer). dtype:
/// float32 -> FLOAT, float64 -> DOUBLE (a libaclnn extension run_two_phase enables), float16 ->
/// FLOAT16, bfloat16 -> BF16; other dtypes are a DtypeError. The view stays valid while t's storage
/// lives.
TensorHandle view_of(const Tensor& t, Format format);
inline TensorHandle view_of(const Tensor& t) {
  return view_of(t, conv_format(t.dim()));
}
/// view_of(t), or nullptr for an undefined t (an optional operand).
TensorHandle optional_view_of(const Tensor& t);

/// A read-only stand-in of the given sizes and dtype: every stride 0 over one zero element. For
/// operands an aclnn call requires but will not read (e.g. `input` when only gradInput is
/// requested), so the op need not keep the real tensor alive for backward; also for outputs an
/// aclnn call requires but will not write (gradInput / gradWeight outside the outputMask).
TensorHandle shape_only(const Shape& sizes, Dtype dtype, Format format);
inline TensorHandle shape_only(const Shape& sizes, Dtype dtype) {
  return shape_only(sizes, dtype, conv_format(static_cast<int64_t>(sizes.size())));
}

IntArrayHandle int_array(const std::vector<int64_t>& values);
BoolArrayHandle bool_array(std::initializer_list<bool> values);

/// Phase 1 of an aclnn op, bound to its arguments: fills workspace size and executor.
using GetWorkspaceFn = FunctionRef<int32_t(uint64_t* workspace_size, aclOpExecutor** executor)>;
/// Phase 2 of an aclnn op: aclnnX(workspace, workspace_size, executor, stream).
using LaunchFn = int32_t (*)(void* workspace, uint64_t workspace_size, aclOpExecutor* executor,
                             void* stream);

/// Runs one aclnn op through the two-phase API with libaclnn's CPU-only extensions enabled for
/// the call (ACLNN_CPU_EXT_DOUBLE: float64 tensors, aclnn/aclnn_cpu_extensions.h): get_workspace
/// (named `api` + "GetWorkspaceSize" in errors), then launch on the default stream (libaclnn
/// computes at launch, so the results are ready on return). The workspace is a per-thread buffer
/// that only grows, so repeated training steps do not allocate. Throws AclnnError on any non-zero
/// status. The executor is made repeatable and destroyed here, so it never leaks whichever phase
/// fails.
void run_two_phase(const char* api, GetWorkspaceFn get_workspace, LaunchFn launch);

/// Bytes currently held by this thread's workspace buffer (for tests and diagnostics).
uint64_t workspace_capacity();

}  // namespace aclnn
}  // namespace aclgrad
