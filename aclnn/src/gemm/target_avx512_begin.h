// Opens the AVX-512 (F, BW, VL, DQ) + FMA target region of an ISA file: every function defined
// until gemm/target_end.h may use those instructions, so call them only after the runtime CPU check
// (gemm::isa()). Include it after the file's other headers: declarations of standard-library
// templates must stay outside the region. No include guard: each ISA file includes it once.
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma"))), \
                             apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,fma")
#endif
