// The runtime shim: lifecycle, streams, memory. Bad handles and sizes must give error codes and a
// message naming the API, never a crash.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "support/raw_enum_calls.h"

namespace {

std::string recent() {
  return aclGetRecentErrMsg();
}

// Each test starts from an initialised runtime with device 0 set and finalises at the end.
class Runtime : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS);
    ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
  }
  void TearDown() override { aclFinalize(); }
};

TEST(RuntimeLifecycle, RepeatedInitAndFinalizeReturnCodes) {
  ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS);
  EXPECT_EQ(aclInit(nullptr), ACL_ERROR_REPEAT_INITIALIZE);
  EXPECT_NE(recent().find("aclInit"), std::string::npos);
  EXPECT_EQ(aclFinalize(), ACL_SUCCESS);
  EXPECT_EQ(aclFinalize(), ACL_ERROR_REPEAT_FINALIZE);
  EXPECT_NE(recent().find("aclFinalize"), std::string::npos);
  EXPECT_EQ(aclFinalize(), ACL_ERROR_REPEAT_FINALIZE);
}

TEST(RuntimeLifecycle, InitWithMissingConfigFileFails) {
  EXPECT_EQ(aclInit("/nonexistent/acl.json"), ACL_ERROR_INVALID_FILE);
  EXPECT_NE(recent().find("/nonexistent/acl.json"), std::string::npos);
  // The failed init left the runtime uninitialised.
  EXPECT_EQ(aclrtSetDevice(0), ACL_ERROR_UNINITIALIZE);
}

TEST(RuntimeLifecycle, SetDeviceBeforeInitIsRejected) {
  EXPECT_EQ(aclrtSetDevice(0), ACL_ERROR_UNINITIALIZE);
  EXPECT_NE(recent().find("aclrtSetDevice"), std::string::npos);
}

TEST_F(Runtime, InvalidDeviceIdIsRejected) {
  EXPECT_EQ(aclrtSetDevice(1), ACL_ERROR_RT_INVALID_DEVICEID);
  EXPECT_NE(recent().find("deviceId 1"), std::string::npos);
  EXPECT_EQ(aclrtSetDevice(-3), ACL_ERROR_RT_INVALID_DEVICEID);
  EXPECT_EQ(aclrtResetDevice(7), ACL_ERROR_RT_INVALID_DEVICEID);
  int32_t dev = -1;
  ASSERT_EQ(aclrtGetDevice(&dev), ACL_SUCCESS);
  EXPECT_EQ(dev, 0);
  uint32_t count = 0;
  ASSERT_EQ(aclrtGetDeviceCount(&count), ACL_SUCCESS);
  EXPECT_EQ(count, 1u);
}

TEST_F(Runtime, StreamDestroyedTwiceReturnsErrorNotCrash) {
  aclrtStream s = nullptr;
  ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyStream(s), ACL_ERROR_INVALID_PARAM);
  EXPECT_NE(recent().find("aclrtDestroyStream"), std::string::npos);
  EXPECT_NE(recent().find("not a live stream"), std::string::npos);
  EXPECT_EQ(aclrtSynchronizeStream(s), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtDestroyStream(nullptr), ACL_ERROR_INVALID_PARAM);
}

TEST_F(Runtime, GarbageStreamHandleIsRejected) {
  // CANN samples pass an uninitialised aclrtStream to their clean-up on early failures.
  int not_a_stream = 42;
  EXPECT_EQ(aclrtDestroyStream(&not_a_stream), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtSynchronizeStream(&not_a_stream), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS);  // the default stream
}

TEST_F(Runtime, SampleStyleCleanupTwiceIsHarmless) {
  aclrtStream s = nullptr;
  ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
  for (int round = 0; round < 2; ++round) {  // an error path's Finalize, then main's Finalize
    const aclError destroyed = aclrtDestroyStream(s);
    EXPECT_EQ(destroyed, round == 0 ? ACL_SUCCESS : ACL_ERROR_INVALID_PARAM);
    EXPECT_EQ(aclrtResetDevice(0), ACL_SUCCESS);
    const aclError finalized = aclFinalize();
    EXPECT_EQ(finalized, round == 0 ? ACL_SUCCESS : ACL_ERROR_REPEAT_FINALIZE);
  }
  ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS);  // TearDown finalises again
}

TEST_F(Runtime, FinalizeReleasesStreams) {
  aclrtStream s = nullptr;
  ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
  ASSERT_EQ(aclFinalize(), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyStream(s), ACL_ERROR_INVALID_PARAM);
  ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS);
}

