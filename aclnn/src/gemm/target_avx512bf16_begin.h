// Opens the AVX-512 (F, BW, VL, DQ) + AVX512_BF16 + FMA target region of a bf16 kernel file, like
// gemm/target_avx512_begin.h; call its functions only where the CPU has AVX512_BF16
// (conv::bf16_dot_kernels()). Closed by gemm/target_end.h. No include guard.
#if defined(__clang__)
#pragma clang attribute push(                                                     \
    __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,fma"))), \
    apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,fma")
#endif
