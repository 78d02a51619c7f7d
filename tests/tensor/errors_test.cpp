// Every error path: the exception type, and a message naming the op, the offending shape/value
// and the rule. The four messages quoted in the issue are checked verbatim.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "tensor/creation.h"
#include "tensor/iter.h"
#include "tensor/tensor.h"
#include "tests/tensor/test_util.h"

namespace aclgrad {
namespace {

using testing::message_of;

// Expects message m to contain every one of parts.
void expect_contains(const std::string& m, std::initializer_list<const char*> parts) {
  for (const char* p : parts)
    EXPECT_NE(m.find(p), std::string::npos) << "'" << p << "' not in: " << m;
}

TEST(Errors, QuotedMessagesAreExact) {
  EXPECT_EQ(message_of<ShapeError>([] {
              zeros({16}).view({3, 5});
            }),
            "view: shape [3, 5] is invalid for input of size 16");
  EXPECT_EQ(message_of<ShapeError>([] {
              zeros({2, 3}).expand({2, 4});
            }),
            "expand: the expanded size 4 must match the existing size 3 at non-singleton "
            "dimension 1; target [2, 4], tensor [2, 3]");
  EXPECT_EQ(message_of<IndexError>([] { zeros({5}).narrow(0, 4, 3); }),
            "narrow: start 4 + length 3 exceeds size 5 of dimension 0");
  EXPECT_EQ(message_of<IndexError>([] {
              zeros({2, 3}).at<float>({1, 7});
            }),
            "at: index 7 is out of bounds for dimension 1 with size 3");
}

TEST(Errors, AreAclgradErrorsWithTheThrowingSite) {
  try {
    zeros({16}).view({3, 5});
    FAIL() << "did not throw";
  } catch (const Error& e) {
    EXPECT_NE(std::strstr(e.file(), "layout.cpp"), nullptr) << e.file();
    EXPECT_GT(e.line(), 0u);
  }
  static_assert(std::is_base_of_v<std::runtime_error, Error>);
  static_assert(std::is_base_of_v<Error, ShapeError> && std::is_base_of_v<Error, IndexError> &&
                std::is_base_of_v<Error, DtypeError>);
}

TEST(Errors, ViewAndReshape) {
  expect_contains(message_of<ShapeError>([] {
                    zeros({16}).view({-1, -1});
                  }),
                  {"view", "only one dimension can be inferred", "[-1, -1]"});
  expect_contains(message_of<ShapeError>([] {
                    zeros({16}).view({-1, 5});
                  }),
                  {"view", "[-1, 5]", "size 16"});
  expect_contains(message_of<ShapeError>([] {
                    zeros({16}).view({4, -3});
                  }),
                  {"view", "invalid size -3"});
  expect_contains(message_of<ShapeError>([] {
                    zeros({4, 6}).t().view({24});
                  }),
                  {"view", "[24]", "[6, 4]", "strides [1, 6]", "reshape"});
  expect_contains(message_of<ShapeError>([] {
                    zeros({4, 6}).t().reshape({25});
                  }),
                  {"reshape", "[25]", "size 24"});
  expect_contains(message_of<ShapeError>([] {
                    zeros({0}).view({-1, 0});
                  }),
                  {"view", "[-1, 0]", "size 0"});
}

TEST(Errors, DimensionsOutOfRange) {
  expect_contains(message_of<IndexError>([] {
                    zeros({2, 3}).transpose(0, 2);
                  }),
                  {"transpose", "dimension 2", "2 dims", "[-2, 1]"});
  expect_contains(message_of<IndexError>([] {
                    zeros({2, 3}).select(-3, 0);
                  }),
                  {"select", "dimension -3"});
  expect_contains(message_of<IndexError>([] {
                    zeros({2, 3}).unsqueeze(3);
                  }),
                  {"unsqueeze", "dimension 3", "[-3, 2]"});
  expect_contains(message_of<IndexError>([] { zeros({2, 3}).squeeze(2); }), {"squeeze", "2"});
  expect_contains(message_of<IndexError>([] { zeros({2, 3}).size(5); }), {"size", "5"});
  expect_contains(message_of<IndexError>([] {
                    zeros({2, 3, 4}).flatten(2, 1);
                  }),
                  {"flatten", "start_dim 2", "end_dim 1"});
}

TEST(Errors, PermuteAndT) {
  expect_contains(message_of<ShapeError>([] {
                    zeros({2, 3}).permute({0, 0});
                  }),
                  {"permute", "[0, 0]", "repeat"});
  expect_contains(message_of<ShapeError>([] {
                    zeros({2, 3}).permute({1});
                  }),
                  {"permute", "[1]", "2 dims"});
  expect_contains(message_of<ShapeError>([] { zeros({2, 3, 4}).t(); }), {"t:", "[2, 3, 4]"});
}

TEST(Errors, NarrowSliceSelect) {
  expect_contains(message_of<IndexError>([] { zeros({5}).narrow(0, 0, -1); }),
                  {"narrow", "length -1"});
  expect_contains(message_of<IndexError>([] { zeros({5}).narrow(0, 6, 0); }),
                  {"narrow", "start 6", "size 5"});
  expect_contains(message_of<IndexError>([] { full({}, 1).narrow(0, 0, 1); }), {"narrow", "0-dim"});
  expect_contains(message_of<IndexError>([] { zeros({5}).slice(0, 0, 5, 0); }),
                  {"slice", "step", "0"});
  expect_contains(message_of<IndexError>([] {
                    zeros({4, 5}).select(0, 4);
                  }),
                  {"select", "index 4", "dimension 0", "size 4"});
  expect_contains(message_of<IndexError>([] {
                    zeros({4, 5}).select(1, -6);
                  }),
                  {"select", "index -6", "size 5"});
}

TEST(Errors, Expand) {
  expect_contains(message_of<ShapeError>([] {
                    zeros({2, 3}).expand({3});
                  }),
                  {"expand", "(1)", "(2)"});
  expect_contains(message_of<ShapeError>([] {
                    zeros({3}).expand({-1, 3});
                  }),
                  {"expand", "-1", "leading", "dimension 0"});
  expect_contains(message_of<ShapeError>([] { zeros({1}).expand({-2}); }),
                  {"expand", "-2", "dimension 0"});
}

TEST(Errors, AsStridedStaysInsideStorage) {
  Tensor t = zeros({24});
  expect_contains(message_of<IndexError>([&] {
                    t.as_strided({5, 5}, {5, 1}, 0);
                  }),
                  {"as_strided", "[5, 5]", "[5, 1]", "need 25 elements", "holds 24"});
  expect_contains(message_of<IndexError>([&] {
                    t.as_strided({2, 3}, {3, 1}, 19);
                  }),
                  {"as_strided", "offset 19", "need 25"});
  expect_contains(message_of<IndexError>([&] { t.as_strided({2}, {1}, -1); }),
                  {"as_strided", "offset -1"});
  expect_contains(message_of<ShapeError>([&] {
                    t.as_strided({-2, 3}, {3, 1}, 0);
                  }),
                  {"as_strided", "size -2", "dimension 0", "negative"});
  expect_contains(message_of<ShapeError>([&] {
                    t.as_strided({2, 3}, {3, -1}, 0);
                  }),
                  {"as_strided", "stride -1", "dimension 1"});
  expect_contains(message_of<ShapeError>([&] {
                    t.as_strided({2, 3}, {3}, 0);
                  }),
                  {"as_strided", "[2, 3]", "[3]", "same length"});
  expect_contains(message_of<IndexError>([&] {
                    t.as_strided({3, 2}, {int64_t{1} << 62, 1}, 0);
                  }),
                  {"as_strided", "overflow"});
  expect_contains(message_of<ShapeError>([&] {
                    t.as_strided({int64_t{1} << 32, int64_t{1} << 32}, {0, 0}, 0);
                  }),
                  {"as_strided", "overflow"});
  // Empty views need no storage; sizes 0 with any stride are fine.
  EXPECT_EQ(t.as_strided({0, 7}, {1000, 1000}, 0).numel(), 0);
}

TEST(Errors, AsStridedNeverReachesOutsideStorage) {
  // Random layouts over a small storage: each is rejected, or every element it addresses
  // (computed here by index arithmetic) is inside the storage.
  std::mt19937_64 rng(1);
  Tensor t = zeros({30});
  int accepted = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    const int ndim = static_cast<int>(rng() % 4);
    Shape sizes(ndim), strides(ndim);
    for (int d = 0; d < ndim; ++d) {
      sizes[d] = static_cast<int64_t>(rng() % 6) - 1;
      strides[d] = static_cast<int64_t>(rng() % 12) - 1;
    }
    const int64_t offset = static_cast<int64_t>(rng() % 34) - 2;
    try {
      Tensor v = t.as_strided(sizes, strides, offset);
      ++accepted;
      int64_t max_index = offset;
      for (int d = 0; d < ndim; ++d) max_index += (sizes[d] - 1) * strides[d];
      if (v.numel() > 0) {
        EXPECT_LT(max_index, 30);
      }
      EXPECT_EQ(v.contiguous().numel(), v.numel());
    } catch (const ShapeError&) {
    } catch (const IndexError&) {
    }
  }
  EXPECT_GT(accepted, 100);
}

TEST(Errors, CreationSizes) {
  expect_contains(message_of<ShapeError>([] {
                    empty({2, -1});
                  }),
                  {"empty", "size -1", "dimension 1", "negative"});
  expect_contains(message_of<ShapeError>([] {
                    empty({int64_t{1} << 32, int64_t{1} << 32});
                  }),
                  {"empty", "[4294967296, 4294967296]", "overflow"});
  expect_contains(message_of<ShapeError>([] { empty({int64_t{1} << 61}, Dtype::Float64); }),
                  {"empty", "float64", "overflow the byte count"});
  expect_contains(message_of<ShapeError>([] {
                    from_vector(std::vector<float>{1, 2, 3}, {2, 2});
                  }),
                  {"from_vector", "3 values", "[2, 2]", "4 elements"});
  expect_contains(message_of<Error>([] { arange(0, 5, 0); }), {"arange", "step", "0"});
  expect_contains(message_of<Error>([] { arange(0, 5, -1); }), {"arange", "step -1", "end 5"});
}

TEST(Errors, ElementAccess) {
  expect_contains(message_of<IndexError>([] {
                    zeros({2, 3}).at<float>({1});
                  }),
                  {"at", "expected 2 indices", "got 1"});
  expect_contains(message_of<IndexError>([] {
                    zeros({2, 3}).at<float>({-3, 0});
                  }),
                  {"at", "index -3", "dimension 0", "size 2"});
  EXPECT_EQ(message_of<DtypeError>([] { zeros({2}).at<double>({0}); }),
            "at: requested type float64 but the tensor has dtype float32");
  EXPECT_EQ(message_of<DtypeError>([] { zeros({2}, Dtype::Int64).data_ptr<float>(); }),
            "data_ptr: requested type float32 but the tensor has dtype int64");
  EXPECT_EQ(message_of<IndexError>([] {
              zeros({2, 3}).item<float>();
            }),
            "item: a tensor with 6 elements cannot be converted to a scalar");
  expect_contains(message_of<Error>([] { Tensor().numel(); }), {"undefined tensor"});
}

TEST(Errors, CopyIntoExpandedDestination) {
  Tensor row = zeros({3});
  expect_contains(message_of<Error>([&] {
                    row.expand({2, 3}).copy_(ones({2, 3}));
                  }),
                  {"copy_", "[2, 3]", "strides [0, 1]", "stride 0"});
  row.expand({1, 3}).copy_(ones({1, 3}));  // size-1 dims with stride 0 do not overlap
  EXPECT_EQ(row.to_vector<float>(), (std::vector<float>{1, 1, 1}));
}

TEST(Errors, LayoutIndexOverflow) {
  expect_contains(message_of<IndexError>([] {
                    Layout({3, 2}, {int64_t{1} << 62, 1}, 0);
                  }),
                  {"layout", "[3, 2]", "overflow"});
  expect_contains(message_of<ShapeError>([] {
                    Layout({3, 2}, {1}, 0);
                  }),
                  {"layout", "[3, 2]", "[1]", "same length"});
}

TEST(Errors, BroadcastingInCopyAndIteration) {
  expect_contains(message_of<ShapeError>([] {
                    zeros({2, 3}).copy_(zeros({2}));
                  }),
                  {"copy_", "[2]", "[2, 3]"});
  expect_contains(message_of<ShapeError>([] {
                    zeros({3}).copy_(zeros({2, 3}));
                  }),
                  {"copy_", "[2, 3]", "[3]"});
  expect_contains(message_of<ShapeError>([] {
                    for_each_strided(zeros({2, 3}), {zeros({4})},
                                     [](int64_t, char*, const char* const*, const int64_t*) {});
                  }),
                  {"for_each_strided", "input 0", "[4]", "[2, 3]"});
}

}  // namespace
}  // namespace aclgrad
