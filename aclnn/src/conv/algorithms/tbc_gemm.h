// The fast paths for 1-d convolutions stored time-major ("TBC": activations [T, B, C] with C
// contiguous, as aclnnConvTbc / aclnnConvTbcBackward pass them), stride 1, dilation 1, 1 group.
// No im2col and no whole-tensor copies: each kernel tap k is one GEMM on row ranges of the
// [T*B, C] matrices the caller's buffers already are (row r = t*B + b), with the weight tap
// W_k = w[:, :, k] as a [C_in, C_out] matrix:
//
//   forward          Y[r]   = bias + sum_k X[r + (k - pad) B] . W_k
//   backward_data    dX[r]  = sum_k dY[r + (pad - k) B] . W_k^T    (+ bias: the transposed forward)
//   backward_weight  dW_k   = sum_r X[r + (k - pad) B]^T . dY[r]   (over the rows where both exist)
//
// A row shifted outside [0, T*B) is a time step in the padding: it contributes nothing. Four
// named forms (registered JobAlgorithms, job_algorithm.h), one per way of reading the operands:
//   tbc_gemm     fp32 views as they are (USE_FP16: rounded as our sgemm packs them): our sgemm
//                on the caller's rows (tbc_gemm.cpp).
//   tbc_amx      bf16 views on the AMX tiles (tbc_amx.cpp), fp32 accumulation: forward and data
//                one tile GEMM per task of rows with the taps concatenated along the reduction,
//                the weight gradient accumulating tile GEMMs of X^T and dY per chunk of rows.
//   tbc_bf16     bf16 views with the AVX512_BF16 pair kernels (tbc_bf16.cpp), fp32 accumulation.
//   tbc_convert  any float dtype or cubeMathType rounding: each task converts the rows it reads
//                into fp32 panels of its scratch slot and runs our sgemm on them
//                (tbc_convert.cpp); no whole-tensor copy.
//
// Threading: forward / backward-data tasks own disjoint row ranges of the output (all taps in tap
// order); weight-gradient tasks own a C_out block (every tap) with the whole reduction inside, in
// row order. So results are deterministic and no partial buffers are needed.
#pragma once

#include <cstdint>

#include "conv/engine/algorithm.h"
#include "conv/engine/engine.h"
#include "conv/engine/job_algorithm.h"

namespace aclnn_cpu::conv {

// The four forms are registered JobAlgorithms of scope kAll (algo_tbc.cpp: when each applies
// and is preferred); these are their bodies.
//
// Scratch of one run (JobScratch): `shared` bytes for all tasks (packed weights, bias) and `slot`
// bytes per thread slot (64-byte multiples), the largest over the requested primitives.
using TbcScratch = JobScratch;

// tbc_gemm (tbc_gemm.cpp): its scratch (none without our packed GEMM: `own_gemm` false), and
// primitive `prim` of `job` (its out_y, out_x or out_w, which the job must ask for), inside the
// executor's task arena of `slots` threads; `scratch` holds shared + slots * slot bytes (64-byte
// aligned), or is null when both are 0 (OpenBLAS GEMMs). With `bias_out`, the weight gradient
// also writes the bias gradient there (C_out floats).
TbcScratch tbc_gemm_scratch(const ConvJob& job, bool own_gemm);
void tbc_run_gemm(const ConvJob& job, const TbcScratch& s, Primitive prim, int slots, char* scratch,
                  float* bias_out);
// tbc_amx (tbc_amx.cpp), tbc_bf16 (tbc_bf16.cpp) and tbc_convert (tbc_convert.cpp), the same way.
TbcScratch tbc_amx_scratch(const ConvJob& job, int slots);
void tbc_run_amx(const ConvJob& job, const TbcScratch& s, Primitive prim, int slots, char* scratch,
                 float* bias_out);
TbcScratch tbc_bf16_scratch(const ConvJob& job, int slots);
void tbc_run_bf16(const ConvJob& job, const TbcScratch& s, Primitive prim, int slots, char* scratch,
                  float* bias_out);
TbcScratch tbc_convert_scratch(const ConvJob& job, int slots);
void tbc_run_convert(const ConvJob& job, const TbcScratch& s, Primitive prim, int slots,
                     char* scratch, float* bias_out);

}  // namespace aclnn_cpu::conv
