// depthwise_direct: convolutions with one input channel per group (depthwise, depthwise with a
// channel multiplier, single-channel first layers) on the direct plane kernels of depthwise.h.
// There the im2col matrix of a group has only K rows, so a GEMM would run with a reduction depth
// of K and be bound by packing; the plane kernels stream each plane once per tap from L1/L2.
// fp32 only (fp64 takes the GEMM algorithms); no scratch for fp32 inputs.
#include "conv/algorithms/algo_support.h"
#include "conv/engine/algorithms.h"
#include "conv/kernels/depthwise/depthwise.h"

namespace aclnn_cpu::conv {
namespace {

Fit plan(const Problem& p) {
  Fit f;
  if (p.fp64) {
    f.reason = "fp32 only";
  } else if (!use_depthwise(p.g)) {
    f.reason = "needs one input channel per group";
  } else {
    // With many output channels per group the GEMM lowerings win: MNIST's first layer (1 -> 32,
    // 5x5, 28x28) runs faster on implicit_gemm + col2im_gemm (measured: bench/RESULTS.md, design
    // depthwise.many-outputs).
    f.applies = true;
    f.preferred = depthwise_preferred(p.g);
    f.reason = f.preferred ? "one input channel per group"
                           : "more than 8 output channels per group: GEMMs are faster";
    if (p.converts) {  // a plane (or a group's planes) per thread, the weights once
      f.b.slot_elems = depthwise_slot_elems(p.g);
      f.b.shared_elems = p.g.C_out * p.g.k_size();
    }
  }
  return f;
}

// The inputs as read: fp32 in place, or converted plane by plane into the slots (weights: into
// the shared scratch, once).
DwInput input(const Problem& p, const Blocking& b, const Operands<float>& o, const Source& src,
              int64_t slot_offset) {
  DwInput in;
  if (src.kind == SrcKind::kF32) {
    in.f32 = static_cast<const float*>(src.data);
  } else {
    in.src = src, in.slots = o.slots + slot_offset, in.slot_elems = slot_stride<float>(b);
    in.nslots = p.slots;
  }
  return in;
}
const float* weights(const Problem& p, const Operands<float>& o) {
  if (o.wsrc.kind == SrcKind::kF32) return static_cast<const float*>(o.wsrc.data);
  o.wsrc.convert(p.g.C_out * p.g.k_size(), 1, o.shared);
  return o.shared;
}

void forward(const Problem& p, const Blocking& b, const Operands<float>& o) {
  depthwise_forward(p.g, input(p, b, o, o.xsrc, 0), weights(p, o), o.out);
}
void backward_data(const Problem& p, const Blocking& b, const Operands<float>& o) {
  depthwise_backward_data(p.g, input(p, b, o, o.ysrc, 0), weights(p, o), o.out);
}
void backward_weight(const Problem& p, const Blocking& b, const Operands<float>& o) {
  depthwise_backward_weight(p.g, input(p, b, o, o.xsrc, p.g.out_size()), input(p, b, o, o.ysrc, 0),
                            o.out);
}

}  // namespace

// run_f32 reads the inputs as stored (reads_sources): fp32 in place, other dtypes converted a
// plane at a time by the task that reads it (no whole-tensor fp32 copies).
const Algorithm kDepthwiseForward{
    "depthwise_direct",    Primitive::kForward, plan, forward, nullptr, nullptr,
    /*reads_sources=*/true};
const Algorithm kDepthwiseData{
    "depthwise_direct",    Primitive::kBackwardData, plan, backward_data, nullptr, nullptr,
    /*reads_sources=*/true};
const Algorithm kDepthwiseWeight{
    "depthwise_direct",    Primitive::kBackwardWeight, plan, backward_weight, nullptr, nullptr,
    /*reads_sources=*/true};

}  // namespace aclnn_cpu::conv
