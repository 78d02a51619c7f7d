// aclTensor, arrays, scalars and the executor registry behind the aclnn two-phase API.
#include "meta.h"

#include <algorithm>
#include <cstring>
#include <sstream>
#include <memory>

#include "error.h"
#include "handles.h"

namespace aclnn_cpu {
namespace {

constexpr uint64_t kMaxDims = 8;  // CANN's limit on tensor rank

// Refuses negative dims and, unless a dim is 0 (an empty tensor has 0 elements whatever the
// others), an element count beyond int64: acl_meta.h promises NULL for both.
void check_dims(const char* param, const std::vector<int64_t>& dims) {
  bool empty = false;
  for (size_t i = 0; i < dims.size(); ++i) {
    check(dims[i] >= 0, ACLNN_ERR_PARAM_INVALID, param, " ", shape_str(dims), ": dim ", i, " = ",
          dims[i], " is negative; dims must be >= 0");
    empty = empty || dims[i] == 0;
  }
  int64_t n = 1;
  for (int64_t d : dims) {
    check(empty || !__builtin_mul_overflow(n, d, &n), ACLNN_ERR_PARAM_INVALID, param, " ",
          shape_str(dims), ": the element count overflows int64 (2^63 - 1)");
  }
}

// Row-major strides of dims (>= 0; a 0 dim counts as 1, as in PyTorch), refused where a stride
// overflows int64: then no tensor with these strides can be described.
std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) {
    check(!__builtin_mul_overflow(strides[i], std::max<int64_t>(dims[i], 1), &strides[i - 1]),
          ACLNN_ERR_PARAM_INVALID, "stride is null, but the row-major strides of viewDims ",
          shape_str(dims), " overflow int64 (the product of dims ", i, ".. exceeds 2^63 - 1)");
  }
  return strides;
}

// Builds a C array the caller frees with delete[] (CANN's getter contract).
aclnnStatus copy_out(const std::vector<int64_t>& v, int64_t** out, uint64_t* n) {
  *out = new int64_t[v.size()];
  std::copy(v.begin(), v.end(), *out);
  *n = v.size();
  return ACLNN_SUCCESS;
}

// The three aclCreate*Array functions: copy `size` values (value may be null only when size is 0).
template <typename Array, typename Elem>
Array* create_array(const char* api, HandleKind kind, const Elem* value, uint64_t size) {
  Array* result = nullptr;
  guard_aclnn(api, [&] {
    check(value != nullptr || size == 0, ACLNN_ERR_PARAM_NULLPTR, "value is null but size is ",
          size);
    auto a = std::make_unique<Array>();
    a->values.assign(value, value + size);
    register_handle(a.get(), kind);
    result = a.release();
    return ACLNN_SUCCESS;
  });
  return result;
}

// The last element a well-formed view reaches lies inside its storage (skipped when a dim,
// stride, offset or storage dim is negative, or the view is empty: phase 1 reports those).
void check_view_inside_storage(const aclTensor& t) {
  __int128 last = t.offset, storage = 1;
  bool judged = t.offset >= 0;
  for (size_t i = 0; i < t.view_dims.size(); ++i) {
    judged = judged && t.view_dims[i] > 0 && t.strides[i] >= 0;
    if (judged) last += static_cast<__int128>(t.view_dims[i] - 1) * t.strides[i];
  }
  for (int64_t d : t.storage_dims) {
    judged = judged && d >= 0;
    storage = std::min<__int128>(storage * std::max<int64_t>(d, 0), __int128{1} << 64);
  }
  if (!judged || last < storage) return;
  std::ostringstream view;
  view << "viewDims " << shape_str(t.view_dims) << ", strides " << shape_str(t.strides)
       << ", offset " << t.offset;
  check(false, ACLNN_ERR_PARAM_INVALID, "the view (", view.str(), ") reaches element ",
        static_cast<int64_t>(std::min<__int128>(last, INT64_MAX)), " but storageDims ",
        shape_str(t.storage_dims), " hold only ",
        static_cast<uint64_t>(std::min<__int128>(storage, UINT64_MAX)), " elements");
}

