/* CPU-only diagnostics of libaclnn's convolution engine (not part of CANN; nothing here changes a
 * computation). The engine picks one named algorithm per primitive in phase 1; two environment
 * variables, read at every phase 1, expose that choice:
 *
 *   ACLNN_CPU_VERBOSE=1                one line per primitive on stderr at phase 1
 *                                      ("aclnn_cpu_verbose,plan,<api>,<primitive>,<algorithm>,
 *                                      <geometry>,threads=..,workspace=..,isa=..,bf16_dot=..,
 *                                      amx=..,blocking=..,<reason>") and at
 *                                      phase 2
 *                                      ("aclnn_cpu_verbose,exec,<api>,<primitive>,<algorithm>,<ms>")
 *   ACLNN_CPU_CONV_ALGO=name[,name..]  forces the named algorithms wherever they can compute the
 *                                      problem (cost rules lifted), e.g. to test or compare them
 *
 * The plan line's "isa=" is the tier in force, "bf16_dot=" and "amx=" the bf16 policies: what the
 * CPU offers within the caps ACLNN_CPU_MAX_ISA, ACLNN_CPU_BF16_DOT and ACLNN_CPU_BF16_AMX
 * (aclnn/aclnn_cpu_isa.h). "amx=model" marks the test library libaclnn_amx_model, whose AMX
 * kernels run on a software model of the tiles.
 *
 * The functions below list every registered algorithm: those of one primitive, then those of
 * several at once ("tbc_gemm", "tbc_amx", "tbc_bf16", "tbc_convert": the time-major 1-d forms of
 * ConvTbc, which serve all three primitives; "depthwise_fused": both gradients of a depthwise
 * convolution in one pass over dy). Each can be forced by its name. */
#ifndef ACLNN_ACLNN_CPU_CONV_H_
#define ACLNN_ACLNN_CPU_CONV_H_

#include "acl/acl_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Number of registered convolution algorithms. */
ACL_FUNC_VISIBILITY int aclnnCpuConvAlgorithmCount(void);
/* Name of algorithm `index` (0 <= index < count), e.g. "grid_direct"; NULL out of range. */
ACL_FUNC_VISIBILITY const char* aclnnCpuConvAlgorithmName(int index);
/* 1 when algorithm `index` can run on this CPU (some need AVX2 + FMA or AVX-512, within
 * ACLNN_CPU_MAX_ISA: aclnn/aclnn_cpu_isa.h), else 0 (also out of range). Elsewhere it never
 * applies, even when forced. */
ACL_FUNC_VISIBILITY int aclnnCpuConvAlgorithmRunsHere(int index);
/* Its primitive: "forward", "backward_data", "backward_weight", "all" (the tbc_* forms: every
 * requested primitive) or "backward" (depthwise_fused: backward_data and backward_weight in one
 * run, on the plan lines of both); NULL out of range. */
ACL_FUNC_VISIBILITY const char* aclnnCpuConvAlgorithmPrimitive(int index);
/* Where the AMX kernels (bf16 on the tiles: algorithm "amx_gemm") run: 0 nowhere (no AMX within
 * the caps, or the bf16_amx policy off), 1 on this CPU's tiles, 2 on the software model of the
 * tiles (only the test library libaclnn_amx_model). */
ACL_FUNC_VISIBILITY int aclnnCpuConvAmxTiles(void);

#ifdef __cplusplus
}
#endif

#endif /* ACLNN_ACLNN_CPU_CONV_H_ */
