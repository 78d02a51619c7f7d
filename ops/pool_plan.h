// Pooling geometry (internal to ops/pool*.cpp): a PoolPlan describes max/avg/adaptive-avg pooling
// of any spatial rank as 3-d, each axis as a table of windows (see pool.cpp for the kernels and
// the recorded ops that run on it). Building a plan validates the arguments with PyTorch's rules
// and messages.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "tensor/tensor.h"

namespace aclgrad::pool {

enum class PoolKind { Max, Avg };  // only the padding rule differs at planning time

// Input positions of one output index along one axis: start + i*step for i < count. span is the
// window's extent clipped to the padded input (the count_include_pad divisor factor).
struct Window {
  int64_t start = 0, count = 0, step = 1, span = 1;
};

struct PoolPlan {
  const char* op = "";         // "max_pool2d", for messages
  const char* node_name = "";  // "MaxPool2dBackward", ...
  Shape in_shape, out_shape;   // the user's shapes, [N, C, *spatial] or [C, *spatial]
  int64_t planes = 0;          // N * C
  std::array<int64_t, 3> in{1, 1, 1}, out{1, 1, 1};  // spatial sizes as 3-d
  std::array<std::vector<Window>, 3> windows;        // windows[axis][o]
  bool count_include_pad = true;                     // avg only
  std::optional<int64_t> divisor_override;           // avg only
  // Dense: no padding, no dilation and every window whole (count = kernel), so output o of axis
  // a reads kernel[a] consecutive positions from o * stride[a]. Max pooling with 2x2 and 3x3
  // kernels then takes direct loops over rows (max_forward_dense) when the depth axis is
  // trivial (2-d pooling).
  bool dense = false;
  std::array<int64_t, 3> kernel{1, 1, 1}, stride{1, 1, 1};

  int64_t in_plane() const { return in[0] * in[1] * in[2]; }
  int64_t out_plane() const { return out[0] * out[1] * out[2]; }
  double divisor(const Window& a, const Window& b, const Window& c) const {
    if (divisor_override) return static_cast<double>(*divisor_override);
    if (count_include_pad) return static_cast<double>(a.span * b.span * c.span);
    return static_cast<double>(a.count * b.count * c.count);
  }
};
using PlanPtr = std::shared_ptr<const PoolPlan>;

struct WindowArgs {
  const Shape& kernel_size;
  const Shape& stride;
  const Shape& padding;
  const Shape& dilation;
  bool ceil_mode;
};

// Max or avg pooling of `rank` spatial dims with kernel/stride/padding/dilation (stride empty =
// kernel), PyTorch's output size and argument checks.
std::shared_ptr<PoolPlan> make_strided_plan(const char* op, const char* node_name, PoolKind kind,
                                            int rank, const Tensor& x, const WindowArgs& args);

// Adaptive average pooling of 2 spatial dims to `output_size` (1 or 2 values).
std::shared_ptr<PoolPlan> make_adaptive_plan(const char* op, const char* node_name, const Tensor& x,
                                             const Shape& output_size);

}  // namespace aclgrad::pool
