// Pooling: max/avg/adaptive-avg pooling in 1d/2d/3d on one N-d geometry (PoolPlan, built and
// validated in pool_plan.cpp; plane kernels in pool_kernels.cpp): the recorded ops with their
// backward nodes side by side.
//
// Every spatial rank is run as 3-d: 1d and 2d get leading unit dims (kernel 1, stride 1, no
// padding), so [N, C, L] is processed as N*C planes of [1, 1, L]. A plan describes each axis as
// a table of windows: output o of that axis reads the input positions start + i*step, i < count
// (only positions inside the input; padding never appears in the tables). Max, avg and adaptive
// avg pooling differ only in how the tables are built and in the reduction.
//
// The recorded ops and their adjoints (each backward is again a recorded op, so every order of
// derivative works):
//   avg_forward(x)          <-> avg_adjoint(g)            (spread g / divisor over the window)
//   max_forward(x) = gather of x at idx;   max_scatter(g) <-> max_gather(gg) at the same idx.
#include "ops/pool.h"

#include <memory>
#include <vector>

#include "autograd/function.h"
#include "ops/autocast.h"
#include "ops/pool_kernels.h"
#include "ops/pool_plan.h"
#include "tensor/creation.h"

namespace aclgrad {

using autograd::make_node;
using autograd::Node;
using autograd::tensor_list;

namespace {

using namespace pool;  // PoolPlan, Window, the plan builders (pool_plan.h)

// ---- recorded ops ----

Tensor avg_forward(const Tensor& x, const PlanPtr& plan);
Tensor avg_adjoint(const Tensor& g, const PlanPtr& plan);
Tensor max_scatter(const Tensor& g, const Tensor& idx, const PlanPtr& plan);
Tensor max_gather(const Tensor& g, const Tensor& idx, const PlanPtr& plan);

// avg_forward and avg_adjoint are linear and adjoint to each other, so the backward of each is
// the other: y = avg_pool(x) gives dL/dx = avg_adjoint(dL/dy), and z = avg_adjoint(g) gives
// dL/dg = avg_forward(dL/dz).
struct AvgPoolBackward final : Node {
  AvgPoolBackward(const char* name, PlanPtr plan, bool of_adjoint)
      : Node(name), plan(std::move(plan)), of_adjoint(of_adjoint) {}
  PlanPtr plan;
  bool of_adjoint;  // the node of avg_adjoint (else of avg_forward)
  tensor_list apply(tensor_list&& grads) override {
    return {of_adjoint ? avg_forward(grads[0], plan) : avg_adjoint(grads[0], plan)};
  }
};

Tensor avg_forward(const Tensor& x_in, const PlanPtr& plan) {
  const PoolPlan& p = *plan;
  const Tensor x = x_in.contiguous();  // [P, D, H, W] as the user's shape
  Tensor y = empty(p.out_shape, x.dtype());
  avg_forward_kernel(p, x, y);
  if (auto node = make_node<AvgPoolBackward>({x_in}, p.node_name, plan, false)) {
    node->set_history(y);
  }
  return y;
}

Tensor avg_adjoint(const Tensor& g_in, const PlanPtr& plan) {
  const PoolPlan& p = *plan;
  const Tensor g = g_in.contiguous();  // [P, D_out, H_out, W_out]
  Tensor gi = empty(p.in_shape, g.dtype());
  avg_adjoint_kernel(p, g, gi);
  if (auto node = make_node<AvgPoolBackward>({g_in}, "AvgPoolBackwardBackward", plan, true)) {
    node->set_history(gi);
  }
  return gi;
}

// At fixed indices, max_scatter (gi[idx[o]] += g[o]) and max_gather (z[o] = gg[idx[o]]) are
// adjoint linear maps. y = max_pool(x) = gather of x gives dL/dx = max_scatter(dL/dy); the
// backward of max_scatter is max_gather and vice versa.
struct MaxPoolBackward final : Node {
  MaxPoolBackward(const char* name, PlanPtr plan, Tensor idx, bool to_input)
      : Node(name), plan(std::move(plan)), idx(std::move(idx)), to_input(to_input) {}
  PlanPtr plan;
  Tensor idx;     // int64 [*out_shape], no history
  bool to_input;  // the gradient lives on the input grid (scatter) or the output grid (gather)
  tensor_list apply(tensor_list&& grads) override {
    return {to_input ? max_scatter(grads[0], idx, plan) : max_gather(grads[0], idx, plan)};
  }
  void release_state() override { idx = Tensor(); }
};

std::tuple<Tensor, Tensor> max_forward(const Tensor& x_in, const PlanPtr& plan) {
  const PoolPlan& p = *plan;
  const Tensor x = x_in.contiguous();
  Tensor y = empty(p.out_shape, x.dtype());
  Tensor idx = empty(p.out_shape, Dtype::Int64);
  max_forward_kernel(p, x, y, idx);
  if (auto node = make_node<MaxPoolBackward>({x_in}, p.node_name, plan, idx, true))
    node->set_history(y);
  return {y, idx};
}

// gi[idx[o]] += g[o] per plane (windows overlap when stride < kernel, so this accumulates).
Tensor max_scatter(const Tensor& g_in, const Tensor& idx, const PlanPtr& plan) {
  const PoolPlan& p = *plan;
  const Tensor g = g_in.contiguous();
  Tensor gi = empty(p.in_shape, g.dtype());
  max_scatter_kernel(p, g, idx, gi);
  if (auto node = make_node<MaxPoolBackward>({g_in}, "MaxPoolBackwardBackward", plan, idx, false))
    node->set_history(gi);
  return gi;
}

// z[o] = gg[idx[o]] per plane (0 where idx is -1).
Tensor max_gather(const Tensor& gg_in, const Tensor& idx, const PlanPtr& plan) {
  const PoolPlan& p = *plan;
  const Tensor gg = gg_in.contiguous();
  Tensor z = empty(p.out_shape, gg.dtype());
  max_gather_kernel(p, gg, idx, z);
  if (auto node = make_node<MaxPoolBackward>({gg_in}, "MaxPoolGatherBackward", plan, idx, true))
    node->set_history(z);
  return z;
}

// ---- entry points ----

constexpr const char* kMaxOps[3] = {"max_pool1d", "max_pool2d", "max_pool3d"};
constexpr const char* kMaxNodes[3] = {"MaxPool1dBackward", "MaxPool2dBackward",
                                      "MaxPool3dBackward"};
constexpr const char* kAvgOps[3] = {"avg_pool1d", "avg_pool2d", "avg_pool3d"};
constexpr const char* kAvgNodes[3] = {"AvgPool1dBackward", "AvgPool2dBackward",
                                      "AvgPool3dBackward"};

std::tuple<Tensor, Tensor> max_pool_nd(int rank, const Tensor& x, const WindowArgs& args) {
  const PlanPtr plan =
      make_strided_plan(kMaxOps[rank - 1], kMaxNodes[rank - 1], PoolKind::Max, rank, x, args);
  return max_forward(x, plan);
}

Tensor avg_pool_nd(int rank, const Tensor& x, const Shape& kernel_size, const Shape& stride,
                   const Shape& padding, bool ceil_mode, bool count_include_pad,
                   std::optional<int64_t> divisor_override) {
  const char* op = kAvgOps[rank - 1];
  check(!divisor_override || *divisor_override != 0, op,
        ": divisor_override must be non-zero, got 0");
  const Shape one{1};
  auto plan = make_strided_plan(op, kAvgNodes[rank - 1], PoolKind::Avg, rank, x,
                                WindowArgs{kernel_size, stride, padding, one, ceil_mode});
  plan->count_include_pad = count_include_pad;
  plan->divisor_override = divisor_override;
  return avg_forward(x, plan);
}

}  // namespace

Tensor max_pool1d(const Tensor& x, const Shape& kernel_size, const Shape& stride,
                  const Shape& padding, const Shape& dilation, bool ceil_mode) {
  return std::get<0>(max_pool_nd(1, x, {kernel_size, stride, padding, dilation, ceil_mode}));
}
Tensor max_pool2d(const Tensor& x, const Shape& kernel_size, const Shape& stride,
                  const Shape& padding, const Shape& dilation, bool ceil_mode) {
  return std::get<0>(max_pool_nd(2, x, {kernel_size, stride, padding, dilation, ceil_mode}));
}
Tensor max_pool3d(const Tensor& x, const Shape& kernel_size, const Shape& stride,
                  const Shape& padding, const Shape& dilation, bool ceil_mode) {
  return std::get<0>(max_pool3d_with_indices(x, kernel_size, stride, padding, dilation, ceil_mode));
}

std::tuple<Tensor, Tensor> max_pool1d_with_indices(const Tensor& x, const Shape& kernel_size,
                                                   const Shape& stride, const Shape& padding,
                                                   const Shape& dilation, bool ceil_mode) {
  return max_pool_nd(1, x, {kernel_size, stride, padding, dilation, ceil_mode});
}
std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& x, const Shape& kernel_size,
                                                   const Shape& stride, const Shape& padding,
                                                   const Shape& dilation, bool ceil_mode) {
  return max_pool_nd(2, x, {kernel_size, stride, padding, dilation, ceil_mode});
}
std::tuple<Tensor, Tensor> max_pool3d_with_indices(const Tensor& x, const Shape& kernel_size,
                                                   const Shape& stride, const Shape& padding,
                                                   const Shape& dilation, bool ceil_mode) {
  if (autocast::is_active()) {
    const autocast::OpInputs in(AutocastOp::kMaxPool3d, {x});
    return max_pool3d_with_indices(in[0], kernel_size, stride, padding, dilation, ceil_mode);
  }
  return max_pool_nd(3, x, {kernel_size, stride, padding, dilation, ceil_mode});
}

