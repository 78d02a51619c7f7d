/* aclnnConvolutionBackward and aclnnConvTbcBackward: CANN-compatible convolution gradients computed
 * on the CPU. Two-phase API: phase 1 (...GetWorkspaceSize) validates every argument, plans the
 * computation and reports the workspace it needs; phase 2 runs it using only that workspace.
 * Failures return 161001 (null argument), 161002 (invalid argument) or 561103 (internal check) and
 * set aclGetRecentErrMsg() to a message naming the API, the parameter, its value and the rule. */
#ifndef ACLNNOP_ACLNN_CONVOLUTION_BACKWARD_H_
#define ACLNNOP_ACLNN_CONVOLUTION_BACKWARD_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Gradients of y = conv(input, weight) + bias (or its transposed form) given gradOutput = dL/dy.
 * 1d (NCL), 2d (NCHW) and 3d (NCDHW). outputMask[3] selects gradInput, gradWeight, gradBias;
 * gradInput and gradWeight are never null (161001), gradBias may be null when outputMask[2] is
 * false; a masked-out output is validated but left untouched. Each output has its source's dtype
 * (gradInput: input's, gradWeight: weight's, gradBias: gradOutput's). padding has dim-2 entries, or
 * 4 in 2d ([top, bottom, left, right]). Dtypes: FLOAT, FLOAT16, BF16 (fp32 accumulation; BF16 not
 * on Ascend910/Ascend310P); DOUBLE only with the CPU-only extension of aclnn_cpu_extensions.h.
 * aclnn/CONFORMANCE.md lists every rule per SoC. */
ACL_FUNC_VISIBILITY aclnnStatus aclnnConvolutionBackwardGetWorkspaceSize(
    const aclTensor* gradOutput, const aclTensor* input, const aclTensor* weight,
    const aclIntArray* biasSizes, const aclIntArray* stride, const aclIntArray* padding,
    const aclIntArray* dilation, bool transposed, const aclIntArray* outputPadding, int groups,
    const aclBoolArray* outputMask, int8_t cubeMathType, aclTensor* gradInput,
    aclTensor* gradWeight, aclTensor* gradBias, uint64_t* workspaceSize, aclOpExecutor** executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnConvolutionBackward(void* workspace, uint64_t workspaceSize,
                                                         aclOpExecutor* executor,
                                                         const aclrtStream stream);

/* Gradients of the temporal convolution conv_tbc: self = gradOutput [T_out, B, C_out],
 * input [T, B, C_in], weight [K, C_in, C_out], bias [C_out], T_out = T + 2*pad + 1 - K,
 * pad in [0, 255]. All three outputs are computed, each in its source's dtype. Documented for
 * Atlas A2/A3 only (Ascend910B, Ascend910_93); cubeMathType 3 only for FLOAT. */
ACL_FUNC_VISIBILITY aclnnStatus aclnnConvTbcBackwardGetWorkspaceSize(
    const aclTensor* self, const aclTensor* input, const aclTensor* weight, const aclTensor* bias,
    int64_t pad, int8_t cubeMathType, aclTensor* gradInput, aclTensor* gradWeight,
    aclTensor* gradBias, uint64_t* workspaceSize, aclOpExecutor** executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnConvTbcBackward(void* workspace, uint64_t workspaceSize,
                                                     aclOpExecutor* executor,
                                                     const aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* ACLNNOP_ACLNN_CONVOLUTION_BACKWARD_H_ */
