// View ops share storage, see writes both ways, and copy correctly through contiguous().
#include <gtest/gtest.h>

#include "tensor/creation.h"
#include "tensor/tensor.h"

namespace aclgrad {
namespace {

// A [2, 3, 4] float tensor whose element (i, j, k) is i * 12 + j * 4 + k.
Tensor base234() {
  Tensor t = empty({2, 3, 4});
  float* p = t.data_ptr<float>();
  for (int i = 0; i < 24; ++i) p[i] = static_cast<float>(i);
  return t;
}
float v234(int64_t i, int64_t j, int64_t k) {
  return static_cast<float>(i * 12 + j * 4 + k);
}

// Checks a 3-d tensor element by element through at() and through contiguous() against ref.
template <typename Ref>
void expect_values_3d(const Tensor& t, Ref ref) {
  ASSERT_EQ(t.dim(), 3);
  const Tensor c = t.contiguous();
  EXPECT_TRUE(c.is_contiguous());
  const float* p = c.data_ptr<float>();
  int64_t n = 0;
  for (int64_t i = 0; i < t.size(0); ++i) {
    for (int64_t j = 0; j < t.size(1); ++j) {
      for (int64_t k = 0; k < t.size(2); ++k, ++n) {
        EXPECT_EQ(t.at<float>({i, j, k}), ref(i, j, k)) << i << "," << j << "," << k;
        EXPECT_EQ(p[n], ref(i, j, k)) << i << "," << j << "," << k;
      }
    }
  }
  EXPECT_EQ(n, t.numel());
}

TEST(Views, ViewSharesStorageAndSeesWritesBothWays) {
  Tensor b = base234();
  Tensor v = b.view({6, 4});
  EXPECT_TRUE(v.shares_storage(b));
  EXPECT_EQ(v.sizes(), (Shape{6, 4}));
  v.at<float>({4, 1}) = -1.0f;  // row 4 of [6, 4] is (i = 1, j = 1)
  EXPECT_EQ(b.at<float>({1, 1, 1}), -1.0f);
  b.at<float>({0, 2, 3}) = -2.0f;
  EXPECT_EQ(v.at<float>({2, 3}), -2.0f);
}

TEST(Views, ViewInfersMinusOne) {
  Tensor b = base234();
  EXPECT_EQ(b.view({-1, 6}).sizes(), (Shape{4, 6}));
  EXPECT_EQ(b.view({-1}).sizes(), (Shape{24}));
}

TEST(Views, TransposedCopiesThroughContiguous) {
  Tensor b = base234();
  Tensor t = b.transpose(0, 2);  // [4, 3, 2]
  EXPECT_FALSE(t.is_contiguous());
  EXPECT_TRUE(t.shares_storage(b));
  EXPECT_EQ(t.strides(), (Shape{1, 4, 12}));
  expect_values_3d(t, [](int64_t k, int64_t j, int64_t i) { return v234(i, j, k); });
  EXPECT_FALSE(t.contiguous().shares_storage(b));
}

TEST(Views, NegativeDimsMatchPositive) {
  Tensor b = base234();
  EXPECT_EQ(b.transpose(-1, -3).strides(), b.transpose(2, 0).strides());
  EXPECT_EQ(b.select(-1, -1).storage_offset(), b.select(2, 3).storage_offset());
  EXPECT_EQ(b.unsqueeze(-1).sizes(), (Shape{2, 3, 4, 1}));
  EXPECT_EQ(b.narrow(-2, -2, 2).storage_offset(), 4);
}

TEST(Views, PermuteCopiesThroughContiguous) {
  Tensor p = base234().permute({1, 2, 0});  // [3, 4, 2]
  EXPECT_EQ(p.sizes(), (Shape{3, 4, 2}));
  expect_values_3d(p, [](int64_t j, int64_t k, int64_t i) { return v234(i, j, k); });
}

TEST(Views, SliceWithStepCopiesThroughContiguous) {
  Tensor s = base234().slice(2, 1, 4, 2);  // k = 1, 3
  EXPECT_EQ(s.sizes(), (Shape{2, 3, 2}));
  EXPECT_EQ(s.storage_offset(), 1);
  EXPECT_EQ(s.strides(), (Shape{12, 4, 2}));
  expect_values_3d(s, [](int64_t i, int64_t j, int64_t k) { return v234(i, j, 1 + 2 * k); });
}

TEST(Views, SliceClampsLikePython) {
  Tensor b = base234();
  EXPECT_EQ(b.slice(2, -3).sizes(), (Shape{2, 3, 3}));
  EXPECT_EQ(b.slice(2, 0, 100, 3).sizes(), (Shape{2, 3, 2}));
  EXPECT_EQ(b.slice(1, 2, 1).sizes(), (Shape{2, 0, 4}));
  EXPECT_EQ(b.slice(0, -100, -1).sizes(), (Shape{1, 3, 4}));
}

TEST(Views, NarrowWithOffsetCopiesThroughContiguous) {
  Tensor n = base234().narrow(1, 1, 2);
  EXPECT_EQ(n.storage_offset(), 4);
  EXPECT_FALSE(n.is_contiguous());
  expect_values_3d(n, [](int64_t i, int64_t j, int64_t k) { return v234(i, j + 1, k); });
  Tensor first = base234().narrow(0, 1, 1);  // a contiguous block at an offset
  EXPECT_TRUE(first.is_contiguous());
  expect_values_3d(first, [](int64_t, int64_t j, int64_t k) { return v234(1, j, k); });
}

TEST(Views, SelectWithOffsetCopiesThroughContiguous) {
  Tensor b = base234();
  Tensor s = b.select(1, 2);  // [2, 4]
  EXPECT_EQ(s.sizes(), (Shape{2, 4}));
  EXPECT_EQ(s.storage_offset(), 8);
  const std::vector<float> got = s.contiguous().to_vector<float>();
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t k = 0; k < 4; ++k) EXPECT_EQ(got[i * 4 + k], v234(i, 2, k));
  }
  s.at<float>({1, 3}) = 99.0f;
  EXPECT_EQ(b.at<float>({1, 2, 3}), 99.0f);
}

