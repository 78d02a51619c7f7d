// depthwise_direct: convolutions with one input channel per group (depthwise, depthwise with a
// channel multiplier, single-channel first layers) on the direct plane kernels of depthwise.h.
// There the im2col matrix of a group has only K rows, so a GEMM would run with a reduction depth
// of K and be bound by packing; the plane kernels stream each plane once per tap from L1/L2.
// fp32 only (fp64 takes the GEMM algorithms); no scratch.
#include "conv/algo_support.h"
#include "conv/algorithms.h"
#include "conv/depthwise.h"

namespace aclnn_cpu::conv {
namespace {

constexpr int64_t kMaxChannelMultiplier = 8;

Fit plan(const Problem& p) {
  Fit f;
  if (p.fp64) {
    f.reason = "fp32 only";
  } else if (!use_depthwise(p.g)) {
    f.reason = "needs one input channel per group";
  } else {
    // With many output channels per group the GEMM lowerings win: MNIST's first layer (1 -> 32,
    // 5x5, 28x28), 1 thread: 25 GFLOP/s here vs 44 with implicit_gemm + col2im_gemm.
    f.applies = true;
    f.preferred = p.g.cout_g() <= kMaxChannelMultiplier;
    f.reason = f.preferred ? "one input channel per group"
                           : "more than 8 output channels per group: GEMMs are faster";
  }
  return f;
}

void forward(const Problem& p, const Blocking&, const Operands<float>& o) {
  depthwise_forward(p.g, o.x, o.w, o.out);
}
void backward_data(const Problem& p, const Blocking&, const Operands<float>& o) {
  depthwise_backward_data(p.g, o.y, o.w, o.out);
}
void backward_weight(const Problem& p, const Blocking&, const Operands<float>& o) {
  depthwise_backward_weight(p.g, o.x, o.y, o.out);
}

}  // namespace

const Algorithm kDepthwiseForward{"depthwise_direct", Primitive::kForward, plan, forward, nullptr};
const Algorithm kDepthwiseData{"depthwise_direct", Primitive::kBackwardData, plan, backward_data,
                               nullptr};
const Algorithm kDepthwiseWeight{"depthwise_direct", Primitive::kBackwardWeight, plan,
                                 backward_weight, nullptr};

}  // namespace aclnn_cpu::conv
