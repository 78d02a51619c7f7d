// pointwise_gemm's bf16 form (algo_pointwise_bf16.cpp): the three 1x1 GEMMs on bf16 bits with the
// AVX512_BF16 dot kernels, fp32 accumulation (run only where bf16_dot_kernels()).
#pragma once

#include "conv/engine/algorithm.h"

namespace aclnn_cpu::conv::pointwise_bf16 {

inline constexpr int64_t kWeightChannels = 256;  // weight gradient: most input channels per task

// The blocking of the bf16 runs: column chunks and the packed weights (forward, data); the
// per-slot tiles of a weight task whose b.cblock is set already (weight).
void plan_forward(const Problem& p, Blocking& b);
void plan_data(const Problem& p, Blocking& b);
void plan_weight(const Problem& p, Blocking& b);

void forward(const Problem& p, const Blocking& b, const Operands<float>& o);
void backward_data(const Problem& p, const Blocking& b, const Operands<float>& o);
void backward_weight(const Problem& p, const Blocking& b, const Operands<float>& o);

}  // namespace aclnn_cpu::conv::pointwise_bf16
