#include "ops/aclnn_bridge.h"

#include <sstream>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include "aclnn/aclnn_base.h"
#include "aclnn/aclnn_cpu_extensions.h"

namespace aclgrad {

namespace {

std::string aclnn_error_text(const std::string& api, int32_t status, const std::string& message) {
  std::ostringstream os;
  os << api << " failed with status " << status << ": "
     << (message.empty() ? "(no message from libaclnn)" : message);
  return os.str();
}

}  // namespace

AclnnError::AclnnError(std::string api, int32_t status, const std::string& aclnn_message,
                       std::source_location where)
    : Error(aclnn_error_text(api, status, aclnn_message), where),
      api_(std::move(api)),
      status_(status) {}

namespace aclnn {

namespace {

aclDataType acl_dtype(Dtype dtype) {
  switch (dtype) {
    case Dtype::Float32:
      return ACL_FLOAT;
    case Dtype::Float64:
      return ACL_DOUBLE;
    case Dtype::Float16:
      return ACL_FLOAT16;
    case Dtype::BFloat16:
      return ACL_BF16;
    default:
      break;
  }
  detail::fail<DtypeError>(std::source_location::current(), "aclnn: tensors of dtype ", dtype,
                           " cannot be passed to libaclnn (float32, float64, float16 and bfloat16 ",
                           "can)");
}

// [[noreturn]] AclnnError with the message libaclnn recorded for this thread's last failure.
[[noreturn]] void throw_aclnn(const std::string& api, int32_t status) {
  const char* msg = aclGetRecentErrMsg();
  throw AclnnError(api, status, msg ? msg : "");
}

TensorHandle make_tensor(const Shape& sizes, const Shape& strides, int64_t offset, Dtype dtype,
                         Format format, int64_t storage_elements, void* data) {
  const int64_t storage_dims[1] = {storage_elements};
  aclTensor* t = aclCreateTensor(sizes.data(), sizes.size(), acl_dtype(dtype), strides.data(),
                                 offset, static_cast<aclFormat>(format), storage_dims, 1, data);
  if (t == nullptr) throw_aclnn("aclCreateTensor", ACLNN_ERR_PARAM_INVALID);
  return TensorHandle(t);
}

// One zero element of any supported dtype (all-zero bits are 0 in each).
alignas(16) const unsigned char kZeroElement[16] = {};

// This thread's workspace: grows to the largest request seen, never shrinks.
thread_local Storage tls_workspace;

void* workspace_for(uint64_t bytes) {
  if (bytes == 0) return nullptr;
  if (tls_workspace.nbytes() < bytes) {
    tls_workspace = Storage();  // free the old buffer before allocating the larger one
    tls_workspace = Storage::allocate(bytes);
  }
  return tls_workspace.data();
}

}  // namespace

Format conv_format(int64_t dim) {
  switch (dim) {
    case 3:
      return Format::NCL;
    case 4:
      return Format::NCHW;
    case 5:
      return Format::NCDHW;
    default:
      return Format::ND;
  }
}

void TensorDeleter::operator()(aclTensor* t) const noexcept {
  aclDestroyTensor(t);
}
void IntArrayDeleter::operator()(aclIntArray* a) const noexcept {
  aclDestroyIntArray(a);
}
void BoolArrayDeleter::operator()(aclBoolArray* a) const noexcept {
  aclDestroyBoolArray(a);
}

TensorHandle view_of(const Tensor& t, Format format) {
  const Storage& s = t.storage();
  const int64_t storage_elements = static_cast<int64_t>(s.nbytes()) / t.element_size();
  return make_tensor(t.sizes(), t.strides(), t.storage_offset(), t.dtype(), format,
                     storage_elements, s.data());
}

TensorHandle optional_view_of(const Tensor& t) {
  return t.defined() ? view_of(t) : TensorHandle();
}

TensorHandle shape_only(const Shape& sizes, Dtype dtype, Format format) {
  // libaclnn never writes inputs; the const_cast only satisfies aclCreateTensor's void*.
  return make_tensor(sizes, Shape(sizes.size(), 0), 0, dtype, format, 1,
                     const_cast<unsigned char*>(kZeroElement));
}

IntArrayHandle int_array(const std::vector<int64_t>& values) {
  aclIntArray* a = aclCreateIntArray(values.data(), values.size());
  if (a == nullptr) throw_aclnn("aclCreateIntArray", ACLNN_ERR_PARAM_INVALID);
  return IntArrayHandle(a);
}

BoolArrayHandle bool_array(std::initializer_list<bool> values) {
  aclBoolArray* a = aclCreateBoolArray(values.begin(), values.size());
  if (a == nullptr) throw_aclnn("aclCreateBoolArray", ACLNN_ERR_PARAM_INVALID);
  return BoolArrayHandle(a);
}

void run_two_phase(const char* api, GetWorkspaceFn get_workspace, LaunchFn launch) {
  // The framework's own calls use libaclnn's CPU-only extensions (DOUBLE, for gradcheck); they are
  // per thread and restored on return, so a CANN program's calls on this thread stay unaffected.
  struct ExtensionScope {
    uint32_t previous = aclnnCpuSetExtensions(ACLNN_CPU_EXT_DOUBLE);
    ~ExtensionScope() { aclnnCpuSetExtensions(previous); }
  } extensions;
  uint64_t bytes = 0;
  aclOpExecutor* raw = nullptr;
  if (const int32_t st = get_workspace(&bytes, &raw); st != ACLNN_SUCCESS) {
    throw_aclnn(std::string(api) + "GetWorkspaceSize", st);
  }
  // Repeatable: a launch never consumes it, so this function owns it on every path.
  struct ExecutorGuard {
    aclOpExecutor* e;
    ~ExecutorGuard() { aclDestroyAclOpExecutor(e); }
  } guard{raw};
  if (const int32_t st = aclSetAclOpExecutorRepeatable(raw); st != ACLNN_SUCCESS) {
    throw_aclnn("aclSetAclOpExecutorRepeatable", st);
  }
  void* workspace = workspace_for(bytes);
  if (const int32_t st = launch(workspace, bytes, raw, nullptr); st != ACLNN_SUCCESS) {
    throw_aclnn(api, st);
  }
}

uint64_t workspace_capacity() {
  return tls_workspace.nbytes();
}

}  // namespace aclnn
}  // namespace aclgrad
