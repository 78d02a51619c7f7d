// Opens the AVX2 + FMA (+ F16C) target region of an ISA file: every function defined until
// gemm/target_end.h may use AVX2, FMA and F16C instructions, so call them only after the runtime
// CPU check (gemm::isa(), whose kAvx2 includes F16C). Include it after the file's other headers:
// declarations of standard-library templates must stay outside the region. No include guard:
// each ISA file includes it once.
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#endif
