// Double (and higher) backward through conv1d/2d/3d, conv_transpose1d/2d/3d and conv_tbc:
// gradgradcheck (float64, PyTorch's default tolerances) on the core geometries, every subset of
// {input, weight, bias} requiring grad, non-contiguous operands, third order, a Hessian-vector
// product of a small CNN against finite differences of gradients, and float32 double backward
// against float64's. The full sweep is in conv_gradcheck_long_test.cpp (label "long").
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <utility>

#include "ops/ops.h"
#include "tests/ops/conv_test_util.h"
#include "tests/ops/ops_test_util.h"

namespace aclgrad {
namespace {

using autograd::tensor_list;
using testing::conv_nd;
using testing::conv_transpose_nd;
using testing::join;
using testing::max_abs_diff;
using testing::scattered;
using testing::spatial;
using testing::uniform_var;

using ConvFn = std::function<Tensor(const tensor_list&)>;

void expect_gradgradcheck(const ConvFn& fn, const tensor_list& inputs) {
  EXPECT_NO_THROW(EXPECT_TRUE(autograd::gradgradcheck(fn, inputs)));
}

TEST(ConvDoubleBackward, GradgradcheckCore) {
  for (int64_t nd = 1; nd <= 3; ++nd) {
    SCOPED_TRACE("nd " + std::to_string(nd));
    const Shape sp = nd == 3 ? Shape{3, 4, 3} : spatial(nd, 5);
    const Shape k = nd == 1 ? Shape{3} : nd == 2 ? Shape{3, 2} : Shape{2, 2, 2};
    // Regular: stride 2, padding 1, dilation 2 (where it fits), 2 groups.
    expect_gradgradcheck(
        [nd](const tensor_list& in) {
          return conv_nd(nd, in[0], in[1], in[2],
                         {.stride = 2, .padding = 1, .dilation = nd == 3 ? 1 : 2, .groups = 2});
        },
        {uniform_var(join({2, 4}, sp), -1, 1, 1), uniform_var(join({4, 2}, k), -1, 1, 2),
         uniform_var({4}, -1, 1, 3)});
    // Transposed: stride 2, padding 1, output_padding 1, depthwise.
    expect_gradgradcheck(
        [nd](const tensor_list& in) {
          return conv_transpose_nd(nd, in[0], in[1], in[2],
                                   {.stride = 2, .padding = 1, .output_padding = 1, .groups = 3});
        },
        {uniform_var(join({1, 3}, nd == 3 ? Shape{2, 3, 2} : spatial(nd, 4)), -1, 1, 4),
         uniform_var(join({3, 1}, k), -1, 1, 5), uniform_var({3}, -1, 1, 6)});
  }
}

// "same" padding with an even kernel pads asymmetrically (2d: libaclnn's 4-value padding; 1d:
// lifted to 2d; 3d: a padded copy), dilated, on non-contiguous operands with offsets.
TEST(ConvDoubleBackward, SamePaddingAsymmetricNonContiguous) {
  for (int64_t nd = 1; nd <= 3; ++nd) {
    SCOPED_TRACE("nd " + std::to_string(nd));
    const Shape k = nd == 1 ? Shape{4} : nd == 2 ? Shape{2, 3} : Shape{2, 1, 2};
    const Tensor x = scattered(
        uniform_var(join({2, 2}, nd == 3 ? Shape{3, 3, 3} : spatial(nd, 5)), -1, 1, 7), true);
    const Tensor w = scattered(uniform_var(join({3, 2}, k), -1, 1, 8), true);
    expect_gradgradcheck(
        [nd](const tensor_list& in) {
          return conv_nd(nd, in[0], in[1], Tensor(), {.padding = "same", .dilation = 2});
        },
        {x, w});
  }
}

// Every non-empty subset of {input, weight, bias} as variables, the rest constants.
TEST(ConvDoubleBackward, EverySubsetRequiringGrad) {
  for (int mask = 1; mask < 8; ++mask) {
    SCOPED_TRACE("requires grad: input " + std::to_string(mask & 1) + " weight " +
                 std::to_string((mask >> 1) & 1) + " bias " + std::to_string((mask >> 2) & 1));
    for (bool transposed : {false, true}) {
      Tensor x = uniform_var({2, 2, 4, 3}, -1, 1, 10 + mask);
      Tensor w = uniform_var({2, 3, 2, 2}, -1, 1, 20 + mask);
      Tensor b = uniform_var({3}, -1, 1, 30 + mask);
      if (!(mask & 1)) x = x.detach();
      if (!(mask & 2)) w = w.detach();
      if (!(mask & 4)) b = b.detach();
      if (!transposed) w = uniform_var({3, 2, 2, 2}, -1, 1, 20 + mask).requires_grad_(mask & 2);
      expect_gradgradcheck(
          [transposed](const tensor_list& in) {
            return transposed ? conv_transpose2d(in[0], in[1], in[2], {.stride = 2})
                              : conv2d(in[0], in[1], in[2], {.padding = 1});
          },
          {x, w, b});
    }
  }
}

TEST(ConvDoubleBackward, ConvTbc) {
  for (int64_t pad : {0, 1}) {
    SCOPED_TRACE("pad " + std::to_string(pad));
    expect_gradgradcheck(
        [pad](const tensor_list& in) { return conv_tbc(in[0], in[1], in[2], pad); },
        {uniform_var({5, 2, 3}, -1, 1, 40), uniform_var({3, 3, 2}, -1, 1, 41),
         uniform_var({2}, -1, 1, 42)});
  }
  // Non-contiguous [T, B, C] (a permuted [B, C, T] tensor).
  const Tensor x = uniform_var({2, 3, 6}, -1, 1, 43).detach().permute({2, 0, 1}).requires_grad_();
  expect_gradgradcheck([](const tensor_list& in) { return conv_tbc(in[0], in[1], Tensor(), 2); },
                       {x, uniform_var({2, 3, 2}, -1, 1, 44)});
}

// Third order: gradgradcheck of a function that returns first-order gradients checks their
// second derivatives, i.e. the third derivative of the convolution loss.
TEST(ConvDoubleBackward, ThirdOrder) {
  const Tensor x = uniform_var({1, 2, 4, 4}, -1, 1, 50);
  const Tensor w = uniform_var({2, 2, 2, 2}, -1, 1, 51);
  expect_gradgradcheck(
      [](const tensor_list& in) {
        const Tensor y = conv2d(in[0], in[1], Tensor(), {.padding = 1});
        const Tensor loss = sum(mul(mul(y, y), y));  // cubic: nonzero third derivative
        return autograd::grad({loss}, {in[0], in[1]}, {}, std::nullopt, /*create_graph=*/true)[0];
      },
      {x, w});
}

// A small CNN's loss L(p); its Hessian-vector product H v from double backward equals the
// central difference of gradients (grad L(p + e v) - grad L(p - e v)) / 2e.
TEST(ConvDoubleBackward, HessianVectorProductMatchesFiniteDifferences) {
  const Tensor x = uniform_var({2, 1, 6, 6}, -1, 1, 60).detach();
  tensor_list p = {uniform_var({3, 1, 3, 3}, -1, 1, 61), uniform_var({3}, -1, 1, 62),
                   uniform_var({3, 2, 2, 2}, -1, 1, 63)};
  auto loss = [&](const tensor_list& q) {
    const Tensor h = tanh(conv2d(x, q[0], q[1], {.padding = 1}));
    const Tensor y = conv_transpose2d(h, q[2], Tensor(), {.stride = 2});
    return sum(mul(y, y));
  };
  tensor_list v;
  for (size_t i = 0; i < p.size(); ++i)
    v.push_back(uniform_var(p[i].sizes(), -1, 1, 70 + i).detach());
  const tensor_list g = autograd::grad({loss(p)}, p, {}, std::nullopt, /*create_graph=*/true);
  Tensor gv;
  for (size_t i = 0; i < p.size(); ++i) {
    const Tensor t = sum(mul(g[i], v[i]));
    gv = gv.defined() ? add(gv, t) : t;
  }
  const tensor_list hv = autograd::grad({gv}, p);
  const double e = 1e-5;
  auto grads_at = [&](double s) {
    tensor_list q;
    for (size_t i = 0; i < p.size(); ++i)
      q.push_back(add(p[i].detach(), mul(v[i], s)).requires_grad_());
    return autograd::grad({loss(q)}, q);
  };
  const tensor_list plus = grads_at(e), minus = grads_at(-e);
  for (size_t i = 0; i < p.size(); ++i) {
    SCOPED_TRACE("parameter " + std::to_string(i));
    const Tensor fd = div(sub(plus[i], minus[i]), 2 * e);
    EXPECT_LE(max_abs_diff(hv[i], fd), 1e-6 * (1 + max_abs_diff(fd, zeros_like(fd))));
  }
}

// float32, float16 and bfloat16 double backward run libaclnn's kernels for those dtypes; they
// agree with float64's to the dtype's precision.
TEST(ConvDoubleBackward, LowerPrecisionsMatchFloat64) {
  const Tensor x = uniform_var({2, 3, 9, 8}, -1, 1, 80);
  const Tensor w = uniform_var({4, 3, 3, 3}, -1, 1, 81);
  auto second = [](const Tensor& xs, const Tensor& ws) {
    const Tensor y = conv2d(xs, ws, Tensor(), {.stride = 2, .padding = 1});
    const tensor_list g =
        autograd::grad({sum(mul(y, y))}, {xs, ws}, {}, std::nullopt, /*create_graph=*/true);
    return autograd::grad({add(sum(mul(g[0], g[0])), sum(mul(g[1], g[1])))}, {xs, ws});
  };
  const tensor_list d64 = second(x, w);
  for (const auto& [dtype, tol] :
       {std::pair{Dtype::Float32, 1e-4}, {Dtype::Float16, 3e-2}, {Dtype::BFloat16, 1e-1}}) {
    SCOPED_TRACE(dtype_name(dtype));
    const tensor_list d =
        second(x.detach().to(dtype).requires_grad_(), w.detach().to(dtype).requires_grad_());
    for (size_t i = 0; i < 2; ++i) {
      SCOPED_TRACE("input " + std::to_string(i));
      EXPECT_EQ(d[i].dtype(), dtype);
      EXPECT_LE(max_abs_diff(d[i].to(Dtype::Float64), d64[i]),
                tol * (1 + max_abs_diff(d64[i], zeros_like(d64[i]))));
    }
  }
}

// The conv net of the README's gradcheck section.
TEST(ConvDoubleBackward, ReadmeConvNet) {
  const tensor_list in = {uniform_var({2, 1, 8, 8}, -1, 1, 95),
                          uniform_var({4, 1, 3, 3}, -1, 1, 96),
                          uniform_var({4, 2, 3, 3}, -1, 1, 97)};
  auto net = [](const tensor_list& v) {
    const Tensor h = tanh(conv2d(v[0], v[1], Tensor(), {.stride = 2, .padding = 1}));
    return conv_transpose2d(h, v[2], Tensor(), {.stride = 2, .output_padding = 1});
  };
  EXPECT_NO_THROW(EXPECT_TRUE(autograd::gradcheck(net, in)));
  expect_gradgradcheck(net, in);
}

// Without create_graph the gradients carry no graph (one fused libaclnn call, nothing recorded).
TEST(ConvDoubleBackward, PlainBackwardRecordsNothing) {
  const Tensor x = uniform_var({1, 2, 5, 5}, -1, 1, 90);
  const Tensor w = uniform_var({3, 2, 3, 3}, -1, 1, 91);
  const tensor_list g = autograd::grad({sum(conv2d(x, w))}, {x, w});
  EXPECT_FALSE(g[0].requires_grad());
  EXPECT_FALSE(g[1].requires_grad());
  const tensor_list h = autograd::grad({sum(conv2d(x, w))}, {x, w}, {}, std::nullopt, true);
  EXPECT_TRUE(h[0].requires_grad());  // w's dependence
  EXPECT_TRUE(h[1].requires_grad());
}

}  // namespace
}  // namespace aclgrad
