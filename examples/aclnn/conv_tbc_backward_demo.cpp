// Standalone use of aclnnConvTbcBackward (temporal convolution, time-batch-channel layout), written
// the way Ascend programs are: runtime set-up, device buffers, aclTensors, two-phase call, copy
// back, clean-up. Runs on the CPU through aclgrad's libaclnn.
//
// Problem (worked out by hand so the output can be checked), T = 4, B = 2, C_in = C_out = 1, K = 2,
// pad = 0, so T_out = T + 2*pad + 1 - K = 3:
//   input x[t][b]:       b0 = [1, 2, 3, 4], b1 = [5, 6, 7, 8]   (stored [T, B, C])
//   weight w[k]:         [1, 2]                                 (stored [K, C_in, C_out])
//   gradOutput g[t][b]:  b0 = [1, 1, 1],    b1 = [1, 0, 0]
//   gradInput[i][b]  = sum_k g[i-k][b] * w[k]:  b0 = [1, 3, 3, 2], b1 = [1, 2, 0, 0]
//                      stored [T, B]: [1, 1, 3, 2, 3, 0, 2, 0]
//   gradWeight[k]    = sum_{t,b} g[t][b] * x[t+k][b]: k0 = 6 + 5 = 11, k1 = 9 + 6 = 15
//   gradBias         = sum of g = 4
#include <cstdio>
#include <memory>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_convolution_backward.h"

namespace {

using TensorPtr = std::unique_ptr<aclTensor, aclnnStatus (*)(const aclTensor*)>;
using DevicePtr = std::unique_ptr<void, aclError (*)(void*)>;

// A device copy of `host` described as a contiguous ND tensor of `shape`.
struct DeviceTensor {
  DevicePtr buffer{nullptr, aclrtFree};
  TensorPtr tensor{nullptr, aclDestroyTensor};
  size_t count = 0;

  bool init(const std::vector<float>& host, const std::vector<int64_t>& shape) {
    count = host.size();
    void* dev = nullptr;
    if (aclrtMalloc(&dev, count * sizeof(float), ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) {
      return false;
    }
    buffer.reset(dev);
    if (aclrtMemcpy(dev, count * sizeof(float), host.data(), count * sizeof(float),
                    ACL_MEMCPY_HOST_TO_DEVICE) != ACL_SUCCESS) {
      return false;
    }
    tensor.reset(aclCreateTensor(shape.data(), shape.size(), ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND,
                                 shape.data(), shape.size(), dev));
    return tensor != nullptr;
  }

  void print(const char* name) const {
    std::vector<float> host(count);
    aclrtMemcpy(host.data(), count * sizeof(float), buffer.get(), count * sizeof(float),
                ACL_MEMCPY_DEVICE_TO_HOST);
    std::printf("%s = [", name);
    for (size_t i = 0; i < count; ++i) std::printf(i ? ", %g" : "%g", host[i]);
    std::printf("]\n");
  }
};

int fail(const char* what, int code) {
  std::fprintf(stderr, "%s failed with %d: %s\n", what, code, aclGetRecentErrMsg());
  return 1;
}

int run(aclrtStream stream) {
  const int64_t pad = 0;
  DeviceTensor x, w, bias, dy, dx, dw, db;
  if (!x.init({1, 5, 2, 6, 3, 7, 4, 8}, {4, 2, 1}) || !w.init({1, 2}, {2, 1, 1}) ||
      !bias.init({0}, {1}) || !dy.init({1, 1, 1, 0, 1, 0}, {3, 2, 1}) ||
      !dx.init(std::vector<float>(8), {4, 2, 1}) || !dw.init(std::vector<float>(2), {2, 1, 1}) ||
      !db.init(std::vector<float>(1), {1})) {
    return fail("creating tensors", -1);
  }

  uint64_t workspace_bytes = 0;
  aclOpExecutor* executor = nullptr;
  int ret = aclnnConvTbcBackwardGetWorkspaceSize(
      dy.tensor.get(), x.tensor.get(), w.tensor.get(), bias.tensor.get(), pad,
      /*cubeMathType=*/0, dx.tensor.get(), dw.tensor.get(), db.tensor.get(), &workspace_bytes,
      &executor);
  if (ret != ACL_SUCCESS) return fail("aclnnConvTbcBackwardGetWorkspaceSize", ret);

  DevicePtr workspace(nullptr, aclrtFree);
  if (workspace_bytes > 0) {
    void* p = nullptr;
    ret = aclrtMalloc(&p, workspace_bytes, ACL_MEM_MALLOC_HUGE_FIRST);
    if (ret != ACL_SUCCESS) return fail("aclrtMalloc(workspace)", ret);
    workspace.reset(p);
  }
  ret = aclnnConvTbcBackward(workspace.get(), workspace_bytes, executor, stream);
  if (ret != ACL_SUCCESS) return fail("aclnnConvTbcBackward", ret);
  ret = aclrtSynchronizeStream(stream);
  if (ret != ACL_SUCCESS) return fail("aclrtSynchronizeStream", ret);

  dx.print("gradInput ");
  dw.print("gradWeight");
  db.print("gradBias  ");
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
