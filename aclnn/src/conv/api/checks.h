// Phase-1 argument checks shared by the convolution APIs: SoC profile, null/dtype/format/layout
// checks of single tensors, dtype promotion and cubeMathType. Every check throws ApiError with a
// message naming the parameter, its value and the rule (the API name is prefixed by guard_aclnn).
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "aclnn/aclnn_base.h"
#include "conv/engine/strided.h"
#include "error.h"
#include "meta.h"

namespace aclnn_cpu::conv {

// The SoC whose documented behaviour is emulated, chosen by env ACLNN_CPU_SOC at every phase 1:
// Ascend910B (default) and Ascend910_93 = the Atlas A2/A3 column of the spec, Ascend910_95 its own
// column, Ascend910 / Ascend310P = the Atlas training / inference series. Plus the CPU-only
// extensions the calling thread enabled (aclnn/aclnn_cpu_extensions.h).
struct SocProfile {
  const char* name = "Ascend910B";
  bool a2 = true;             // Ascend910B / Ascend910_93: A2/A3 limits on regular convolutions
  bool is_910_95 = false;     // Ascend910_95: limits on transposed convolutions, 8-bit dtypes
  bool old_series = false;    // Ascend910 / Ascend310P
  bool bf16 = true;           // BF16 tensors accepted
  bool conv3d = true;         // 3-d convolutions accepted
  bool empty_tensors = true;  // N = 0 / C = 0 tensors accepted
  bool ext_double = false;    // CPU-only extension ACLNN_CPU_EXT_DOUBLE enabled on this thread
  bool ext_strided_outputs = false;  // ... and ACLNN_CPU_EXT_STRIDED_OUTPUTS
};
// The profile of ACLNN_CPU_SOC. 161002 for a name that is no SoC, and for the processors 002's
// product table marks unsupported (Ascend310B, Ascend310): "the current processor does not
// support" `api`.
SocProfile current_soc(const char* api = "the convolution APIs");

// 161001 "<name> is null" unless p is set.
void require(const void* p, const char* name);
void require(const void* p, const std::string& name);
// The meta objects must also be live: not destroyed, and of their own kind (handles.h).
void require(const aclTensor* t, const char* name);
void require(const aclIntArray* a, const char* name);
void require(const aclBoolArray* a, const char* name);

// dtype in {FLOAT, FLOAT16, BFLOAT16 (if the SoC has it)}, or DOUBLE with ACLNN_CPU_EXT_DOUBLE.
void check_dtype(const char* name, const aclTensor* t, const SocProfile& soc);
// out has src's dtype ("<out> must have the dtype of <src>").
void check_same_dtype(const char* out_name, const aclTensor* out, const char* src_name,
                      const aclTensor* src);
// f16+f32 -> f32, bf16+f16 -> f32, anything+double -> double, equal -> itself.
aclDataType promote(aclDataType a, aclDataType b);
bool is_8bit_float(aclDataType d);  // HIFLOAT8, FLOAT8_E5M2, FLOAT8_E4M3FN

// Format of a convolution activation/weight: 3-d NCL, 4-d NCHW, 5-d NCDHW.
void check_conv_format(const char* name, const aclTensor* t);
// Format is one of `allowed`.
void check_format(const char* name, const aclTensor* t, std::initializer_list<aclFormat> allowed);
// out has src's format ("<out> must have the format of <src>").
void check_same_format(const char* out_name, const aclTensor* out, const char* src_name,
                       const aclTensor* src);

// The view is sane: dims >= 0 and below 2^31, element and byte counts fit int64, strides >= 0,
// offset >= 0, every reachable element inside the storage, and a non-null data pointer when the
// view has elements (161002 otherwise). Outputs must in addition not overlap themselves.
void check_layout(const char* name, const aclTensor* t, bool is_output);

// An output the documents mark "non-contiguous: no" (002, 003): its strides must be the row-major
// ones of its shape (the strides of size-1 dims are free, the offset is free, an empty view is
// contiguous), unless ACLNN_CPU_EXT_STRIDED_OUTPUTS is enabled. Call after check_layout.
void check_contiguous_output(const char* name, const aclTensor* t, const SocProfile& soc);

// Validates cubeMathType for the promoted compute dtype and returns the operand rounding.
// hf32_float_only: USE_HF32 (3) is rejected for FLOAT16/BFLOAT16 (aclnnConvTbcBackward's rule).
Round check_cube_math(int8_t cube_math_type, aclDataType promoted, const SocProfile& soc,
                      bool hf32_float_only = false);

// A 5-d view of `t`: view dim i is tensor axis axes[i], or a unit dim when axes[i] < 0.
View5 make_view(const aclTensor* t, std::array<int, 5> axes);
// Rank-3/4/5 convolution tensor as [N, C, D, H, W] (1d: D = H = 1, 2d: D = 1).
View5 conv_view(const aclTensor* t);
// 1-d tensor [C] as [1, C, 1, 1, 1].
View5 channel_view(const aclTensor* t);

const char* dtype_str(aclDataType d);    // "FLOAT16", also for the 8-bit types
ShapeText shape_of(const aclTensor* t);  // "[2, 3, 5]", formatted only when streamed

}  // namespace aclnn_cpu::conv
