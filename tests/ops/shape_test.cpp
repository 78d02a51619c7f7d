// Shape ops: forward values (against the Tensor layout methods and hand-computed cases), the
// recorded gradients (hand-computed, gradcheck, gradgradcheck on contiguous and non-contiguous
// inputs, negative dims), and every error message.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "ops/ops.h"
#include "tests/ops/ops_test_util.h"

namespace aclgrad {
namespace {

using autograd::tensor_list;
using testing::expect_gradients_correct;
using testing::expect_tensor;
using testing::message_of;
using testing::uniform_var;

// [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]] as float64.
Tensor iota34() {
  return arange(12, Dtype::Float64).view({3, 4});
}

// A float64 leaf that is a transposed (non-contiguous) view with an offset: shape `shape`.
Tensor noncontiguous_var(const Shape& shape, uint64_t seed) {
  Shape bigger = shape;
  std::swap(bigger.front(), bigger.back());
  bigger.front() += 1;
  Tensor base = uniform_var(bigger, -1, 1, seed).detach();
  Tensor v = base.narrow(0, 1, shape.back()).transpose(0, -1);
  v.requires_grad_();
  return v;
}

void expect_contains(const std::string& msg, const std::string& part) {
  EXPECT_NE(msg.find(part), std::string::npos) << "message: " << msg << "\nexpected: " << part;
}

struct ViewCase {
  const char* name;
  std::function<Tensor(const Tensor&)> op;      // recorded op
  std::function<Tensor(const Tensor&)> layout;  // the Tensor method it wraps
  Shape input_shape;
};

std::vector<ViewCase> view_cases() {
  return {
      {"view",
       [](const Tensor& x) {
         return view(x, {2, -1, 3});
       },
       [](const Tensor& x) {
         return x.view({2, -1, 3});
       },
       {3, 4}},
      {"reshape",
       [](const Tensor& x) {
         return reshape(x, {4, 3});
       },
       [](const Tensor& x) {
         return x.reshape({4, 3});
       },
       {3, 4}},
      {"permute",
       [](const Tensor& x) {
         return permute(x, {2, -3, 1});
       },
       [](const Tensor& x) {
         return x.permute({2, 0, 1});
       },
       {2, 3, 4}},
      {"transpose",
       [](const Tensor& x) { return transpose(x, -1, 0); },
       [](const Tensor& x) { return x.transpose(0, 2); },
       {2, 3, 4}},
      {"narrow",
       [](const Tensor& x) { return narrow(x, -1, 1, 2); },
       [](const Tensor& x) { return x.narrow(1, 1, 2); },
       {3, 4}},
      {"narrow_neg_start",
       [](const Tensor& x) { return narrow(x, 0, -2, 2); },
       [](const Tensor& x) { return x.narrow(0, 1, 2); },
       {3, 4}},
      {"slice_step",
       [](const Tensor& x) { return slice(x, 1, 0, 5, 2); },
       [](const Tensor& x) { return x.slice(1, 0, 5, 2); },
       {3, 5}},
      {"slice_neg",
       [](const Tensor& x) { return slice(x, -2, -2, 100, 3); },
       [](const Tensor& x) { return x.slice(0, 3, 5, 3); },
       {5, 2}},
      {"select",
       [](const Tensor& x) { return select(x, 1, -1); },
       [](const Tensor& x) { return x.select(1, 3); },
       {3, 4}},
      {"expand",
       [](const Tensor& x) {
         return expand(x, {2, -1, 4});
       },
       [](const Tensor& x) {
         return x.expand({2, 3, 4});
       },
       {3, 1}},
      {"squeeze_all",
       [](const Tensor& x) { return squeeze(x); },
       [](const Tensor& x) { return x.squeeze(); },
       {3, 1, 2, 1}},
      {"squeeze_dim",
       [](const Tensor& x) { return squeeze(x, -1); },
       [](const Tensor& x) { return x.squeeze(3); },
       {3, 1, 2, 1}},
      {"unsqueeze",
       [](const Tensor& x) { return unsqueeze(x, -2); },
       [](const Tensor& x) { return x.unsqueeze(1); },
       {3, 4}},
      {"flatten",
       [](const Tensor& x) { return flatten(x, 1); },
       [](const Tensor& x) { return x.flatten(1, 2); },
       {2, 3, 2}},
  };
}

TEST(ShapeOps, ViewsMatchTheLayoutMethodsAndAreRecorded) {
  for (const ViewCase& c : view_cases()) {
    SCOPED_TRACE(c.name);
    const Tensor x = uniform_var(c.input_shape, -1, 1, 1);
    const Tensor y = c.op(x);
    const Tensor want = c.layout(x.detach());
    EXPECT_EQ(y.sizes(), want.sizes());
    EXPECT_EQ(y.to_vector<double>(), want.to_vector<double>());
    EXPECT_TRUE(y.shares_storage(x));  // a view, no copy (reshape of a contiguous x too)
    ASSERT_NE(y.grad_fn(), nullptr);
    // Without requires_grad nothing is recorded.
    EXPECT_EQ(c.op(x.detach()).grad_fn(), nullptr);
  }
}

TEST(ShapeOps, ViewGradientsPassGradcheckAndGradgradcheck) {
  for (const ViewCase& c : view_cases()) {
    SCOPED_TRACE(c.name);
    Tensor x = uniform_var(c.input_shape, -1, 1, 2);
    expect_gradients_correct([&](const tensor_list& in) { return c.op(in[0]); }, {x});
    // Squared, so that the second derivative is not zero.
    expect_gradients_correct(
        [&](const tensor_list& in) {
          const Tensor y = c.op(in[0]);
          return mul(y, y);
        },
        {x});
  }
}

TEST(ShapeOps, ViewGradientsOnNonContiguousInputs) {
  for (const ViewCase& c : view_cases()) {
    if (std::string(c.name) == "view") continue;  // view needs compatible strides
    SCOPED_TRACE(c.name);
    Tensor x = noncontiguous_var(c.input_shape, 3);
    expect_gradients_correct([&](const tensor_list& in) { return c.op(in[0]); }, {x});
  }
}

TEST(ShapeOps, WindowBackwardScattersIntoZeros) {
  Tensor x = iota34();
  x.requires_grad_();
  sum(mul(select(x, 0, 1), tensor({1.0, 2.0, 3.0, 4.0}))).backward();
  expect_tensor(x.grad(), {3, 4}, {0, 0, 0, 0, 1, 2, 3, 4, 0, 0, 0, 0});
  x.zero_grad();
  sum(slice(x, 1, 1, 4, 2)).backward();  // columns 1 and 3
  expect_tensor(x.grad(), {3, 4}, {0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1});
  x.zero_grad();
  sum(expand(narrow(x, 0, 2, 1), {5, 4})).backward();  // last row, used 5 times
  expect_tensor(x.grad(), {3, 4}, {0, 0, 0, 0, 0, 0, 0, 0, 5, 5, 5, 5});
  EXPECT_STREQ(select(x, 0, 0).grad_fn()->name(), "SelectBackward");
  EXPECT_STREQ(permute(x, {1, 0}).grad_fn()->name(), "PermuteBackward");
}

TEST(ShapeOps, ReshapeOfNonContiguousCopiesAndViewsWorkOnInt64) {
  const Tensor x = iota34().t();
  const Tensor r = reshape(x, {12});
  expect_tensor(r, {12}, {0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11});
  EXPECT_FALSE(r.shares_storage(x));
  const Tensor i = arange(6, Dtype::Int64);
  EXPECT_EQ(select(view(i, {2, 3}), 1, 2).to_vector<int64_t>(), (std::vector<int64_t>{2, 5}));
  expect_tensor(flatten(tensor({7.0}, {})), {1}, {7});
}

TEST(ShapeOps, ViewErrorsNameTheOp) {
  const Tensor x = iota34();
  expect_contains(message_of<ShapeError>([&] { view(x.t(), {12}); }), "view: shape [12]");
  expect_contains(message_of<ShapeError>([&] {
                    reshape(x, {5, -1});
                  }),
                  "reshape: shape [5, -1] is invalid for input of size 12");
  expect_contains(message_of<ShapeError>([&] { permute(x, {0}); }), "permute: dims [0]");
  expect_contains(message_of<IndexError>([&] { transpose(x, 0, 2); }), "transpose: dimension 2");
  expect_contains(message_of<IndexError>([&] { narrow(x, 1, 3, 2); }),
                  "narrow: start 3 + length 2 exceeds size 4 of dimension 1");
  expect_contains(message_of<IndexError>([&] { slice(x, 0, 0, 2, 0); }),
                  "slice: step must be positive, got 0");
  expect_contains(message_of<IndexError>([&] { select(x, 0, 3); }),
                  "select: index 3 is out of bounds for dimension 0 with size 3");
  expect_contains(message_of<ShapeError>([&] {
                    expand(x, {3, 5});
                  }),
                  "expand: the expanded size 5 must match the existing size 4");
  expect_contains(message_of<IndexError>([&] { unsqueeze(x, 3); }), "unsqueeze: dimension 3");
  expect_contains(message_of<IndexError>([&] { flatten(x, 1, 0); }),
                  "flatten: start_dim 1 comes after end_dim 0");
}

// ---- cat / stack ----

TEST(ShapeOps, CatValues) {
  const Tensor a = iota34().narrow(0, 0, 2);  // [[0..3], [4..7]]
  const Tensor b = tensor({20.0, 21.0, 22.0, 23.0}, {1, 4});
  expect_tensor(cat({a, b}), {3, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 20, 21, 22, 23});
  const Tensor c = tensor({-1.0, -2.0}, {2, 1});
  expect_tensor(cat({c, a.t().t(), c}, -1), {2, 6}, {-1, 0, 1, 2, 3, -1, -2, 4, 5, 6, 7, -2});
  // Non-contiguous parts, a part empty along dim, and legacy [0] tensors (skipped).
  expect_tensor(cat({a.t(), zeros({4, 0}, Dtype::Float64), zeros({0}, Dtype::Float64)}, 1), {4, 2},
                {0, 4, 1, 5, 2, 6, 3, 7});
  expect_tensor(cat({zeros({0}, Dtype::Float64), zeros({0}, Dtype::Float64)}), {0}, {});
  expect_tensor(cat({tensor({1.0, 2.0}), zeros({0}, Dtype::Float64)}), {2}, {1, 2});
  EXPECT_EQ(cat({arange(2, Dtype::Int64), arange(3, Dtype::Int64)}).to_vector<int64_t>(),
            (std::vector<int64_t>{0, 1, 0, 1, 2}));
  // float32.
  expect_tensor(cat({ones({1, 2}), zeros({1, 2})}, 0), {2, 2}, {1, 1, 0, 0});
}

TEST(ShapeOps, CatAndStackGradients) {
  Tensor a = uniform_var({2, 3}, -1, 1, 10);
  Tensor b = uniform_var({2, 1}, -1, 1, 11);
  Tensor c = noncontiguous_var({2, 2}, 12);
  for (int64_t dim : {1, -1}) {
    expect_gradients_correct(
        [dim](const tensor_list& in) {
          const Tensor y = cat({in[0], in[1], in[2]}, dim);
          return mul(y, y);
        },
        {a, b, c});
  }
  Tensor d = uniform_var({1, 3}, -1, 1, 13);
  expect_gradients_correct([](const tensor_list& in) { return cat({in[0], in[1]}, 0); }, {a, d});
  // Only some inputs need a gradient; a constant part and a legacy-empty one in between.
  const Tensor k = ones({2, 2}, Dtype::Float64);
  const Tensor e = zeros({0}, Dtype::Float64);
  expect_gradients_correct(
      [&](const tensor_list& in) {
        return cat({k, in[0], e, in[1]}, 1);
      },
      {a, b});
  Tensor f = uniform_var({2, 3}, -1, 1, 14);
  for (int64_t dim : {0, 1, 2, -1, -3}) {
    SCOPED_TRACE(dim);
    expect_gradients_correct(
        [dim](const tensor_list& in) {
          const Tensor y = stack({in[0], in[1], in[0]}, dim);
          return mul(y, y);
        },
        {a, f});
  }
}

TEST(ShapeOps, StackValues) {
  const Tensor a = tensor({1.0, 2.0, 3.0}), b = tensor({4.0, 5.0, 6.0});
  expect_tensor(stack({a, b}), {2, 3}, {1, 2, 3, 4, 5, 6});
  expect_tensor(stack({a, b}, 1), {3, 2}, {1, 4, 2, 5, 3, 6});
  expect_tensor(stack({a, b}, -1), {3, 2}, {1, 4, 2, 5, 3, 6});
  expect_tensor(stack({tensor({7.0}, {}), tensor({8.0}, {})}), {2}, {7, 8});
  Tensor x = tensor({1.0, 2.0}, {2});
  x.requires_grad_();
  sum(mul(stack({x, x}, 0), tensor({1.0, 2.0, 3.0, 4.0}, {2, 2}))).backward();
  expect_tensor(x.grad(), {2}, {4, 6});  // x0: 1 + 3, x1: 2 + 4
}

TEST(ShapeOps, CatAndStackErrors) {
  const Tensor a = zeros({2, 3}), b = zeros({2, 4});
  expect_contains(message_of<ShapeError>([&] {
                    cat({a, zeros({2, 3, 1})});
                  }),
                  "cat: tensors must have the same number of dimensions; got 2 and 3 (tensor 1)");
  expect_contains(message_of<ShapeError>([&] {
                    cat({a, b}, 0);
                  }),
                  "cat: sizes of tensors must match except in dimension 0; expected size 3 but got "
                  "size 4 for tensor 1 in dimension 1");
  expect_contains(message_of<ShapeError>([&] { cat({}); }), "cat: expected a non-empty list");
  expect_contains(message_of<ShapeError>([&] {
                    cat({a, zeros({})});
                  }),
                  "cat: zero-dimensional tensor (at position 1) cannot be concatenated");
  expect_contains(message_of<IndexError>([&] { cat({a, a}, 2); }), "cat: dimension 2");
  expect_contains(message_of<DtypeError>([&] {
                    cat({a, zeros({2, 3}, Dtype::Float64)});
                  }),
                  "cat: expected all tensors to have the same dtype; got float32 and float64 "
                  "(tensor 1)");
  expect_contains(message_of<ShapeError>([&] {
                    stack({a, a, b});
                  }),
                  "stack: expects each tensor to be equal size, but got [2, 3] at entry 0 and "
                  "[2, 4] at entry 2");
  expect_contains(message_of<IndexError>([&] { stack({a, a}, 3); }), "stack: dimension 3");
  expect_contains(message_of<ShapeError>([&] { stack({}); }), "stack: expected a non-empty list");
}

// ---- pad ----

TEST(ShapeOps, ConstantPadValues) {
  const Tensor x = arange(6, Dtype::Float64).view({2, 3});  // [[0, 1, 2], [3, 4, 5]]
  expect_tensor(pad(x, {1, 2}), {2, 6}, {0, 0, 1, 2, 0, 0, 0, 3, 4, 5, 0, 0});
  expect_tensor(pad(x, {0, 1, 1, 0}, "constant", -1), {3, 4},
                {-1, -1, -1, -1, 0, 1, 2, -1, 3, 4, 5, -1});
  // Negative pads crop: last dim drops its first column and gains 2; dim 0 gains 1 on top
  // and loses its last row. (torch.nn.functional.pad gives the same.)
  expect_tensor(pad(x, {-1, 2, 1, -1}), {2, 4}, {0, 0, 0, 0, 1, 2, 0, 0});
  // A crop into the padding on the other side: size 3 + 2 - 4 = 1, the padding only.
  expect_tensor(pad(x, {2, -4}, "constant", 9), {2, 1}, {9, 9});
  expect_tensor(pad(x, {-3, 0}), {2, 0}, {});
  EXPECT_EQ(pad(arange(3, Dtype::Int64), {1, 0}, "constant", 7).to_vector<int64_t>(),
            (std::vector<int64_t>{7, 0, 1, 2}));
  expect_tensor(pad(x.t(), {1, 0}), {3, 3}, {0, 0, 3, 0, 1, 4, 0, 2, 5});  // non-contiguous
}

TEST(ShapeOps, ReflectAndReplicatePadValues) {
  const Tensor x = arange(6, Dtype::Float64).view({1, 2, 3});
  // reflect: ... 2 1 | 0 1 2 | 1 0 ...; replicate: ... 0 0 | 0 1 2 | 2 2 ...
  expect_tensor(pad(x, {2, 1}, "reflect"), {1, 2, 6}, {2, 1, 0, 1, 2, 1, 5, 4, 3, 4, 5, 4});
  expect_tensor(pad(x, {2, 1}, "replicate"), {1, 2, 6}, {0, 0, 0, 1, 2, 2, 3, 3, 3, 4, 5, 5});
  expect_tensor(pad(x, {0, 0, 1, 1}, "reflect"), {1, 4, 3}, {3, 4, 5, 0, 1, 2, 3, 4, 5, 0, 1, 2});
  expect_tensor(pad(x, {1, 0, 0, 1}, "replicate"), {1, 3, 4}, {0, 0, 1, 2, 3, 3, 4, 5, 3, 3, 4, 5});
  // Negative pads (torch: (-1, 2) reflect -> [1, 2, 1, 0]; (2, -1) replicate -> [0, 0, 0, 1]).
  expect_tensor(pad(x, {-1, 2}, "reflect"), {1, 2, 4}, {1, 2, 1, 0, 4, 5, 4, 3});
  expect_tensor(pad(x, {2, -1}, "replicate"), {1, 2, 4}, {0, 0, 0, 1, 3, 3, 3, 4});
}

TEST(ShapeOps, PadGradients) {
  Tensor x = uniform_var({2, 3, 4}, -1, 1, 20);
  Tensor xt = noncontiguous_var({3, 4}, 21);
  const std::vector<Shape> pad_sets = {{1, 2}, {0, 1, 2, 0}, {-1, 2, 1, -1}, {1, 1, 1, 1, 1, 0}};
  for (const char* mode : {"constant", "reflect", "replicate"}) {
    for (const Shape& p : pad_sets) {
      SCOPED_TRACE(std::string(mode) + " pads " + format_shape(p));
      expect_gradients_correct(
          [&](const tensor_list& in) {
            const Tensor y = pad(in[0], p, mode, 0.5);
            return mul(y, y);
          },
          {x});
      if (p.size() <= 4) {
        expect_gradients_correct([&](const tensor_list& in) { return pad(in[0], p, mode); }, {xt});
      }
    }
  }
  // Hand-computed: replicate's edge element collects the gradient of every copy.
  Tensor v = tensor({1.0, 2.0, 3.0});
  v.requires_grad_();
  sum(pad(v, {2, 1}, "replicate")).backward();
  expect_tensor(v.grad(), {3}, {3, 1, 2});
  v.zero_grad();
  sum(pad(v, {2, 2}, "reflect")).backward();  // [3 2 | 1 2 3 | 2 1]
  expect_tensor(v.grad(), {3}, {2, 3, 2});
}

TEST(ShapeOps, PadErrors) {
  const Tensor x = zeros({2, 3});
  expect_contains(message_of<ShapeError>([&] {
                    pad(x, {1, 2, 3});
                  }),
                  "pad: padding length must be divisible by 2, got 3");
  expect_contains(message_of<ShapeError>([&] {
                    pad(x, {1, 1, 1, 1, 1, 1});
                  }),
                  "pad: padding length 6 is too large for a tensor of 2 dims (at most 4)");
  expect_contains(message_of<ShapeError>([&] {
                    pad(x, {-2, -2});
                  }),
                  "pad: input size 3 of dimension 1 with padding (-2, -2) gives a negative output "
                  "size -1");
  expect_contains(message_of<ShapeError>([&] {
                    pad(x, {3, 0}, "reflect");
                  }),
                  "pad: reflect padding (3, 0) must be less than the input size 3 of dimension 1");
  expect_contains(message_of<ShapeError>([&] {
                    pad(zeros({2, 0}), {1, 0}, "replicate");
                  }),
                  "pad: replicate padding (1, 0) needs a non-empty dimension 1");
  expect_contains(message_of<Error>([&] {
                    pad(x, {1, 1}, "circular");
                  }),
                  "pad: unknown mode 'circular'");
}

}  // namespace
}  // namespace aclgrad