Tensor avg_pool1d(const Tensor& x, const Shape& kernel_size, const Shape& stride,
                  const Shape& padding, bool ceil_mode, bool count_include_pad,
                  std::optional<int64_t> divisor_override) {
  return avg_pool_nd(1, x, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override);
}
Tensor avg_pool2d(const Tensor& x, const Shape& kernel_size, const Shape& stride,
                  const Shape& padding, bool ceil_mode, bool count_include_pad,
                  std::optional<int64_t> divisor_override) {
  return avg_pool_nd(2, x, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override);
}
Tensor avg_pool3d(const Tensor& x, const Shape& kernel_size, const Shape& stride,
                  const Shape& padding, bool ceil_mode, bool count_include_pad,
                  std::optional<int64_t> divisor_override) {
  if (autocast::is_active()) {
    const autocast::OpInputs in(AutocastOp::kAvgPool3d, {x});
    return avg_pool3d(in[0], kernel_size, stride, padding, ceil_mode, count_include_pad,
                      divisor_override);
  }
  return avg_pool_nd(3, x, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override);
}

Tensor adaptive_avg_pool2d(const Tensor& x, const Shape& output_size) {
  return avg_forward(
      x, make_adaptive_plan("adaptive_avg_pool2d", "AdaptiveAvgPool2dBackward", x, output_size));
}

}  // namespace aclgrad