TEST(Views, ExpandUsesStrideZeroAndCopiesThroughContiguous) {
  Tensor row = arange(4).view({1, 4});
  Tensor e = row.expand({3, -1}).unsqueeze(0).expand({2, 3, 4});
  EXPECT_EQ(e.strides(), (Shape{0, 0, 1}));
  EXPECT_TRUE(e.shares_storage(row));
  expect_values_3d(e, [](int64_t, int64_t, int64_t k) { return static_cast<float>(k); });
  row.at<float>({0, 2}) = 7.0f;  // one write is seen at every expanded position
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t j = 0; j < 3; ++j) EXPECT_EQ(e.at<float>({i, j, 2}), 7.0f);
  }
}

TEST(Views, ComposedViewsCopyThroughContiguous) {
  // transpose -> step slice -> offset narrow: every kind of stride at once.
  Tensor c = base234().transpose(0, 1).slice(2, 0, 4, 3).narrow(0, 1, 2);  // [2, 2, 2]
  expect_values_3d(c, [](int64_t j, int64_t i, int64_t k) { return v234(i, j + 1, 3 * k); });
}

TEST(Views, ReshapeOfContiguousSharesStorage) {
  Tensor b = base234();
  Tensor r = b.reshape({4, 6});
  EXPECT_TRUE(r.shares_storage(b));
  EXPECT_EQ(r.data_ptr(), b.data_ptr());
}

TEST(Views, ReshapeOfNonContiguousCopies) {
  Tensor t = base234().transpose(1, 2);  // [2, 4, 3]
  Tensor r = t.reshape({24});
  EXPECT_FALSE(r.shares_storage(t));
  const std::vector<float> got = r.to_vector<float>();
  int64_t n = 0;
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t k = 0; k < 4; ++k) {
      for (int64_t j = 0; j < 3; ++j) EXPECT_EQ(got[n++], v234(i, j, k));
    }
  }
}

TEST(Views, ReshapeOfCompatibleNonContiguousStillViews) {
  // Narrowing dim 0 keeps dims 1 and 2 contiguous w.r.t. each other, so they can be merged.
  Tensor b = empty({4, 3, 5});
  Tensor n = b.slice(0, 0, 4, 2);  // strides [30, 5, 1]
  EXPECT_FALSE(n.is_contiguous());
  Tensor r = n.reshape({2, 15});
  EXPECT_TRUE(r.shares_storage(b));
  EXPECT_EQ(r.strides(), (Shape{30, 1}));
  // Splitting a strided dim is also a view: [2, 15] -> [2, 3, 5].
  EXPECT_EQ(r.view({2, 3, 5}).strides(), (Shape{30, 5, 1}));
  // Merging the strided dim 0 with the rest is not.
  EXPECT_FALSE(n.reshape({30}).shares_storage(b));
  EXPECT_THROW(n.view({30}), ShapeError);
}

TEST(Views, ViewOfTransposedKeepsSizeOneDimsFree) {
  Tensor t = empty({3, 1, 4}).transpose(0, 2);  // [4, 1, 3], strides [1, 4, 4]
  Tensor v = t.view({4, 3});
  EXPECT_TRUE(v.shares_storage(t));
  EXPECT_EQ(v.strides(), (Shape{1, 4}));
  EXPECT_THROW(t.view({12}), ShapeError);
}

TEST(Views, SqueezeUnsqueezeFlatten) {
  Tensor b = empty({2, 1, 3, 1});
  EXPECT_EQ(b.squeeze().sizes(), (Shape{2, 3}));
  EXPECT_EQ(b.squeeze(1).sizes(), (Shape{2, 3, 1}));
  EXPECT_EQ(b.squeeze(0).sizes(), b.sizes());  // not size 1: unchanged
  EXPECT_EQ(b.unsqueeze(0).sizes(), (Shape{1, 2, 1, 3, 1}));
  EXPECT_EQ(b.unsqueeze(4).sizes(), (Shape{2, 1, 3, 1, 1}));
  EXPECT_EQ(b.flatten().sizes(), (Shape{6}));
  EXPECT_EQ(b.flatten(1, 2).sizes(), (Shape{2, 3, 1}));
  EXPECT_TRUE(b.flatten().shares_storage(b));
  EXPECT_EQ(full({}, 5).flatten().sizes(), (Shape{1}));
  Tensor tr = base234().transpose(0, 1);
  EXPECT_FALSE(tr.flatten().shares_storage(tr));
}

