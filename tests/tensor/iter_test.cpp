// The strided iterator: broadcasting rules, coalescing, memory-order runs, reductions, and the
// data movement built on it (copy_, fill_).
#include <gtest/gtest.h>

#include <cmath>

#include "tensor/creation.h"
#include "tensor/iter.h"
#include "tests/tensor/test_util.h"

namespace aclgrad {
namespace {

using testing::message_of;

// A float tensor of the given shape holding 0, 1, 2, ... in row-major order.
Tensor iota(const Shape& sizes) {
  return arange(static_cast<double>(checked_numel(sizes, "t"))).view(sizes);
}

TEST(BroadcastShapes, FollowsPyTorchRules) {
  EXPECT_EQ(broadcast_shapes({2, 1, 3}, {4, 3}), (Shape{2, 4, 3}));
  EXPECT_EQ(broadcast_shapes({}, {3}), (Shape{3}));
  EXPECT_EQ(broadcast_shapes({5, 1}, {1, 0}), (Shape{5, 0}));
  EXPECT_EQ(broadcast_shapes({1}, {0}), (Shape{0}));
  EXPECT_EQ(broadcast_shapes({3, 1, 1}, {1, 4, 1}), (Shape{3, 4, 1}));
}

TEST(BroadcastShapes, MismatchNamesShapesAndDimension) {
  const std::string m = message_of<ShapeError>([] { broadcast_shapes({2, 3}, {4}); });
  EXPECT_NE(m.find("broadcast_shapes"), std::string::npos) << m;
  EXPECT_NE(m.find("[2, 3]"), std::string::npos) << m;
  EXPECT_NE(m.find("[4]"), std::string::npos) << m;
  EXPECT_NE(m.find("dimension 1"), std::string::npos) << m;
  EXPECT_THROW(broadcast_shapes({2, 0}, {2, 3}), ShapeError);
}

TEST(MapElementwise, AddBroadcastsBothInputs) {
  Tensor a = iota({2, 1, 3});
  Tensor b = iota({4, 3});
  Tensor out = empty(broadcast_shapes(a.sizes(), b.sizes()));
  map_elementwise<float, float, float>(out, {a, b}, [](float x, float y) { return x + 10 * y; });
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t j = 0; j < 4; ++j) {
      for (int64_t k = 0; k < 3; ++k) {
        EXPECT_EQ(out.at<float>({i, j, k}), static_cast<float>(i * 3 + k + 10 * (j * 3 + k)));
      }
    }
  }
}

TEST(MapElementwise, NonContiguousOutputAndInputs) {
  Tensor out_base = zeros({5, 4});
  Tensor out = out_base.t();                      // [4, 5], transposed
  Tensor a = iota({5, 8}).slice(1, 0, 8, 2).t();  // [4, 5], strided and transposed
  Tensor b = iota({5});                           // broadcast along dim 0
  map_elementwise<float, float, float>(out, {a, b}, [](float x, float y) { return x * y; });
  for (int64_t i = 0; i < 4; ++i) {
    for (int64_t j = 0; j < 5; ++j) {
      EXPECT_EQ(out_base.at<float>({j, i}), static_cast<float>((j * 8 + 2 * i) * j));
    }
  }
}

TEST(MapElementwise, InPlaceOnSameTensor) {
  Tensor a = iota({3, 4}).t();
  map_elementwise<float, float>(a, {a}, [](float x) { return 2 * x + 1; });
  for (int64_t i = 0; i < 3; ++i) {
    for (int64_t j = 0; j < 4; ++j)
      EXPECT_EQ(a.at<float>({j, i}), static_cast<float>(2 * (i * 4 + j) + 1));
  }
}

struct LoopRun {
  int64_t n;
  std::vector<int64_t> strides;
};

std::vector<LoopRun> runs_of(const Tensor& out, std::initializer_list<Tensor> ins) {
  std::vector<LoopRun> runs;
  const size_t nops = ins.size() + 1;
  for_each_strided(out, ins, [&](int64_t n, char*, const char* const*, const int64_t* s) {
    runs.push_back({n, std::vector<int64_t>(s, s + nops)});
  });
  return runs;
}

TEST(ForEachStrided, ContiguousTensorsOfAnyRankAreOneRun) {
  const auto runs = runs_of(empty({4, 5, 6}), {empty({4, 5, 6}, Dtype::Float64)});
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].n, 120);
  EXPECT_EQ(runs[0].strides, (std::vector<int64_t>{4, 8}));
}

