// Closes the target region opened by gemm/target_avx2_begin.h, gemm/target_avx512_begin.h or a
// file's own push of target attributes. No include guard: each ISA file includes it once.
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
