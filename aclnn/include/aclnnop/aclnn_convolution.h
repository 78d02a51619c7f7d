/* aclnnConvolution and aclnnConvTbc: the forward convolutions, same conventions as CANN's
 * aclnnConvolution / aclnnConvTbc, computed on the CPU by the same engine as the backward APIs. */
#ifndef ACLNNOP_ACLNN_CONVOLUTION_H_
#define ACLNNOP_ACLNN_CONVOLUTION_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* output = conv(input, weight) + bias (transposed when `transposed`); bias may be null.
 * 1d/2d/3d, same parameter rules as aclnnConvolutionBackward. */
ACL_FUNC_VISIBILITY aclnnStatus aclnnConvolutionGetWorkspaceSize(
    const aclTensor* input, const aclTensor* weight, const aclTensor* bias,
    const aclIntArray* stride, const aclIntArray* padding, const aclIntArray* dilation,
    bool transposed, const aclIntArray* outputPadding, const int64_t groups, aclTensor* output,
    int8_t cubeMathType, uint64_t* workspaceSize, aclOpExecutor** executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnConvolution(void* workspace, uint64_t workspaceSize,
                                                 aclOpExecutor* executor, const aclrtStream stream);

/* self [T, B, C_in], weight [K, C_in, C_out], bias [C_out] -> output [T + 2*pad + 1 - K, B, C_out].
 */
ACL_FUNC_VISIBILITY aclnnStatus aclnnConvTbcGetWorkspaceSize(
    const aclTensor* self, const aclTensor* weight, const aclTensor* bias, const int64_t pad,
    aclTensor* output, int8_t cubeMathType, uint64_t* workspaceSize, aclOpExecutor** executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnConvTbc(void* workspace, uint64_t workspaceSize,
                                             aclOpExecutor* executor, const aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* ACLNNOP_ACLNN_CONVOLUTION_H_ */
