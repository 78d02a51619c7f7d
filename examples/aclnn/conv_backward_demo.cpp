// Standalone use of aclnnConvolutionBackward, written the way Ascend programs are: initialise the
// runtime, copy host data to "device" buffers, describe them as aclTensors, call the two-phase API,
// copy the gradients back, clean up. Runs on the CPU through aclgrad's libaclnn.
//
// Problem (worked out by hand so the output can be checked):
//   input x: 1x1x4x4 with x[i][j] = 4i + j, weight: 1x1x2x2 of ones, stride 1, no padding,
//   gradOutput: 1x1x3x3 of ones.
//   gradWeight[p][q] = sum of the 3x3 window of x at (p, q) = 36p + 9q + 45  -> [45, 54, 81, 90]
//   gradInput[i][j]  = number of windows covering (i, j) = c(i) * c(j), c = [1, 2, 2, 1]
//   gradBias         = sum of gradOutput = 9
#include <cstdio>
#include <memory>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_convolution_backward.h"

namespace {

using TensorPtr = std::unique_ptr<aclTensor, aclnnStatus (*)(const aclTensor*)>;
using ArrayPtr = std::unique_ptr<aclIntArray, aclnnStatus (*)(const aclIntArray*)>;
using DevicePtr = std::unique_ptr<void, aclError (*)(void*)>;

int64_t element_count(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// Copies `host` to a new device buffer and describes it as a contiguous tensor.
bool make_tensor(const std::vector<float>& host, const std::vector<int64_t>& shape,
                 DevicePtr& buffer, TensorPtr& tensor) {
  const size_t bytes = host.size() * sizeof(float);
  void* dev = nullptr;
  if (aclrtMalloc(&dev, bytes, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) return false;
  buffer.reset(dev);
  if (aclrtMemcpy(dev, bytes, host.data(), bytes, ACL_MEMCPY_HOST_TO_DEVICE) != ACL_SUCCESS) {
    return false;
  }
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t i = shape.size() - 1; i > 0; --i) strides[i - 1] = strides[i] * shape[i];
  const aclFormat format = shape.size() == 4 ? ACL_FORMAT_NCHW : ACL_FORMAT_ND;
  tensor.reset(aclCreateTensor(shape.data(), shape.size(), ACL_FLOAT, strides.data(), 0, format,
                               shape.data(), shape.size(), dev));
  return tensor != nullptr;
}

void print(const char* name, const void* dev, int64_t count) {
  std::vector<float> host(count);
  aclrtMemcpy(host.data(), count * sizeof(float), dev, count * sizeof(float),
              ACL_MEMCPY_DEVICE_TO_HOST);
  std::printf("%s = [", name);
  for (int64_t i = 0; i < count; ++i) std::printf(i ? ", %g" : "%g", host[i]);
  std::printf("]\n");
}

int fail(const char* what, int code) {
  std::fprintf(stderr, "%s failed with %d: %s\n", what, code, aclGetRecentErrMsg());
  return 1;
}

int run(aclrtStream stream) {
  const std::vector<int64_t> x_shape{1, 1, 4, 4}, w_shape{1, 1, 2, 2}, y_shape{1, 1, 3, 3};
  std::vector<float> x(16), w(4, 1.0f), dy(9, 1.0f);
  for (int i = 0; i < 16; ++i) x[i] = static_cast<float>(i);

  DevicePtr x_dev(nullptr, aclrtFree), w_dev(nullptr, aclrtFree), dy_dev(nullptr, aclrtFree);
  DevicePtr dx_dev(nullptr, aclrtFree), dw_dev(nullptr, aclrtFree), db_dev(nullptr, aclrtFree);
  TensorPtr x_t(nullptr, aclDestroyTensor), w_t(nullptr, aclDestroyTensor);
  TensorPtr dy_t(nullptr, aclDestroyTensor), dx_t(nullptr, aclDestroyTensor);
  TensorPtr dw_t(nullptr, aclDestroyTensor), db_t(nullptr, aclDestroyTensor);
  if (!make_tensor(x, x_shape, x_dev, x_t) || !make_tensor(w, w_shape, w_dev, w_t) ||
      !make_tensor(dy, y_shape, dy_dev, dy_t) ||
      !make_tensor(std::vector<float>(16), x_shape, dx_dev, dx_t) ||
      !make_tensor(std::vector<float>(4), w_shape, dw_dev, dw_t) ||
      !make_tensor(std::vector<float>(1), {1}, db_dev, db_t)) {
    return fail("creating tensors", -1);
  }

  const int64_t bias_size[] = {1}, ones[] = {1, 1}, zeros[] = {0, 0};
  ArrayPtr bias_sizes(aclCreateIntArray(bias_size, 1), aclDestroyIntArray);
  ArrayPtr stride(aclCreateIntArray(ones, 2), aclDestroyIntArray);
  ArrayPtr padding(aclCreateIntArray(zeros, 2), aclDestroyIntArray);
  ArrayPtr dilation(aclCreateIntArray(ones, 2), aclDestroyIntArray);
  ArrayPtr output_padding(aclCreateIntArray(zeros, 2), aclDestroyIntArray);
  const bool mask[] = {true, true, true};
  std::unique_ptr<aclBoolArray, aclnnStatus (*)(const aclBoolArray*)> output_mask(
      aclCreateBoolArray(mask, 3), aclDestroyBoolArray);

  // Phase 1: validate and size the workspace.
  uint64_t workspace_bytes = 0;
  aclOpExecutor* executor = nullptr;
  int ret = aclnnConvolutionBackwardGetWorkspaceSize(
      dy_t.get(), x_t.get(), w_t.get(), bias_sizes.get(), stride.get(), padding.get(),
      dilation.get(), false, output_padding.get(), 1, output_mask.get(), /*cubeMathType=*/0,
      dx_t.get(), dw_t.get(), db_t.get(), &workspace_bytes, &executor);
  if (ret != ACL_SUCCESS) return fail("aclnnConvolutionBackwardGetWorkspaceSize", ret);

  // Phase 2: run with exactly the workspace phase 1 asked for.
  DevicePtr workspace(nullptr, aclrtFree);
  if (workspace_bytes > 0) {
    void* p = nullptr;
    ret = aclrtMalloc(&p, workspace_bytes, ACL_MEM_MALLOC_HUGE_FIRST);
    if (ret != ACL_SUCCESS) return fail("aclrtMalloc(workspace)", ret);
    workspace.reset(p);
  }
  ret = aclnnConvolutionBackward(workspace.get(), workspace_bytes, executor, stream);
  if (ret != ACL_SUCCESS) return fail("aclnnConvolutionBackward", ret);
  ret = aclrtSynchronizeStream(stream);
  if (ret != ACL_SUCCESS) return fail("aclrtSynchronizeStream", ret);

  print("gradInput ", dx_dev.get(), element_count(x_shape));
  print("gradWeight", dw_dev.get(), element_count(w_shape));
  print("gradBias  ", db_dev.get(), 1);
  return 0;
}

}  // namespace

int main() {
  const int32_t device = 0;
  aclrtStream stream = nullptr;
  int ret = aclInit(nullptr);
  if (ret == ACL_SUCCESS) ret = aclrtSetDevice(device);
  if (ret == ACL_SUCCESS) ret = aclrtCreateStream(&stream);
  if (ret != ACL_SUCCESS) return fail("runtime initialisation", ret);
  const int status = run(stream);
  aclrtDestroyStream(stream);
  aclrtResetDevice(device);
  aclFinalize();
  return status;
}