TEST(Views, UnsqueezeStridesFollowPyTorch) {
  // The new dim's stride is size * stride of the dim it is inserted before (1 at the end).
  EXPECT_EQ(empty({2, 3}).unsqueeze(1).strides(), (Shape{3, 3, 1}));
  EXPECT_EQ(empty({2, 3}).unsqueeze(2).strides(), (Shape{3, 1, 1}));
  EXPECT_EQ(empty({2, 3}).t().unsqueeze(1).strides(), (Shape{1, 6, 3}));
  EXPECT_EQ(empty({2, 3}).t().unsqueeze(0).strides(), (Shape{3, 1, 3}));
}

TEST(Views, TOnlySwapsTwoDims) {
  Tensor m = empty({2, 5});
  EXPECT_EQ(m.t().sizes(), (Shape{5, 2}));
  EXPECT_EQ(m.t().strides(), (Shape{1, 5}));
  Tensor v = empty({3});
  EXPECT_EQ(v.t().sizes(), (Shape{3}));
}

TEST(Views, IsContiguousIgnoresSizeOneDimsAndEmpty) {
  Tensor b = empty({3, 1, 4});
  EXPECT_TRUE(b.as_strided({3, 1, 4}, {4, 99, 1}, 0).is_contiguous());
  EXPECT_FALSE(b.as_strided({3, 4}, {1, 3}, 0).is_contiguous());
  EXPECT_TRUE(b.narrow(0, 0, 0).is_contiguous());
  EXPECT_TRUE(full({}, 1).is_contiguous());
}

TEST(Views, AsStridedMakesOverlappingWindows) {
  Tensor a = arange(10);
  Tensor w = a.as_strided({4, 3}, {2, 1}, 1);  // windows of 3 starting at 1, 3, 5, 7
  EXPECT_TRUE(w.shares_storage(a));
  for (int64_t i = 0; i < 4; ++i) {
    for (int64_t j = 0; j < 3; ++j)
      EXPECT_EQ(w.at<float>({i, j}), static_cast<float>(1 + 2 * i + j));
  }
  // The default offset is the tensor's own.
  EXPECT_EQ(a.narrow(0, 2, 3).as_strided({2}, {1}).at<float>({0}), 2.0f);
}

TEST(Views, ZeroDimTensorViews) {
  Tensor s = full({}, 3);
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.numel(), 1);
  EXPECT_EQ(s.view({1, 1}).sizes(), (Shape{1, 1}));
  EXPECT_EQ(s.unsqueeze(0).sizes(), (Shape{1}));
  EXPECT_EQ(s.view({1}).view({}).dim(), 0);
  EXPECT_EQ(s.expand({2, 2}).strides(), (Shape{0, 0}));
}

// An empty tensor's other dims may multiply past int64 (PyTorch accepts it): its strides and
// views must neither overflow nor be refused. A non-empty one of those dims is an overflow.
TEST(Views, EmptyTensorsWithHugeDims) {
  const int64_t big = int64_t{1} << 32;
  const Tensor e = empty({0, 1, 4294967295, 4294967295});  // an IDX header's [0, 2^32-1, 2^32-1]
  EXPECT_EQ(e.numel(), 0);
  EXPECT_EQ(e.strides(), (Shape{0, 0, 4294967295, 1}));
  const Tensor f = empty({0, big, big});
  EXPECT_EQ(f.strides(), (Shape{0, big, 1}));
  EXPECT_TRUE(f.is_contiguous());
  EXPECT_EQ(f.select(1, big - 1).sizes(), (Shape{0, big}));
  EXPECT_EQ(f.narrow(1, big, 0).sizes(), (Shape{0, 0, big}));
  EXPECT_EQ(f.slice(2, big - 1).sizes(), (Shape{0, big, 1}));
  EXPECT_EQ(f.unsqueeze(1).sizes(), (Shape{0, 1, big, big}));
  EXPECT_EQ(f.transpose(0, 2).contiguous().sizes(), (Shape{big, big, 0}));
  EXPECT_EQ(f.reshape({big, 0, big}).numel(), 0);
  EXPECT_EQ(f.flatten(0, 1).sizes(), (Shape{0, big}));
  EXPECT_THROW(f.flatten(1, 2), ShapeError);  // 2^64 elements per row: a real overflow
  // Stride 0 on an outer dim of size 2^32, yet no two elements overlap: there are none.
  const Tensor g = empty({big, big, big, 0});
  EXPECT_EQ(g.strides(), (Shape{0, big, 1, 1}));
  EXPECT_NO_THROW(g.copy_(zeros({0})));
  EXPECT_THROW(empty({1, big, big}), ShapeError);
}

}  // namespace
}  // namespace aclgrad
