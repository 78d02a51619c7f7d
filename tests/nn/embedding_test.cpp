// Embedding: the functional op (gather forward, scatter-add backward, derivatives of any order
// via gradcheck/gradgradcheck, padding_idx, errors) and the layer (init, forward).
#include <gtest/gtest.h>

#include <cmath>

#include "autograd/autograd.h"
#include "nn/nn.h"
#include "ops/embedding.h"
#include "ops/ops.h"
#include "tensor/creation.h"
#include "tests/autograd/test_util.h"

namespace aclgrad {
namespace {

using testing::expect_tensor;
using testing::message_of;

Tensor idx(std::initializer_list<int64_t> values, const Shape& shape) {
  return from_vector(std::vector<int64_t>(values), shape);
}

TEST(EmbeddingOp, GathersRowsForIndicesOfAnyShape) {
  const Tensor w = arange(15).reshape({5, 3});
  expect_tensor(embedding(w, idx({0, 4, 2, 2}, {2, 2})), {2, 2, 3},
                {0, 1, 2, 12, 13, 14, 6, 7, 8, 6, 7, 8});
  expect_tensor(embedding(w, idx({3}, {})), {3}, {9, 10, 11});  // 0-dim index -> one row
  EXPECT_EQ(embedding(w, idx({}, {0})).sizes(), (Shape{0, 3}));
  // Non-contiguous weight and indices.
  const Tensor wt = arange(15).reshape({3, 5}).t();
  const Tensor it = idx({1, 0, 4, 3}, {2, 2}).t();
  expect_tensor(embedding(wt, it), {2, 2, 3}, {1, 6, 11, 4, 9, 14, 0, 5, 10, 3, 8, 13});
}

TEST(EmbeddingOp, BackwardScatterAddsRepeatedRows) {
  Tensor w = zeros({5, 2}).requires_grad_();
  const Tensor i = idx({2, 0, 2, 2}, {4});
  Tensor g = tensor({1.f, 2.f, 3.f, 4.f, 5.f, 6.f, 7.f, 8.f}, {4, 2});
  embedding(w, i).backward(g);
  expect_tensor(w.grad(), {5, 2}, {3, 4, 0, 0, 1 + 5 + 7, 2 + 6 + 8, 0, 0, 0, 0});
  expect_tensor(embedding_dense_backward(g, i, 5), {5, 2}, {3, 4, 0, 0, 13, 16, 0, 0, 0, 0});
}

TEST(EmbeddingOp, PaddingIdxGetsNoGradientButIsStillRead) {
  Tensor w = ones({4, 2}).requires_grad_();
  const Tensor i = idx({1, 3, 1, 0}, {2, 2});
  const Tensor y = embedding(w, i, /*padding_idx=*/-3);  // row 1
  expect_tensor(y, {2, 2, 2}, std::vector<double>(8, 1.0));
  sum(y).backward();
  expect_tensor(w.grad(), {4, 2}, {1, 1, 0, 0, 0, 0, 1, 1});
  EXPECT_THROW(embedding(w, i, 4), IndexError);
}

TEST(EmbeddingOp, GradcheckAndGradgradcheck) {
  Generator gen(1);
  const Tensor w = randn({6, 3}, Dtype::Float64, &gen).requires_grad_();
  const Tensor i = idx({5, 0, 5, 2, 3, 5}, {2, 3});
  auto fn = [&](const autograd::tensor_list& in) { return embedding(in[0], i); };
  EXPECT_TRUE(autograd::gradcheck(fn, {w}));
  EXPECT_TRUE(autograd::gradgradcheck(fn, {w}));
  // padding_idx: the forward depends on the padding row but its gradient is 0 by definition, so
  // only the other rows are checked (the padding row is a constant input here).
  const Tensor pad_row = randn({1, 3}, Dtype::Float64, &gen);
  auto padded = [&](const autograd::tensor_list& in) {
    return embedding(cat({in[0], pad_row}), i, 5);
  };
  const Tensor rows = randn({5, 3}, Dtype::Float64, &gen).requires_grad_();
  EXPECT_TRUE(autograd::gradcheck(padded, {rows}));
  EXPECT_TRUE(autograd::gradgradcheck(padded, {rows}));
  // The backward op is itself differentiable (its gradient is a gather).
  const Tensor g = randn({2, 3, 3}, Dtype::Float64, &gen).requires_grad_();
  auto back = [&](const autograd::tensor_list& in) {
    return embedding_dense_backward(in[0], i, 6, 2);
  };
  EXPECT_TRUE(autograd::gradcheck(back, {g}));
  EXPECT_TRUE(autograd::gradgradcheck(back, {g}));
}

TEST(EmbeddingOp, Errors) {
  const Tensor w = zeros({5, 2});
  EXPECT_NE(message_of<IndexError>([&] {
              embedding(w, idx({0, 5}, {2}));
            }).find("embedding: index 5 at position 1 is out of range for 5 embeddings"),
            std::string::npos);
  EXPECT_THROW(embedding(w, idx({-1}, {1})), IndexError);
  EXPECT_NE(message_of<DtypeError>([&] {
              embedding(w, tensor({1.0f}));
            }).find("expected int64 indices, got float32"),
            std::string::npos);
  EXPECT_THROW(embedding(zeros({5}), idx({0}, {1})), ShapeError);
  EXPECT_THROW(embedding(zeros({5, 2}, Dtype::Int64), idx({0}, {1})), DtypeError);
  EXPECT_THROW(embedding_dense_backward(zeros({3, 2}), idx({0, 1}, {2}), 4), ShapeError);
}

TEST(EmbeddingLayer, InitShapesAndForward) {
  manual_seed(3);
  nn::Embedding big(1000, 100);
  const auto v = big.weight.to_vector<double>();
  double m = 0, s = 0;
  for (double x : v) m += x;
  m /= static_cast<double>(v.size());
  for (double x : v) s += (x - m) * (x - m);
  EXPECT_NEAR(m, 0.0, 0.01);
  EXPECT_NEAR(std::sqrt(s / static_cast<double>(v.size())), 1.0, 0.01);
  EXPECT_EQ(big.num_parameters(), 100000);

  nn::Embedding e(nn::EmbeddingOptions(6, 4).padding_idx(2));
  EXPECT_EQ(e.weight.select(0, 2).to_vector<float>(), std::vector<float>(4, 0.0f));
  const Tensor i = idx({2, 5, 1}, {3});
  const Tensor y = e(i);
  EXPECT_EQ(y.sizes(), (Shape{3, 4}));
  EXPECT_EQ(y.select(0, 1).to_vector<float>(), e.weight.select(0, 5).to_vector<float>());
  sum(y).backward();
  EXPECT_EQ(e.weight.grad().select(0, 2).to_vector<float>(), std::vector<float>(4, 0.0f));
  EXPECT_EQ(e.weight.grad().select(0, 5).to_vector<float>(), std::vector<float>(4, 1.0f));
  EXPECT_THROW(nn::Embedding(nn::EmbeddingOptions(6, 4).padding_idx(6)), IndexError);

  // In a model: [B, T] tokens -> [B, T, D] -> [B, T * D] -> logits.
  nn::Sequential net{std::make_shared<nn::Embedding>(10, 4), std::make_shared<nn::Flatten>(),
                     std::make_shared<nn::Linear>(12, 2)};
  EXPECT_EQ(net(idx({1, 2, 3, 9, 8, 7}, {2, 3})).sizes(), (Shape{2, 2}));
}

}  // namespace
}  // namespace aclgrad
