/* CPU-only extensions of libaclnn: behaviour no Ascend chip has, off by default.
 *
 * By default libaclnn behaves like the SoC chosen with ACLNN_CPU_SOC (Ascend910B unless set): what
 * that chip's documentation rejects, libaclnn rejects with the same status code. A caller that
 * wants more than a chip offers turns an extension on here. The setting belongs to the calling
 * thread and is read by phase 1 (...GetWorkspaceSize) of the convolution APIs, so code written for
 * CANN, which never calls these functions, always sees the emulated chip; a framework enables the
 * extensions around its own calls only (aclgrad's ops/ does so for every call it makes).
 *
 *   ACLNN_CPU_EXT_DOUBLE  DOUBLE (ACL_DOUBLE) gradOutput/input/weight/bias and outputs for
 *                         aclnnConvolution[Backward] and aclnnConvTbc[Backward], computed in double
 *                         (cubeMathType has no effect on them). Meant for gradient checking.
 *   ACLNN_CPU_EXT_STRIDED_OUTPUTS
 *                         Non-contiguous (strided, permuted, offset) gradInput/gradWeight/gradBias
 *                         for aclnnConvolutionBackward and aclnnConvTbcBackward, which the chips'
 *                         documents refuse; the results are written through the strides. Meant for
 *                         writing into views of larger buffers.
 *
 * aclnn/CONFORMANCE.md lists every documented rule and every extension. */
#ifndef ACLNN_ACLNN_CPU_EXTENSIONS_H_
#define ACLNN_ACLNN_CPU_EXTENSIONS_H_

#include <stdint.h>

#include "acl/acl_base.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ACLNN_CPU_EXT_NONE 0u
#define ACLNN_CPU_EXT_DOUBLE 1u
#define ACLNN_CPU_EXT_STRIDED_OUTPUTS 2u
#define ACLNN_CPU_EXT_ALL (ACLNN_CPU_EXT_DOUBLE | ACLNN_CPU_EXT_STRIDED_OUTPUTS)

/* Enables exactly the extensions in `extensions` (a bitwise or of ACLNN_CPU_EXT_*; unknown bits are
 * ignored) for calls made on the calling thread. Returns the previous set, so a caller can restore
 * it: `uint32_t old = aclnnCpuSetExtensions(ACLNN_CPU_EXT_DOUBLE); ...;
 * aclnnCpuSetExtensions(old);` */
ACL_FUNC_VISIBILITY uint32_t aclnnCpuSetExtensions(uint32_t extensions);
/* The extensions enabled on the calling thread (ACLNN_CPU_EXT_NONE unless set). */
ACL_FUNC_VISIBILITY uint32_t aclnnCpuGetExtensions(void);

#ifdef __cplusplus
}
#endif

#endif /* ACLNN_ACLNN_CPU_EXTENSIONS_H_ */
