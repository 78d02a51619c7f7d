// depthwise_fused: both gradients of a convolution with one input channel per group as one pass
// over dy (depthwise.h, depthwise_backward): per (sample, channel) each dy plane is read once for
// dx, dw and gradBias, on the inputs as stored (16-bit planes converted into the thread's slot),
// dx written straight into its view. A JobAlgorithm of scope kBackward (job_algorithm.h): it
// replaces the runs of the backward_data and backward_weight choices, and is preferred exactly
// where those are both depthwise_direct (the two passes it fuses).
#include "conv/engine/algorithms.h"
#include "conv/engine/job_algorithm.h"
#include "conv/kernels/depthwise/depthwise.h"

namespace aclnn_cpu::conv {
namespace {

JobFit plan(const JobProblem& jp) {
  JobFit f;
  const ConvJob& j = *jp.job;
  const Problem& p = jp.problem;
  if (p.fp64) {
    f.reason = "fp32 only";
  } else if (!j.out_x || !j.out_w || j.out_x->numel() == 0 || j.out_w->numel() == 0) {
    f.reason = "needs both gradients (non-empty)";
  } else if (!depthwise_fuses(j.g)) {
    f.reason = "needs one input channel per group and at most 128 weights per group";
  } else if (j.bias && j.bias->numel() > 0) {
    f.reason = "no bias to add to dx";  // (a transposed convolution's forward bias)
  } else {
    f.applies = true;
    f.preferred = jp.data && jp.weight && jp.data->algo == &kDepthwiseData &&
                  jp.weight->algo == &kDepthwiseWeight;
    f.reason = f.preferred ? "depthwise_direct for both gradients: one pass over dy"
                           : "the gradients' choices are not both depthwise_direct";
    // In bytes: the weights converted once, and per slot a group's dy planes, an x and a dx plane
    // (none for dense fp32 in and out).
    f.scratch.shared = depthwise_fused_scratch(j.g, p.slots, p.converts, *j.out_x) *
                       static_cast<int64_t>(sizeof(float));
  }
  return f;
}

// gradBias (into o.bias) is summed from the dy planes as they are read where they are exact.
bool run(const ConvJob& j, const Problem& p, const JobFit&, Primitive, const JobOperands& o) {
  float* db =
      o.bias && j.bias_sum_of == ConvJob::BiasOf::kY && depthwise_sums_bias(o.y) ? o.bias : nullptr;
  depthwise_backward(
      j.g, {o.x, o.y, o.w, &*j.out_x, o.dw, db, reinterpret_cast<float*>(o.scratch), p.slots});
  return db != nullptr;
}

}  // namespace

// (per-channel-tasks: task c walks the batch, so dw needs no partial sums)
const JobAlgorithm kDepthwiseFused{"depthwise_fused",     JobScope::kBackward, plan, run,
                                   "per-channel-tasks",
                                   /*needs=*/{},
                                   /*bf16_only=*/false,
                                   /*reads_sources=*/true};

}  // namespace aclnn_cpu::conv
