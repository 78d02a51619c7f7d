#include "ops/pool_plan.h"

#include <algorithm>

#include "tensor/error.h"

namespace aclgrad::pool {
namespace {

int64_t floor_div(int64_t a, int64_t b) {
  return a / b - ((a % b != 0) && ((a < 0) != (b < 0)));
}

// PyTorch's pooling_output_shape.
int64_t pooled_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode) {
  int64_t out = floor_div(in + 2 * p - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0), s) + 1;
  if (ceil_mode && (out - 1) * s >= in + p) --out;  // last window must start in input/left pad
  return out;
}

// Windows o*s - p + j*d (j < k) of one axis, restricted to [0, in).
std::vector<Window> strided_windows(int64_t in, int64_t out, int64_t k, int64_t s, int64_t p,
                                    int64_t d) {
  std::vector<Window> w(out);
  for (int64_t o = 0; o < out; ++o) {
    const int64_t start = o * s - p;
    const int64_t j0 = start < 0 ? (-start + d - 1) / d : 0;   // first tap >= 0
    const int64_t j1 = std::min(k, (in - start + d - 1) / d);  // taps < in
    w[o].count = std::max<int64_t>(0, j1 - j0);
    w[o].start = start + j0 * d;
    w[o].step = d;
    w[o].span = std::min(start + k, in + p) - start;  // avg (d = 1): clipped to the padded input
  }
  return w;
}

// Adaptive windows [floor(o*in/out), ceil((o+1)*in/out)).
std::vector<Window> adaptive_windows(int64_t in, int64_t out) {
  std::vector<Window> w(out);
  for (int64_t o = 0; o < out; ++o) {
    const int64_t start = o * in / out, end = ((o + 1) * in + out - 1) / out;
    w[o] = Window{start, end - start, 1, end - start};
  }
  return w;
}

// A window parameter as 3 axes: rank values (or one value repeated), leading unit axes `unit`.
std::array<int64_t, 3> expand_param(const char* op, const char* name, const Shape& v, int rank,
                                    int64_t unit) {
  check(v.size() == 1 || static_cast<int>(v.size()) == rank, op, ": ", name, " must have 1 or ",
        rank, " elements, got ", v);
  std::array<int64_t, 3> a{unit, unit, unit};
  for (int i = 0; i < rank; ++i) a[3 - rank + i] = v.size() == 1 ? v[0] : v[i];
  return a;
}

Shape spatial_of(const std::array<int64_t, 3>& a, int rank) {
  return Shape(a.begin() + (3 - rank), a.end());
}

const char* kSpatialNames[3] = {"L", "H, W", "D, H, W"};

// Checks x is [C, *spatial] or [N, C, *spatial] with non-zero C and spatial dims; fills the
// plan's shapes and input sizes.
void plan_input(const char* op, int rank, const Tensor& x, PoolPlan& plan) {
  const int64_t nd = x.dim();
  bool ok = nd == rank + 1 || nd == rank + 2;
  for (int64_t i = (nd == rank + 2 ? 1 : 0); ok && i < nd; ++i) ok = x.size(i) > 0;
  check<ShapeError>(ok, op, ": expected a ", rank + 1, "-d [C, ", kSpatialNames[rank - 1], "] or ",
                    rank + 2, "-d [N, C, ", kSpatialNames[rank - 1],
                    "] input with non-zero C and spatial sizes (N may be 0), got input of shape ",
                    x.sizes());
  plan.in_shape = x.sizes();
  plan.planes = 1;
  for (int64_t i = 0; i < nd - rank; ++i) plan.planes *= x.size(i);
  for (int i = 0; i < rank; ++i) plan.in[3 - rank + i] = x.size(nd - rank + i);
}

void plan_output(PoolPlan& plan, int rank) {
  const int64_t lead = static_cast<int64_t>(plan.in_shape.size()) - rank;
  plan.out_shape = Shape(plan.in_shape.begin(), plan.in_shape.begin() + lead);
  for (int i = 0; i < rank; ++i) plan.out_shape.push_back(plan.out[3 - rank + i]);
}

}  // namespace

std::shared_ptr<PoolPlan> make_strided_plan(const char* op, const char* node_name, PoolKind kind,
                                            int rank, const Tensor& x, const WindowArgs& args) {
  auto plan = std::make_shared<PoolPlan>();
  plan->op = op;
  plan->node_name = node_name;
  const auto k = expand_param(op, "kernel_size", args.kernel_size, rank, 1);
  const auto s = args.stride.empty() ? k : expand_param(op, "stride", args.stride, rank, 1);
  const auto p = expand_param(op, "padding", args.padding, rank, 0);
  const auto d = expand_param(op, "dilation", args.dilation, rank, 1);
  for (int a = 3 - rank; a < 3; ++a) {
    check(k[a] > 0, op,
          ": kernel_size should be greater than zero, but got kernel_size=", spatial_of(k, rank));
    check(s[a] > 0, op,
          ": stride should be greater than zero, but got stride=", spatial_of(s, rank));
    check(d[a] > 0, op,
          ": dilation should be greater than zero, but got dilation=", spatial_of(d, rank));
    check(p[a] >= 0, op, ": pad must be non-negative, but got pad=", spatial_of(p, rank));
    if (kind == PoolKind::Max) {
      check(p[a] <= (d[a] * (k[a] - 1) + 1) / 2, op,
            ": pad should be at most half of effective kernel size, but got pad=", p[a],
            ", kernel_size=", k[a], " and dilation=", d[a]);
    } else {
      check(p[a] <= k[a] / 2, op, ": pad should be at most half of kernel size, but got pad=", p[a],
            " and kernel_size=", k[a]);
    }
  }
  plan_input(op, rank, x, *plan);
  for (int a = 0; a < 3; ++a) {
    plan->out[a] = pooled_size(plan->in[a], k[a], s[a], p[a], d[a], args.ceil_mode);
  }
  for (int a = 3 - rank; a < 3; ++a) {
    check<ShapeError>(plan->out[a] >= 1, op, ": given input of shape ", x.sizes(),
                      ", the calculated output size ", spatial_of(plan->out, rank),
                      " is too small (kernel_size=", spatial_of(k, rank),
                      ", stride=", spatial_of(s, rank), ", padding=", spatial_of(p, rank),
                      ", dilation=", spatial_of(d, rank), ")");
  }
  plan->dense = true;
  for (int a = 0; a < 3; ++a) {
    plan->windows[a] = strided_windows(plan->in[a], plan->out[a], k[a], s[a], p[a], d[a]);
    plan->dense = plan->dense && p[a] == 0 && d[a] == 1;
    for (const Window& w : plan->windows[a]) plan->dense = plan->dense && w.count == k[a];
  }
  plan->kernel = k;
  plan->stride = s;
  plan_output(*plan, rank);
  return plan;
}

std::shared_ptr<PoolPlan> make_adaptive_plan(const char* op, const char* node_name, const Tensor& x,
                                             const Shape& output_size) {
  const auto out = expand_param(op, "output_size", output_size, 2, 1);
  check(out[1] >= 0 && out[2] >= 0, op,
        ": elements of output_size must be greater than or equal to 0, got ", output_size);
  auto plan = std::make_shared<PoolPlan>();
  plan->op = op;
  plan->node_name = node_name;
  plan_input(op, 2, x, *plan);
  for (int a = 0; a < 3; ++a) {
    plan->out[a] = out[a];
    plan->windows[a] = adaptive_windows(plan->in[a], out[a]);
  }
  plan->count_include_pad = false;  // divisor = the window's input count
  plan_output(*plan, 2);
  return plan;
}

}  // namespace aclgrad::pool