TEST(ForEachStrided, BroadcastInputHasStrideZero) {
  const auto runs = runs_of(empty({3, 4}), {empty({4}), empty({3, 1})});
  int64_t total = 0;
  for (const LoopRun& r : runs) {
    total += r.n;
    EXPECT_EQ(r.strides[0], 4);
    EXPECT_EQ(r.strides[1], 4);
    EXPECT_EQ(r.strides[2], 0);
  }
  EXPECT_EQ(total, 12);
}

TEST(ForEachStrided, RunsFollowTheOutputsMemoryOrder) {
  // Output transposed (strides [1, 4]) is one memory-contiguous block of 12: its inner run goes
  // along dim 0. The contiguous input then has stride 3 elements along that run.
  const auto runs = runs_of(empty({3, 4}).t(), {empty({4, 3})});
  ASSERT_EQ(runs.size(), 3u);
  for (const LoopRun& r : runs) {
    EXPECT_EQ(r.n, 4);
    EXPECT_EQ(r.strides, (std::vector<int64_t>{4, 12}));
  }
}

TEST(ForEachStrided, SizeOneDimsAreDroppedAndEmptyRunsNothing) {
  // Size-1 dims may carry any stride; they must not stop the other dims from merging.
  const auto runs = runs_of(empty({30}).as_strided({2, 1, 3, 1, 5}, {15, 999, 5, 7, 1}, 0), {});
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].n, 30);
  EXPECT_TRUE(runs_of(empty({3, 0, 2}), {empty({2})}).empty());
  const auto scalar = runs_of(empty({}), {empty({})});
  ASSERT_EQ(scalar.size(), 1u);
  EXPECT_EQ(scalar[0].n, 1);
}

// Sum reduction reference by index arithmetic over the [2, 3, 4] iota tensor.
float iota_sum(bool r0, bool r1, bool r2, int64_t i, int64_t j, int64_t k) {
  float s = 0;
  for (int64_t a = 0; a < 2; ++a) {
    for (int64_t b = 0; b < 3; ++b) {
      for (int64_t c = 0; c < 4; ++c) {
        if ((r0 || a == i) && (r1 || b == j) && (r2 || c == k))
          s += static_cast<float>(a * 12 + b * 4 + c);
      }
    }
  }
  return s;
}

void sum_into(const Tensor& out, const Tensor& in, const Shape& dims) {
  out.fill_(0);
  reduce_elements<float, float>(out, in, dims, [](float acc, float x) { return acc + x; });
}

TEST(ForEachReduce, SumOverOneDimWithAndWithoutKeepdim) {
  Tensor in = iota({2, 3, 4});
  Tensor out = empty({2, 4});
  sum_into(out, in, {1});
  Tensor kept = empty({2, 1, 4});
  sum_into(kept, in, {-2});
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t k = 0; k < 4; ++k) {
      EXPECT_EQ(out.at<float>({i, k}), iota_sum(false, true, false, i, 0, k));
      EXPECT_EQ(kept.at<float>({i, 0, k}), iota_sum(false, true, false, i, 0, k));
    }
  }
}

TEST(ForEachReduce, SumOverOuterAndInnerDimsOfNonContiguousInput) {
  Tensor in = iota({4, 3, 2}).permute({2, 1, 0});  // [2, 3, 4] with element (i,j,k) = k*6+j*2+i
  Tensor out = empty({3});
  sum_into(out, in, {0, 2});
  for (int64_t j = 0; j < 3; ++j) {
    float ref = 0;
    for (int64_t i = 0; i < 2; ++i) {
      for (int64_t k = 0; k < 4; ++k) ref += static_cast<float>(k * 6 + j * 2 + i);
    }
    EXPECT_EQ(out.at<float>({j}), ref);
  }
}

TEST(ForEachReduce, AllDimsAndNoDims) {
  Tensor in = iota({2, 3, 4});
  Tensor all = empty({});
  sum_into(all, in, {0, 1, 2});
  EXPECT_EQ(all.item<float>(), 276.0f);  // 0 + 1 + ... + 23
  Tensor none = empty({2, 3, 4});
  sum_into(none, in, {});
  EXPECT_EQ(none.to_vector<float>(), in.to_vector<float>());
}

