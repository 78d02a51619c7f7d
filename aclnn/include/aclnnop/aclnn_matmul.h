/* aclnnMatmul: out = self @ mat2 with torch.matmul's shape rules, the same prototype and
 * semantics as CANN's aclnnMatmul (aclnnop/aclnn_matmul.h), computed on the CPU.
 *
 *   self [..., m, k] (or [k]), mat2 [..., k, n] (or [k]), 1 to 6 dims each, batch dims
 *   broadcast; a 1-d self is read as [1, k] and a 1-d mat2 as [k, 1], and that dim is absent from
 *   out. Dtypes FLOAT, FLOAT16, BFLOAT16 (A2/A3 profiles); FLOAT16 with FLOAT promotes to FLOAT,
 *   BFLOAT16 mixes with nothing. out has the promoted dtype (or FLOAT where it is FLOAT16).
 *   Products are accumulated in fp32 and out is rounded once. cubeMathType as for the
 *   convolutions: 0 KEEP_DTYPE, 1 ALLOW_FP32_DOWN_PRECISION and 3 USE_HF32 (FLOAT operands
 *   rounded to HF32; 3 only for FLOAT), 2 USE_FP16 (FLOAT operands rounded to fp16; not with
 *   BFLOAT16); it has no effect when both inputs are 1-d. Any strides and offsets are read in
 *   place. */
#ifndef ACLNNOP_ACLNN_MATMUL_H_
#define ACLNNOP_ACLNN_MATMUL_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnMatmulGetWorkspaceSize(const aclTensor* self,
                                                            const aclTensor* mat2, aclTensor* out,
                                                            int8_t cubeMathType,
                                                            uint64_t* workspaceSize,
                                                            aclOpExecutor** executor);

ACL_FUNC_VISIBILITY aclnnStatus aclnnMatmul(void* workspace, uint64_t workspaceSize,
                                            aclOpExecutor* executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* ACLNNOP_ACLNN_MATMUL_H_ */
