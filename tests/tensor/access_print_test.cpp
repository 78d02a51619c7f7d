// Element access (item, at, to_vector, data_ptr), creation values, and the printer.
#include <gtest/gtest.h>

#include <cmath>

#include "tensor/creation.h"
#include "tensor/tensor.h"

namespace aclgrad {
namespace {

TEST(Access, ItemConvertsTheSingleElement) {
  EXPECT_EQ(full({}, 3.5).item<float>(), 3.5f);
  EXPECT_EQ(full({1, 1}, 3.7).item<int64_t>(), 3);
  EXPECT_EQ(full({1}, true, Dtype::Bool).item<double>(), 1.0);
  EXPECT_EQ(full({}, 0.5, Dtype::Float16).item<float>(), 0.5f);
  EXPECT_EQ(arange(10).select(0, 7).item<float>(), 7.0f);
}

TEST(Access, AtReadsAndWritesWithNegativeIndices) {
  Tensor t = zeros({2, 3}, Dtype::Int64);
  t.at<int64_t>({-1, -1}) = 9;
  t.at<int64_t>({0, 1}) = 4;
  EXPECT_EQ(t.to_vector<int64_t>(), (std::vector<int64_t>{0, 4, 0, 0, 0, 9}));
  EXPECT_EQ(t.at<int64_t>({1, 2}), 9);
}

TEST(Access, DataPtrPointsAtTheFirstElementOfTheView) {
  Tensor t = arange(12).view({3, 4});
  Tensor v = t.select(0, 2).narrow(0, 1, 2);
  EXPECT_EQ(v.storage_offset(), 9);
  EXPECT_EQ(v.data_ptr<float>(), t.data_ptr<float>() + 9);
  EXPECT_EQ(*v.data_ptr<float>(), 9.0f);
}

TEST(Access, ToVectorConvertsInRowMajorOrder) {
  Tensor t = tensor({1, 2, 3, 4, 5, 6}, {2, 3}).t();
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(t.to_vector<int64_t>(), (std::vector<int64_t>{1, 4, 2, 5, 3, 6}));
}

TEST(Creation, FactoriesFillTheirValues) {
  EXPECT_EQ(zeros({2, 2}).to_vector<float>(), (std::vector<float>(4, 0.0f)));
  EXPECT_EQ(ones({3}, Dtype::Int64).to_vector<int64_t>(), (std::vector<int64_t>(3, 1)));
  EXPECT_EQ(full({2}, -1.25, Dtype::Float64).to_vector<double>(),
            (std::vector<double>{-1.25, -1.25}));
  EXPECT_EQ(arange(4).to_vector<float>(), (std::vector<float>{0, 1, 2, 3}));
  EXPECT_EQ(arange(1, 2, 0.25, Dtype::Float64).to_vector<double>(),
            (std::vector<double>{1, 1.25, 1.5, 1.75}));
  EXPECT_EQ(arange(5, 0, -2, Dtype::Int64).to_vector<int64_t>(), (std::vector<int64_t>{5, 3, 1}));
  EXPECT_EQ(arange(0, 0, 1).numel(), 0);
  EXPECT_EQ(zeros_like(empty({2, 3}, Dtype::Bool)).sizes(), (Shape{2, 3}));
  EXPECT_EQ(ones_like(empty({2}, Dtype::Float16)).to_vector<float>(), (std::vector<float>{1, 1}));
  EXPECT_EQ(tensor({1.5f, 2.5f}, {2, 1}, Dtype::Int64).to_vector<int64_t>(),
            (std::vector<int64_t>{1, 2}));
}

TEST(Print, SmallTensorsShowShapeDtypeAndAllValues) {
  EXPECT_EQ(tensor({1, 2, 3, 4, 5, 6}, {2, 3}).to_string(),
            "tensor([[1, 2, 3],\n"
            "        [4, 5, 6]], shape=[2, 3], dtype=int64)");
  EXPECT_EQ(tensor({1.5f, -2.0f}).to_string(),
            "tensor([ 1.5000, -2.0000], shape=[2], dtype=float32)");
  EXPECT_EQ(full({}, 0.25, Dtype::Float64).to_string(), "tensor(0.2500, shape=[], dtype=float64)");
  EXPECT_EQ(empty({0, 3}).to_string(), "tensor([], shape=[0, 3], dtype=float32)");
  EXPECT_EQ(tensor({true, false}).to_string(), "tensor([ true, false], shape=[2], dtype=bool)");
  EXPECT_EQ(tensor({NAN, INFINITY, -1.0f}).to_string(),
            "tensor([    nan,     inf, -1.0000], shape=[3], dtype=float32)");
  EXPECT_EQ(tensor({1e-6f, 1.0f}).to_string(),
            "tensor([1.0000e-06, 1.0000e+00], shape=[2], dtype=float32)");
}

TEST(Print, ThreeDimsSeparateMatricesByBlankLine) {
  EXPECT_EQ(tensor({0, 1, 2, 3, 4, 5, 6, 7}, {2, 2, 2}).to_string(),
            "tensor([[[0, 1],\n"
            "         [2, 3]],\n"
            "\n"
            "        [[4, 5],\n"
            "         [6, 7]]], shape=[2, 2, 2], dtype=int64)");
}

TEST(Print, NonContiguousPrintsLogicalOrder) {
  EXPECT_EQ(tensor({1, 2, 3, 4}, {2, 2}).t().to_string(),
            "tensor([[1, 3],\n"
            "        [2, 4]], shape=[2, 2], dtype=int64)");
}

TEST(Print, LargeTensorsElideTheMiddle) {
  EXPECT_EQ(arange(2000, Dtype::Int64).to_string(),
            "tensor([   0,    1,    2, ..., 1997, 1998, 1999], shape=[2000], dtype=int64)");
  const std::string m = arange(10000, Dtype::Int64).view({100, 100}).to_string();
  EXPECT_EQ(m.substr(0, 42), "tensor([[   0,    1,    2, ...,   97,   98");
  EXPECT_NE(m.find("        ...,\n"), std::string::npos) << m;
  EXPECT_NE(m.find("9999]], shape=[100, 100], dtype=int64)"), std::string::npos) << m;
  EXPECT_EQ(m.find("5000"), std::string::npos) << m;
  EXPECT_EQ(std::count(m.begin(), m.end(), '\n'), 6);  // 3 + 3 rows and the "..." row
}

TEST(Print, StreamOperatorMatchesToString) {
  std::ostringstream os;
  const Tensor t = tensor({7}, {1});
  os << t;
  EXPECT_EQ(os.str(), t.to_string());
}

}  // namespace
}  // namespace aclgrad