TEST(ForEachReduce, OutputShapeMismatchIsShapeError) {
  const std::string m = message_of<ShapeError>([] { sum_into(empty({3}), iota({2, 3, 4}), {1}); });
  EXPECT_NE(m.find("[2, 4]"), std::string::npos) << m;
  EXPECT_NE(m.find("[3]"), std::string::npos) << m;
  EXPECT_THROW(sum_into(empty({2, 4}), iota({2, 3, 4}), {1, -2}), ShapeError);
}

TEST(Copy, BroadcastsSourceAndConvertsDtype) {
  Tensor dst = empty({2, 3}, Dtype::Float64);
  dst.copy_(tensor({1.5f, -2.25f, 3.0f}));
  EXPECT_EQ(dst.to_vector<double>(), (std::vector<double>{1.5, -2.25, 3.0, 1.5, -2.25, 3.0}));
  Tensor ints = empty({3}, Dtype::Int64);
  ints.copy_(tensor({2.9, -2.9, 0.5}));
  EXPECT_EQ(ints.to_vector<int64_t>(), (std::vector<int64_t>{2, -2, 0}));
}

TEST(Copy, IntoNonContiguousDestinationTouchesOnlyItsElements) {
  Tensor base = zeros({4, 6});
  Tensor dst = base.slice(1, 1, 6, 2).t();  // [3, 4]: columns 1, 3, 5
  dst.copy_(iota({3, 4}));
  for (int64_t r = 0; r < 4; ++r) {
    for (int64_t c = 0; c < 6; ++c) {
      const float want = c % 2 == 1 ? static_cast<float>((c / 2) * 4 + r) : 0.0f;
      EXPECT_EQ(base.at<float>({r, c}), want) << r << "," << c;
    }
  }
}

TEST(Copy, OverlappingSourceIsReadBeforeWriting) {
  Tensor m = iota({3, 3});
  m.copy_(m.t());
  for (int64_t i = 0; i < 3; ++i) {
    for (int64_t j = 0; j < 3; ++j) EXPECT_EQ(m.at<float>({i, j}), static_cast<float>(j * 3 + i));
  }
  Tensor a = arange(6);
  a.narrow(0, 1, 5).copy_(a.narrow(0, 0, 5));  // shift right by one
  EXPECT_EQ(a.to_vector<float>(), (std::vector<float>{0, 0, 1, 2, 3, 4}));
}

TEST(Fill, OnlyTouchesTheView) {
  Tensor base = zeros({3, 5}, Dtype::Int64);
  base.slice(1, 0, 5, 2).select(0, 1).fill_(7);
  const std::vector<int64_t> want{0, 0, 0, 0, 0, 7, 0, 7, 0, 7, 0, 0, 0, 0, 0};
  EXPECT_EQ(base.to_vector<int64_t>(), want);
}

TEST(Fill, KeepsLargeIntegersExact) {
  const int64_t big = 9007199254740993;  // 2^53 + 1: not a double
  EXPECT_EQ(full({2}, big, Dtype::Int64).to_vector<int64_t>(), (std::vector<int64_t>{big, big}));
}

TEST(DispatchDtype, CallsTheMatchingType) {
  EXPECT_EQ(dispatch_dtype(Dtype::Float16, []<typename T>() { return std::is_same_v<T, Half>; }),
            true);
  EXPECT_EQ(dispatch_dtype(Dtype::Int64, []<typename T>() { return std::is_same_v<T, int64_t>; }),
            true);
  EXPECT_EQ(dispatch_dtype(Dtype::Bool, []<typename T>() { return std::is_same_v<T, bool>; }),
            true);
  EXPECT_EQ(dispatch_dtype(Dtype::Float64, []<typename T>() { return sizeof(T); }), 8u);
  EXPECT_EQ(
      dispatch_dtype(Dtype::BFloat16, []<typename T>() { return std::is_same_v<T, BFloat16>; }),
      true);
  const std::string m = message_of<DtypeError>(
      [] { dispatch_floating_dtype(Dtype::Int64, "softmax", []<typename T>() {}); });
  EXPECT_EQ(m, "softmax: expected a floating point dtype, got int64");
}

TEST(MapElementwise, WrongOperandDtypeIsDtypeError) {
  const std::string m = message_of<DtypeError>([] {
    map_elementwise<float, float>(empty({2}), {empty({2}, Dtype::Float64)},
                                  [](float x) { return x; });
  });
  EXPECT_NE(m.find("input 0 has dtype float64"), std::string::npos) << m;
}

}  // namespace
}  // namespace aclgrad