// The aclDestroy* functions: null is accepted (0); anything else must be a live object of `kind`
// (a second destroy is refused, not a second delete).
template <typename T>
aclnnStatus destroy(const char* api, const T* p, HandleKind kind, const char* param) {
  return guard_aclnn(api, [&] {
    if (p == nullptr) return ACLNN_SUCCESS;
    unregister_handle(p, kind, param);
    delete p;
    return ACLNN_SUCCESS;
  });
}

// The getters: the outputs must be non-null and the object live; then body() reads it.
template <typename Body>
aclnnStatus get(const char* api, const void* object, HandleKind kind, const char* param,
                std::initializer_list<const void*> outs, Body&& body) {
  return guard_aclnn(api, [&] {
    check(object != nullptr, ACLNN_ERR_PARAM_NULLPTR, param, " is null");
    for (const void* out : outs)
      check(out != nullptr, ACLNN_ERR_PARAM_NULLPTR, "an output pointer is null");
    require_live(object, kind, param);
    return body();
  });
}

}  // namespace

bool known_dtype(int32_t v) {
  switch (v) {
    case ACL_DT_UNDEFINED:
    case ACL_FLOAT:
    case ACL_FLOAT16:
    case ACL_INT8:
    case ACL_INT32:
    case ACL_UINT8:
    case ACL_INT16:
    case ACL_UINT16:
    case ACL_UINT32:
    case ACL_INT64:
    case ACL_UINT64:
    case ACL_DOUBLE:
    case ACL_BOOL:
    case ACL_STRING:
    case ACL_COMPLEX64:
    case ACL_COMPLEX128:
    case ACL_BF16:
    case ACL_HIFLOAT8:
    case ACL_FLOAT8_E5M2:
    case ACL_FLOAT8_E4M3FN:
      return true;
    default:
      return false;
  }
}

bool known_format(int32_t v) {
  switch (v) {
    case ACL_FORMAT_UNDEFINED:
    case ACL_FORMAT_NCHW:
    case ACL_FORMAT_NHWC:
    case ACL_FORMAT_ND:
    case ACL_FORMAT_NC1HWC0:
    case ACL_FORMAT_FRACTAL_Z:
    case ACL_FORMAT_NC1HWC0_C04:
    case ACL_FORMAT_HWCN:
    case ACL_FORMAT_NDHWC:
    case ACL_FORMAT_FRACTAL_NZ:
    case ACL_FORMAT_NCDHW:
    case ACL_FORMAT_NDC1HWC0:
    case ACL_FRACTAL_Z_3D:
    case ACL_FORMAT_NC:
    case ACL_FORMAT_NCL:
      return true;
    default:
      return false;
  }
}

size_t dtype_size(aclDataType dtype) {
  switch (dtype) {
    case ACL_FLOAT:
    case ACL_INT32:
    case ACL_UINT32:
      return 4;
    case ACL_FLOAT16:
    case ACL_BF16:
    case ACL_INT16:
    case ACL_UINT16:
      return 2;
    case ACL_DOUBLE:
    case ACL_INT64:
    case ACL_UINT64:
    case ACL_COMPLEX64:
      return 8;
    case ACL_INT8:
    case ACL_UINT8:
    case ACL_BOOL:
    case ACL_HIFLOAT8:
    case ACL_FLOAT8_E5M2:
    case ACL_FLOAT8_E4M3FN:
      return 1;
    case ACL_COMPLEX128:
      return 16;
    default:
      return 0;
  }
}

