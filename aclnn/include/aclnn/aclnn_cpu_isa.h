/* CPU-only introspection of libaclnn (not part of CANN; nothing here changes a computation): what
 * the kernels may use in this process. libaclnn reads the CPU once (CPUID, the register state the
 * OS enables, and on Linux the AMX tile-data permission), narrows it by the caps below, and picks
 * between kernels by named policies. Tests and tools ask here instead of repeating that logic.
 *
 * Caps and switches, read once per process:
 *   ACLNN_CPU_MAX_ISA=none|avx2|avx512|avx512_bf16|amx  the widest tier the kernels may use
 *                                                       (other values are ignored)
 *   ACLNN_CPU_NO_AVX512=1                               the same as ACLNN_CPU_MAX_ISA=avx2
 *   ACLNN_CPU_BF16_DOT=0|1                              forces the "bf16_dot" policy
 *   ACLNN_CPU_BF16_AMX=0|1                              forces the "bf16_amx" policy
 *   ACLNN_CPU_BCAST_REG=0|1                             forces the "bcast_reg" policy
 *
 * Tiers, each including the ones before: "none" (portable C++ and OpenBLAS), "avx2" (AVX2 + FMA +
 * F16C), "avx512" (+ AVX-512 F/BW/VL/DQ), "avx512_bf16" (+ AVX512_BF16), "amx" (+ AMX tiles and
 * bf16 tile products). Feature names are Linux's: "avx2", "fma", "f16c", "avx512f", "avx512bw",
 * "avx512vl", "avx512dq", "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16". Policies:
 * "bf16_dot" (bf16 inputs read by the AVX512_BF16 dot kernels rather than converted to fp32; on
 * for AMD by default), "bf16_amx" (bf16 inputs of the matrix-product convolutions multiplied on
 * the AMX tiles; on wherever AMX is usable, and taken before the dot kernels), "bcast_reg" (the
 * fp32 AVX-512 row kernels broadcast each source column into a register once rather than in every
 * multiply-add; on but for AMD Zen 4). */
#ifndef ACLNN_ACLNN_CPU_ISA_H_
#define ACLNN_ACLNN_CPU_ISA_H_

#include "acl/acl_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The tier in force: the widest whose features this CPU and OS offer, within the cap. */
ACL_FUNC_VISIBILITY const char* aclnnCpuIsa(void);
/* The tier this CPU and OS offer before any cap (ACLNN_CPU_MAX_ISA narrows aclnnCpuIsa from it). */
ACL_FUNC_VISIBILITY const char* aclnnCpuIsaUncapped(void);
/* 1 when the kernels of tier `name` may run (the tier in force is `name` or wider), 0 when not,
 * -1 when `name` is not a tier. */
ACL_FUNC_VISIBILITY int aclnnCpuIsaRuns(const char* name);
/* 1 when feature `name` is usable (the CPU has it, the OS enables it, the cap allows it), 0 when
 * not, -1 when `name` is not a feature libaclnn knows. */
ACL_FUNC_VISIBILITY int aclnnCpuHasFeature(const char* name);
/* 1 when policy `name` is in force, 0 when not, -1 when `name` is not a policy. */
ACL_FUNC_VISIBILITY int aclnnCpuPolicy(const char* name);
/* One line naming the tier, the cap, the CPU (vendor, family, model), the usable features and each
 * policy with its reason; valid for the life of the process. */
ACL_FUNC_VISIBILITY const char* aclnnCpuDescribe(void);

#ifdef __cplusplus
}
#endif

#endif /* ACLNN_ACLNN_CPU_ISA_H_ */
