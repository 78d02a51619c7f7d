// ACLGRAD_SIMD_VARIANTS(ret, name, params, args) defines the plain function `ret name params` over
// the always-inline template `name<float>`, compiled three times (AVX-512F, AVX2, baseline x86-64)
// and picked on the first call by what libaclnn says may run here (aclnnCpuHasFeature: the CPU,
// the OS and ACLNN_CPU_MAX_ISA), so one cap narrows the whole process, as libaclnn's own
// cpu/simd_variants.h does inside it. Callers name no type: overload resolution prefers the plain
// function for float and takes the template for every other type.
//
// GCC's avx512f target includes the FMA instructions, so a file using these variants is compiled
// with -ffp-contract=off (ops/CMakeLists.txt): no variant contracts a * b + c, and every variant
// rounds exactly as the baseline does.
#pragma once

#include "aclnn/aclnn_cpu_isa.h"

namespace aclgrad::ops::detail {

template <typename Fn>
Fn pick_simd_variant(Fn avx512, Fn avx2, Fn baseline) {
  if (aclnnCpuHasFeature("avx512f") == 1) return avx512;
  if (aclnnCpuHasFeature("avx2") == 1) return avx2;
  return baseline;
}

}  // namespace aclgrad::ops::detail

#define ACLGRAD_SIMD_VARIANTS(ret, name, params, args)                                             \
  __attribute__((target("avx512f"))) static ret name##_avx512 params {                             \
    return name<float> args;                                                                       \
  }                                                                                                \
  __attribute__((target("avx2"))) static ret name##_avx2 params {                                  \
    return name<float> args;                                                                       \
  }                                                                                                \
  static ret name##_baseline params {                                                              \
    return name<float> args;                                                                       \
  }                                                                                                \
  ret name params {                                                                                \
    static ret(*const variant) params =                                                            \
        ::aclgrad::ops::detail::pick_simd_variant(&name##_avx512, &name##_avx2, &name##_baseline); \
    return variant args;                                                                           \
  }