const char* dtype_name(aclDataType dtype) {
  switch (dtype) {
    case ACL_FLOAT:
      return "FLOAT";
    case ACL_FLOAT16:
      return "FLOAT16";
    case ACL_BF16:
      return "BFLOAT16";
    case ACL_DOUBLE:
      return "DOUBLE";
    case ACL_INT8:
      return "INT8";
    case ACL_INT16:
      return "INT16";
    case ACL_INT32:
      return "INT32";
    case ACL_INT64:
      return "INT64";
    case ACL_UINT8:
      return "UINT8";
    case ACL_UINT16:
      return "UINT16";
    case ACL_UINT32:
      return "UINT32";
    case ACL_UINT64:
      return "UINT64";
    case ACL_BOOL:
      return "BOOL";
    case ACL_STRING:
      return "STRING";
    case ACL_COMPLEX64:
      return "COMPLEX64";
    case ACL_HIFLOAT8:
      return "HIFLOAT8";
    case ACL_FLOAT8_E5M2:
      return "FLOAT8_E5M2";
    case ACL_FLOAT8_E4M3FN:
      return "FLOAT8_E4M3FN";
    case ACL_COMPLEX128:
      return "COMPLEX128";
    case ACL_DT_UNDEFINED:
      return "UNDEFINED";
  }
  return "UNKNOWN";
}

const char* format_name(aclFormat format) {
  switch (format) {
    case ACL_FORMAT_NCHW:
      return "NCHW";
    case ACL_FORMAT_NHWC:
      return "NHWC";
    case ACL_FORMAT_ND:
      return "ND";
    case ACL_FORMAT_NCDHW:
      return "NCDHW";
    case ACL_FORMAT_NDHWC:
      return "NDHWC";
    case ACL_FORMAT_NCL:
      return "NCL";
    case ACL_FORMAT_NC:
      return "NC";
    case ACL_FORMAT_HWCN:
      return "HWCN";
    case ACL_FORMAT_UNDEFINED:
      return "UNDEFINED";
    default:
      return "UNKNOWN";
  }
}

}  // namespace aclnn_cpu

int64_t aclTensor::numel() const {
  // Validated at creation: the product fits unless a dim is 0, and then the others may be huge.
  if (std::find(view_dims.begin(), view_dims.end(), 0) != view_dims.end()) return 0;
  int64_t n = 1;
  for (int64_t d : view_dims) n *= d;
  return n;
}

bool aclTensor::is_contiguous() const {
  int64_t expected = 1;
  for (size_t i = view_dims.size(); i-- > 0;) {
    if (view_dims[i] == 1) continue;
    if (strides[i] != expected) return false;
    expected *= view_dims[i];
  }
  return true;
}

using namespace aclnn_cpu;