TEST_F(Runtime, CreateStreamNeedsDevice) {
  ASSERT_EQ(aclrtResetDevice(0), ACL_SUCCESS);
  aclrtStream s = nullptr;
  EXPECT_EQ(aclrtCreateStream(&s), ACL_ERROR_RT_CONTEXT_NULL);
  EXPECT_NE(recent().find("aclrtSetDevice"), std::string::npos);
  EXPECT_EQ(aclrtCreateStream(nullptr), ACL_ERROR_INVALID_PARAM);
}

TEST_F(Runtime, MallocCopyFreeRoundTrip) {
  std::vector<float> host(1000);
  for (size_t i = 0; i < host.size(); ++i) host[i] = 0.5f * static_cast<float>(i) - 7.0f;
  void* dev = nullptr;
  const size_t bytes = host.size() * sizeof(float);
  ASSERT_EQ(aclrtMalloc(&dev, bytes, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(dev) % 64, 0u);
  ASSERT_EQ(aclrtMemcpy(dev, bytes, host.data(), bytes, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
  std::vector<float> back(host.size(), 0.0f);
  ASSERT_EQ(aclrtMemcpy(back.data(), bytes, dev, bytes, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  EXPECT_EQ(back, host);
  ASSERT_EQ(aclrtMemset(dev, bytes, 0, bytes), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemcpy(back.data(), bytes, dev, bytes, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  EXPECT_EQ(back, std::vector<float>(host.size(), 0.0f));
  EXPECT_EQ(aclrtFree(dev), ACL_SUCCESS);
}

TEST_F(Runtime, MemcpySizeMismatchesAreRejected) {
  void* dev = nullptr;
  ASSERT_EQ(aclrtMalloc(&dev, 64, ACL_MEM_MALLOC_NORMAL_ONLY), ACL_SUCCESS);
  std::vector<char> host(256, 1);
  // count larger than destMax
  EXPECT_EQ(aclrtMemcpy(dev, 64, host.data(), 128, ACL_MEMCPY_HOST_TO_DEVICE),
            ACL_ERROR_INVALID_PARAM);
  EXPECT_NE(recent().find("count 128"), std::string::npos);
  EXPECT_NE(recent().find("destMax 64"), std::string::npos);
  // destMax lies about the device buffer: the runtime knows it is 64 bytes.
  EXPECT_EQ(aclrtMemcpy(dev, 256, host.data(), 128, ACL_MEMCPY_HOST_TO_DEVICE),
            ACL_ERROR_INVALID_PARAM);
  EXPECT_NE(recent().find("64-byte buffer"), std::string::npos);
  // Reading past the end of a device buffer, also from an interior pointer.
  EXPECT_EQ(aclrtMemcpy(host.data(), 256, dev, 100, ACL_MEMCPY_DEVICE_TO_HOST),
            ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(
      aclrtMemcpy(host.data(), 256, static_cast<char*>(dev) + 32, 40, ACL_MEMCPY_DEVICE_TO_HOST),
      ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(
      aclrtMemcpy(host.data(), 256, static_cast<char*>(dev) + 32, 32, ACL_MEMCPY_DEVICE_TO_HOST),
      ACL_SUCCESS);
  EXPECT_EQ(aclrtMemcpy(nullptr, 64, host.data(), 8, ACL_MEMCPY_HOST_TO_DEVICE),
            ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtMemcpy(dev, 64, nullptr, 8, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(acltest_memcpy_raw(dev, 64, host.data(), 8, 9), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtMemset(dev, 64, 0, 65), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtMemset(dev, 128, 0, 65), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtFree(dev), ACL_SUCCESS);
}

TEST_F(Runtime, BadAllocationsAndDoubleFreeAreRejected) {
  void* p = nullptr;
  EXPECT_EQ(aclrtMalloc(&p, 0, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
  EXPECT_NE(recent().find("size is 0"), std::string::npos);
  EXPECT_EQ(aclrtMalloc(nullptr, 16, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(acltest_malloc_raw(&p, 16, 7), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtMalloc(&p, SIZE_MAX, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_BAD_ALLOC);
  ASSERT_EQ(aclrtMalloc(&p, 16, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  EXPECT_EQ(aclrtFreeHost(p), ACL_ERROR_INVALID_PARAM);  // wrong family
  EXPECT_EQ(aclrtFree(p), ACL_SUCCESS);
  EXPECT_EQ(aclrtFree(p), ACL_ERROR_INVALID_PARAM);
  EXPECT_NE(recent().find("already freed"), std::string::npos);
  EXPECT_EQ(aclrtFree(nullptr), ACL_ERROR_INVALID_PARAM);
  int local = 0;
  EXPECT_EQ(aclrtFree(&local), ACL_ERROR_INVALID_PARAM);
  void* h = nullptr;
  ASSERT_EQ(aclrtMallocHost(&h, 32), ACL_SUCCESS);
  EXPECT_EQ(aclrtFree(h), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtFreeHost(h), ACL_SUCCESS);
}

// A copy or memset through a pointer into a released buffer is refused, not performed on memory
// the heap may already have handed to someone else (the sanitizer stage saw a heap-use-after-free
// here). Small and page-spanning buffers, both allocation families, interior pointers.
TEST_F(Runtime, CopiesThroughReleasedBuffersAreRefused) {
  std::vector<char> host(3 << 20, 1);
  for (size_t bytes : {size_t{256}, size_t{3} << 20}) {
    void* dev = nullptr;
    ASSERT_EQ(aclrtMalloc(&dev, bytes, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    ASSERT_EQ(aclrtFree(dev), ACL_SUCCESS);
    EXPECT_EQ(aclrtMemcpy(dev, bytes, host.data(), bytes, ACL_MEMCPY_HOST_TO_DEVICE),
              ACL_ERROR_INVALID_PARAM);
    EXPECT_NE(recent().find("aclrtMemcpy: dst "), std::string::npos) << recent();
    EXPECT_NE(recent().find(std::to_string(bytes) + "-byte buffer from aclrtMalloc"),
              std::string::npos)
        << recent();
    EXPECT_NE(recent().find("already released"), std::string::npos) << recent();
    char* inner = static_cast<char*>(dev) + bytes / 2;
    EXPECT_EQ(aclrtMemcpy(host.data(), bytes, inner, 8, ACL_MEMCPY_DEVICE_TO_HOST),
              ACL_ERROR_INVALID_PARAM);
    EXPECT_NE(recent().find("src "), std::string::npos) << recent();
    EXPECT_NE(recent().find("at offset " + std::to_string(bytes / 2)), std::string::npos)
        << recent();
    EXPECT_EQ(aclrtMemset(dev, bytes, 0, bytes), ACL_ERROR_INVALID_PARAM);
    EXPECT_NE(recent().find("already released"), std::string::npos) << recent();
    EXPECT_EQ(aclrtFree(dev), ACL_ERROR_INVALID_PARAM);
  }
  void* h = nullptr;
  ASSERT_EQ(aclrtMallocHost(&h, 100), ACL_SUCCESS);
  ASSERT_EQ(aclrtFreeHost(h), ACL_SUCCESS);
  EXPECT_EQ(aclrtMemcpy(h, 100, host.data(), 100, ACL_MEMCPY_HOST_TO_HOST),
            ACL_ERROR_INVALID_PARAM);
  EXPECT_NE(recent().find("buffer from aclrtMallocHost"), std::string::npos) << recent();
  EXPECT_TRUE(std::all_of(host.begin(), host.end(), [](char c) { return c == 1; }));
}

// Released buffers leave the quarantine in order, oldest first, once it is full; allocating and
// freeing many more than it holds works and the newest released buffer is still recognised.
TEST_F(Runtime, ManyReleasesCycleThroughTheQuarantine) {
  void* last = nullptr;
  for (int i = 0; i < 10000; ++i) {
    ASSERT_EQ(aclrtMalloc(&last, 64 + (i % 3) * 8192, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    ASSERT_EQ(aclrtMemset(last, 64, 0, 64), ACL_SUCCESS);
    ASSERT_EQ(aclrtFree(last), ACL_SUCCESS);
  }
  EXPECT_EQ(aclrtMemset(last, 64, 0, 64), ACL_ERROR_INVALID_PARAM);
}

TEST(RuntimeErrors, MessageIsPerThreadAndNamesTheApi) {
  ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS);  // (aclrtMalloc refuses any size before aclInit)
  void* p = nullptr;
  EXPECT_EQ(aclrtMalloc(&p, 0, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
  const std::string msg = recent();
  EXPECT_EQ(msg.rfind("aclrtMalloc: ", 0), 0u) << msg;
  EXPECT_NE(msg.find("size is 0"), std::string::npos) << msg;
  EXPECT_EQ(aclFinalize(), ACL_SUCCESS);
}

}  // namespace
