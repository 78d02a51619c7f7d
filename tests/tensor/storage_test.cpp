// Storage ownership and alignment, the version counter shared by views, and the autograd hooks.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "tensor/creation.h"
#include "tensor/tensor.h"
#include "tests/tensor/test_util.h"

namespace aclgrad {
namespace {

using testing::message_of;

TEST(Storage, AllocationsAre64ByteAligned) {
  for (size_t n : {1u, 3u, 64u, 100u, 4097u}) {
    const Storage s = Storage::allocate(n);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(s.data()) % 64, 0u) << n;
    EXPECT_EQ(s.nbytes(), n);
  }
  for (Dtype dt : {Dtype::Float16, Dtype::Float64, Dtype::Bool}) {
    EXPECT_EQ(reinterpret_cast<uintptr_t>(empty({7, 3}, dt).data_ptr()) % 64, 0u);
  }
  const Storage zero = Storage::allocate(0);
  EXPECT_TRUE(zero.defined());
  EXPECT_EQ(zero.data(), nullptr);
  EXPECT_EQ(empty({0, 5}).data_ptr(), nullptr);
}

// Large buffers are kept when freed and handed out again for the same size class (8 classes per
// power of two); small ones are not; release_cached() returns them all. Skipped when the cache
// is off (AddressSanitizer builds).
TEST(Storage, LargeFreedBuffersAreReusedForTheSameSizeClass) {
  Storage::release_cached();
  void* first = nullptr;
  {
    const Storage s = Storage::allocate(3 << 20);  // 3 MiB: a class boundary (2 MiB + 4 x 256 KiB)
    first = s.data();
  }
  if (Storage::cached_bytes() == 0) GTEST_SKIP() << "buffer cache disabled (sanitizer build)";
  EXPECT_EQ(Storage::cached_bytes(), size_t{3} << 20);
  {
    const Storage same_class = Storage::allocate((3 << 20) - 100000);
    EXPECT_EQ(same_class.data(), first);
    EXPECT_EQ(same_class.nbytes(), size_t{(3 << 20) - 100000});
    EXPECT_EQ(Storage::cached_bytes(), 0u);
    const Storage next_class = Storage::allocate((3 << 20) + 1);
    EXPECT_NE(next_class.data(), first);
  }
  EXPECT_EQ(Storage::cached_bytes(), (size_t{3} << 20) + (size_t{13} << 18));  // 3 + 3.25 MiB
  { const Storage small = Storage::allocate(Storage::kCacheMinBytes - 64); }
  EXPECT_EQ(Storage::cached_bytes(), (size_t{3} << 20) + (size_t{13} << 18));
  Storage::release_cached();
  EXPECT_EQ(Storage::cached_bytes(), 0u);
}

TEST(Storage, CacheKeepsAtMostItsLimitDroppingTheOldestBuffers) {
  // Three 200 MiB buffers (208 MiB blocks, untouched, so only address space): the cache keeps
  // the two most recently freed ones, under kCacheMaxBytes = 512 MiB.
  Storage::release_cached();
  const size_t block = size_t{200} << 20;
  void *pa = nullptr, *pb = nullptr;
  {
    const Storage a = Storage::allocate(block), b = Storage::allocate(block),
                  c = Storage::allocate(block);
    pa = a.data(), pb = b.data();
  }  // freed in the order c, b, a: c is the oldest, dropped when a comes in
  if (Storage::cached_bytes() == 0) GTEST_SKIP() << "buffer cache disabled (sanitizer build)";
  EXPECT_EQ(Storage::cached_bytes(), 2 * (size_t{208} << 20));
  const Storage again1 = Storage::allocate(block), again2 = Storage::allocate(block);
  EXPECT_EQ(again1.data(), pa);  // the most recently freed first
  EXPECT_EQ(again2.data(), pb);
  EXPECT_EQ(Storage::cached_bytes(), 0u);
  Storage::release_cached();
}

TEST(Storage, WrapsForeignMemoryWithoutCopying) {
  float buffer[6] = {0, 1, 2, 3, 4, 5};
  Tensor t = Tensor::make(Storage::wrap(buffer, sizeof buffer), Layout::contiguous({2, 3}),
                          Dtype::Float32);
  EXPECT_EQ(t.data_ptr<float>(), buffer);
  buffer[4] = 40;
  EXPECT_EQ(t.at<float>({1, 1}), 40.0f);
  t.at<float>({0, 2}) = 20;
  EXPECT_EQ(buffer[2], 20.0f);
}

TEST(Storage, DeleterRunsOnceWhenTheLastViewDies) {
  int calls = 0;
  {
    auto* data = new double[4];
    Tensor t = Tensor::make(
        Storage::wrap(data, 4 * sizeof(double),
                      [&calls](void* p) { ++calls, delete[] static_cast<double*>(p); }),
        Layout::contiguous({4}), Dtype::Float64);
    Tensor v = t.narrow(0, 1, 2);
    t = Tensor();
    EXPECT_EQ(calls, 0);
    v.fill_(1.0);
  }
  EXPECT_EQ(calls, 1);
}

TEST(Storage, KeepAliveIsHeldAsLongAsTheStorage) {
  auto owner = std::make_shared<std::vector<int64_t>>(8, 3);
  std::weak_ptr<std::vector<int64_t>> watch = owner;
  Tensor t = Tensor::make(Storage::wrap(owner->data(), 8 * sizeof(int64_t), owner),
                          Layout::contiguous({8}), Dtype::Int64);
  owner.reset();
  EXPECT_FALSE(watch.expired());
  EXPECT_EQ(t.at<int64_t>({7}), 3);
  t = Tensor();
  EXPECT_TRUE(watch.expired());
}

TEST(Storage, MakeRejectsLayoutsLargerThanTheStorage) {
  const std::string m = message_of<IndexError>(
      [] { Tensor::make(Storage::allocate(40), Layout::contiguous({11}), Dtype::Float32); });
  EXPECT_NE(m.find("need 11 elements but the storage holds 10"), std::string::npos) << m;
}

TEST(Version, SharedByAllViewsAndBumpedByInPlaceOps) {
  Tensor a = zeros({4, 4});
  Tensor v = a.t().narrow(0, 1, 2);
  const uint64_t v0 = a.version();
  EXPECT_EQ(v.version(), v0);
  v.fill_(1);
  EXPECT_EQ(a.version(), v0 + 1);
  a.copy_(ones({4}));
  EXPECT_EQ(v.version(), v0 + 2);
  a.bump_version();
  EXPECT_EQ(v.version(), v0 + 3);
  EXPECT_EQ(a.detach().version(), v0 + 3);
  Tensor c = a.clone();
  const uint64_t c0 = c.version();
  c.fill_(2);
  EXPECT_EQ(c.version(), c0 + 1);
  EXPECT_EQ(a.version(), v0 + 3);  // a clone has its own counter
}

struct FakeMeta : AutogradMeta {
  explicit FakeMeta(int* alive) : alive(alive) { ++*alive; }
  ~FakeMeta() override { --*alive; }
  int* alive;
};

TEST(AutogradHooks, RequiresGradFlagAndOpaqueMeta) {
  int alive = 0;
  Tensor t = zeros({2});
  EXPECT_FALSE(t.requires_grad());
  EXPECT_EQ(t.autograd_meta(), nullptr);
  Tensor handle = t;
  t.set_requires_grad(true);
  EXPECT_TRUE(handle.requires_grad());  // handles share the impl
  t.set_autograd_meta(std::make_shared<FakeMeta>(&alive));
  EXPECT_EQ(alive, 1);
  EXPECT_NE(dynamic_cast<FakeMeta*>(handle.autograd_meta()), nullptr);
  Tensor d = t.detach();
  EXPECT_FALSE(d.requires_grad());
  EXPECT_EQ(d.autograd_meta(), nullptr);
  EXPECT_TRUE(d.shares_storage(t));
  EXPECT_NE(d.impl(), t.impl());
  t = handle = Tensor();
  EXPECT_EQ(alive, 0);
}

TEST(AutogradHooks, OnlyFloatingTensorsRequireGrad) {
  const std::string m =
      message_of<DtypeError>([] { zeros({2}, Dtype::Int64).set_requires_grad(true); });
  EXPECT_EQ(m, "set_requires_grad: only floating point tensors can require gradients, got int64");
  zeros({2}, Dtype::Int64).set_requires_grad(false);  // turning it off is always fine
}

}  // namespace
}  // namespace aclgrad