extern "C" {

size_t aclDataTypeSize(aclDataType dataType) {
  return known_dtype(raw_enum(dataType)) ? dtype_size(dataType) : 0;
}

aclTensor* aclCreateTensor(const int64_t* viewDims, uint64_t viewDimsNum, aclDataType dataType,
                           const int64_t* stride, int64_t offset, aclFormat format,
                           const int64_t* storageDims, uint64_t storageDimsNum, void* tensorData) {
  aclTensor* result = nullptr;
  guard_aclnn("aclCreateTensor", [&] {
    check(viewDims != nullptr || viewDimsNum == 0, ACLNN_ERR_PARAM_NULLPTR,
          "viewDims is null but viewDimsNum is ", viewDimsNum);
    check(storageDims != nullptr || storageDimsNum == 0, ACLNN_ERR_PARAM_NULLPTR,
          "storageDims is null but storageDimsNum is ", storageDimsNum);
    check(viewDimsNum <= kMaxDims && storageDimsNum <= kMaxDims, ACLNN_ERR_PARAM_INVALID,
          "viewDimsNum ", viewDimsNum, " / storageDimsNum ", storageDimsNum,
          " exceed the maximum rank ", kMaxDims);
    check(known_dtype(raw_enum(dataType)), ACLNN_ERR_PARAM_INVALID, "dataType ", raw_enum(dataType),
          " is not an aclDataType");
    check(known_format(raw_enum(format)), ACLNN_ERR_PARAM_INVALID, "format ", raw_enum(format),
          " is not an aclFormat");
    // Shapes that cannot describe memory (negative dims, element counts beyond int64) are refused
    // here, where the caller made the mistake, as is a view that provably reaches past its own
    // storage; the operator's phase 1 judges the rest (its own limits) by parameter name.
    auto t = std::make_unique<aclTensor>();
    t->view_dims.assign(viewDims, viewDims + viewDimsNum);
    check_dims("viewDims", t->view_dims);
    t->storage_dims.assign(storageDims, storageDims + storageDimsNum);
    check_dims("storageDims", t->storage_dims);
    t->strides = stride ? std::vector<int64_t>(stride, stride + viewDimsNum)
                        : contiguous_strides(t->view_dims);
    t->offset = offset;
    check_view_inside_storage(*t);
    t->dtype = dataType;
    t->format = format;
    t->data = tensorData;
    register_handle(t.get(), HandleKind::kTensor);
    result = t.release();
    return ACLNN_SUCCESS;
  });
  return result;
}

aclScalar* aclCreateScalar(void* value, aclDataType dataType) {
  aclScalar* result = nullptr;
  guard_aclnn("aclCreateScalar", [&] {
    check(value != nullptr, ACLNN_ERR_PARAM_NULLPTR, "value is null");
    check(known_dtype(raw_enum(dataType)), ACLNN_ERR_PARAM_INVALID, "dataType ", raw_enum(dataType),
          " is not an aclDataType");
    auto s = std::make_unique<aclScalar>();
    s->dtype = dataType;
    switch (dataType) {
      case ACL_FLOAT:
        s->value = *static_cast<const float*>(value);
        break;
      case ACL_DOUBLE:
        s->value = *static_cast<const double*>(value);
        break;
      case ACL_INT32:
        s->int_value = *static_cast<const int32_t*>(value);
        break;
      case ACL_INT64:
        s->int_value = *static_cast<const int64_t*>(value);
        break;
      case ACL_INT8:
        s->int_value = *static_cast<const int8_t*>(value);
        break;
      case ACL_UINT8:
        s->int_value = *static_cast<const uint8_t*>(value);
        break;
      case ACL_BOOL:
        s->int_value = *static_cast<const bool*>(value);
        break;
      default:
        fail(ACLNN_ERR_PARAM_INVALID,
             cat("dataType ", dtype_name(dataType), " (", static_cast<int>(dataType),
                 ") is not supported for scalars"));
    }
    if (dataType != ACL_FLOAT && dataType != ACL_DOUBLE) s->value = double(s->int_value);
    register_handle(s.get(), HandleKind::kScalar);
    result = s.release();
    return ACLNN_SUCCESS;
  });
  return result;
}

aclIntArray* aclCreateIntArray(const int64_t* value, uint64_t size) {
  return create_array<aclIntArray>("aclCreateIntArray", HandleKind::kIntArray, value, size);
}
aclFloatArray* aclCreateFloatArray(const float* value, uint64_t size) {
  return create_array<aclFloatArray>("aclCreateFloatArray", HandleKind::kFloatArray, value, size);
}
aclBoolArray* aclCreateBoolArray(const bool* value, uint64_t size) {
  return create_array<aclBoolArray>("aclCreateBoolArray", HandleKind::kBoolArray, value, size);
}

aclTensorList* aclCreateTensorList(const aclTensor* const* value, uint64_t size) {
  aclTensorList* result = nullptr;
  guard_aclnn("aclCreateTensorList", [&] {
    check(value != nullptr || size == 0, ACLNN_ERR_PARAM_NULLPTR, "value is null but size is ",
          size);
    auto l = std::make_unique<aclTensorList>();
    l->tensors.assign(value, value + size);
    register_handle(l.get(), HandleKind::kTensorList);
    result = l.release();
    return ACLNN_SUCCESS;
  });
  return result;
}

aclnnStatus aclDestroyTensor(const aclTensor* tensor) {
  return destroy("aclDestroyTensor", tensor, HandleKind::kTensor, "tensor");
}
aclnnStatus aclDestroyScalar(const aclScalar* scalar) {
  return destroy("aclDestroyScalar", scalar, HandleKind::kScalar, "scalar");
}
aclnnStatus aclDestroyIntArray(const aclIntArray* array) {
  return destroy("aclDestroyIntArray", array, HandleKind::kIntArray, "array");
}
aclnnStatus aclDestroyFloatArray(const aclFloatArray* array) {
  return destroy("aclDestroyFloatArray", array, HandleKind::kFloatArray, "array");
}
aclnnStatus aclDestroyBoolArray(const aclBoolArray* array) {
  return destroy("aclDestroyBoolArray", array, HandleKind::kBoolArray, "array");
}
aclnnStatus aclDestroyTensorList(const aclTensorList* array) {
  return destroy("aclDestroyTensorList", array, HandleKind::kTensorList, "array");
}

aclnnStatus aclGetViewShape(const aclTensor* tensor, int64_t** viewDims, uint64_t* viewDimsNum) {
  return get("aclGetViewShape", tensor, HandleKind::kTensor, "tensor", {viewDims, viewDimsNum},
             [&] { return copy_out(tensor->view_dims, viewDims, viewDimsNum); });
}

aclnnStatus aclGetStorageShape(const aclTensor* tensor, int64_t** storageDims,
                               uint64_t* storageDimsNum) {
  return get("aclGetStorageShape", tensor, HandleKind::kTensor, "tensor",
             {storageDims, storageDimsNum},
             [&] { return copy_out(tensor->storage_dims, storageDims, storageDimsNum); });
}

aclnnStatus aclGetViewStrides(const aclTensor* tensor, int64_t** stridesValue,
                              uint64_t* stridesNum) {
  return get("aclGetViewStrides", tensor, HandleKind::kTensor, "tensor", {stridesValue, stridesNum},
             [&] { return copy_out(tensor->strides, stridesValue, stridesNum); });
}

aclnnStatus aclGetViewOffset(const aclTensor* tensor, int64_t* offset) {
  return get("aclGetViewOffset", tensor, HandleKind::kTensor, "tensor", {offset}, [&] {
    *offset = tensor->offset;
    return ACLNN_SUCCESS;
  });
}

aclnnStatus aclGetFormat(const aclTensor* tensor, aclFormat* format) {
  return get("aclGetFormat", tensor, HandleKind::kTensor, "tensor", {format}, [&] {
    *format = tensor->format;
    return ACLNN_SUCCESS;
  });
}

aclnnStatus aclGetDataType(const aclTensor* tensor, aclDataType* dataType) {
  return get("aclGetDataType", tensor, HandleKind::kTensor, "tensor", {dataType}, [&] {
    *dataType = tensor->dtype;
    return ACLNN_SUCCESS;
  });
}

aclnnStatus aclGetIntArraySize(const aclIntArray* array, uint64_t* size) {
  return get("aclGetIntArraySize", array, HandleKind::kIntArray, "array", {size}, [&] {
    *size = array->values.size();
    return ACLNN_SUCCESS;
  });
}

aclnnStatus aclGetFloatArraySize(const aclFloatArray* array, uint64_t* size) {
  return get("aclGetFloatArraySize", array, HandleKind::kFloatArray, "array", {size}, [&] {
    *size = array->values.size();
    return ACLNN_SUCCESS;
  });
}

aclnnStatus aclGetBoolArraySize(const aclBoolArray* array, uint64_t* size) {
  return get("aclGetBoolArraySize", array, HandleKind::kBoolArray, "array", {size}, [&] {
    *size = array->values.size();
    return ACLNN_SUCCESS;
  });
}

aclnnStatus aclGetTensorListSize(const aclTensorList* tensorList, uint64_t* size) {
  return get("aclGetTensorListSize", tensorList, HandleKind::kTensorList, "tensorList", {size},
             [&] {
               *size = tensorList->tensors.size();
               return ACLNN_SUCCESS;
             });
}

}  // extern "C"
