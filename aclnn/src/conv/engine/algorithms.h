// The registered convolution algorithms of one primitive (each defined in its
// conv/algorithms/algo_*.cpp); planner.cpp lists them per primitive in order of preference. The
// algorithms of several primitives (the time-major forms, the fused depthwise pass) are declared
// in job_algorithm.h.
#pragma once

#include "conv/engine/algorithm.h"

namespace aclnn_cpu::conv {

// bf16 on the AMX tiles (algo_amx_gemm.cpp), first in every list where the bf16_amx policy is on
extern const Algorithm kAmxGemmForward;
extern const Algorithm kAmxGemmData;
extern const Algorithm kAmxGemmWeight;

// forward
extern const Algorithm kDepthwiseForward;      // algo_depthwise.cpp
extern const Algorithm kPointwiseForward;      // algo_pointwise.cpp
extern const Algorithm kStridedDirectForward;  // algo_strided_direct.cpp
extern const Algorithm kClDirectForward;       // algo_cl_direct.cpp
extern const Algorithm kGridDirectForward;     // algo_grid_direct.cpp
extern const Algorithm kGridGemmForward;       // algo_grid_gemm.cpp
extern const Algorithm kImplicitGemmForward;   // algo_implicit_gemm.cpp
extern const Algorithm kIm2colGemmForward;     // algo_im2col_gemm.cpp

// backward_data
extern const Algorithm kDepthwiseData;
extern const Algorithm kPointwiseData;
extern const Algorithm kClDirectData;
extern const Algorithm kClDirectBf16Data;  // algo_cl_direct_bf16.cpp: bf16 inputs only
extern const Algorithm kGridDirectData;
extern const Algorithm kFlipGridGemmData;  // algo_flipped.cpp: forward algorithms on the
                                           // flipped geometry (unit stride)
extern const Algorithm kFlipImplicitGemmData;
extern const Algorithm kFlipIm2colGemmData;
extern const Algorithm kCol2imGemmData;  // algo_col2im_gemm.cpp

// backward_weight
extern const Algorithm kDepthwiseWeight;
extern const Algorithm kPointwiseWeight;
extern const Algorithm kStridedDirectWeight;  // algo_strided_direct.cpp
extern const Algorithm kGridDirectWeight;
extern const Algorithm kGridGemmWeight;
extern const Algorithm kImplicitGemmWeight;
extern const Algorithm kIm2colGemmWeight;

}  // namespace aclnn_cpu::conv
