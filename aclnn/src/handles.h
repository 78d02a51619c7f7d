// The registry of live meta objects (aclTensor, aclScalar, the arrays, aclTensorList). Every
// object aclCreate* returns is recorded with its kind; aclDestroy* removes it before deleting it,
// so destroying an object twice, or a pointer of another kind or never created, is refused with a
// status code and a message instead of freeing memory twice.
#pragma once

#include "error.h"

namespace aclnn_cpu {

enum class HandleKind { kTensor, kScalar, kIntArray, kFloatArray, kBoolArray, kTensorList };

const char* handle_kind_name(HandleKind kind);  // "aclTensor", ...

// Records a new object (created by aclCreate*). Throws std::bad_alloc only.
void register_handle(const void* p, HandleKind kind);

// Takes a live object of `kind` out of the registry, or throws ApiError (161002) naming `param`.
void unregister_handle(const void* p, HandleKind kind, const char* param);

// Throws ApiError (161002) naming `param` unless p is a live object of `kind`.
void require_live(const void* p, HandleKind kind, const char* param);

}  // namespace aclnn_cpu
