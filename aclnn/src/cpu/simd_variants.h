// ACLNN_SIMD_VARIANTS(ret, name, params, args) defines `ret name params` from the inline function
// `name##_body` (same parameters), compiled three times: for AVX-512F, for AVX2 and for baseline
// x86-64. The body is inlined into each variant, so its plain C++ loops vectorise to that width;
// `name` calls the variant the tier in force allows (cpu::pick_variant, decided on the first call),
// so ACLNN_CPU_MAX_ISA reaches these functions too (GCC's target_clones would pick by the CPU
// alone, through an ifunc that no cap reaches and that ThreadSanitizer cannot run).
//
// None of the targets enables FMA, so no variant contracts a * b + c, and every variant rounds
// exactly as the baseline does. Put only plain C++ in a body (no library templates), so that
// nothing compiled for AVX-512 leaks into generic code through a shared template instance.
#pragma once

#include "cpu/cpu.h"

#define ACLNN_SIMD_VARIANTS(ret, name, params, args)                                    \
  __attribute__((target("avx512f"))) static ret name##_avx512 params {                  \
    return name##_body args;                                                            \
  }                                                                                     \
  __attribute__((target("avx2"))) static ret name##_avx2 params {                       \
    return name##_body args;                                                            \
  }                                                                                     \
  static ret name##_baseline params {                                                   \
    return name##_body args;                                                            \
  }                                                                                     \
  ret name params {                                                                     \
    static ret(*const variant) params =                                                 \
        ::aclnn_cpu::cpu::pick_variant(&name##_avx512, &name##_avx2, &name##_baseline); \
    return variant args;                                                                \
  }
