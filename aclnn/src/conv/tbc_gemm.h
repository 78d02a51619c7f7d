// The fp32 fast path for 1-d convolutions stored time-major ("TBC": activations [T, B, C] with C
// contiguous, as aclnnConvTbc / aclnnConvTbcBackward pass them), stride 1, dilation 1, 1 group.
// No im2col and no packing copies of the operands: each kernel tap k is one GEMM on row ranges of
// the [T*B, C] matrices the caller's buffers already are (row r = t*B + b), with the weight tap
// W_k = w[:, :, k] as a strided [C_in, C_out] view:
//
//   forward          Y[t]        = bias + sum_k X[t + k - pad] . W_k          (rows of B each)
//   backward_data    dX[t']      = sum_k dY[t' - k + pad] . W_k^T   (+ bias: the transposed
//   forward) backward_weight  dW_k        = sum_t X[t + k - pad]^T . dY[t]             (one GEMM
//   per tap,
//                                  reducing over all T*B rows)
//
// Threading: forward / backward-data tasks own disjoint time ranges of the output (all taps in tap
// order); weight-gradient tasks own (tap, C_in block) pairs with the whole reduction inside. So
// results are deterministic and no partial buffers are needed; each task's GEMM runs on its
// thread's packing slot.
#pragma once

#include <cstdint>

#include "conv/algorithm.h"
#include "conv/engine.h"

namespace aclnn_cpu::conv {

// Whether `job` (fp32, exact) can run on the TBC path: geometry and every view qualify.
bool tbc_applicable(const ConvJob& job);

// Runs primitive `prim` of `job` (its out_y, out_x or out_w, which the job must ask for; not the
// bias gradient). Must run inside the executor's task arena of `slots` threads; `pack`
// holds slots * pack_elems floats (gemm/sgemm.h scratch), or is null to use OpenBLAS.
void tbc_run(const ConvJob& job, Primitive prim, int slots, int64_t pack_elems, float* pack);

}  // namespace aclnn_cpu::conv
