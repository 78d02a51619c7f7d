// The dispatch of the fp32 direct grid kernels (direct_grid.h) to their AVX-512 or AVX2 bodies,
// by gemm::isa().
#include "conv/kernels/grid/direct_grid.h"

#include "conv/engine/source.h"  // transpose_convert_avx2
#include "gemm/sgemm.h"

namespace aclnn_cpu::conv {

void direct_grid_forward(int64_t m, int64_t n, int64_t C, int64_t T, const int64_t* off,
                         const float* x, int64_t plane, const float* packed, float* out,
                         int64_t ldo, int64_t c_chunk, int64_t row_len, int64_t pitch) {
  if (gemm::have_avx512())
    return direct_grid_forward_avx512(m, n, C, T, off, x, plane, packed, out, ldo, c_chunk, row_len,
                                      pitch);
  direct_grid_forward_avx2(m, n, C, T, off, x, plane, packed, out, ldo, c_chunk, row_len, pitch);
}

void direct_grid_weight(int64_t m16, int64_t C, int64_t T, const int64_t* off, const TapBox* box,
                        const float* xt, int64_t ldx, const float* dyt, int64_t ldy,
                        const WeightRuns& runs, float* dwt) {
  if (gemm::have_avx512())
    return direct_grid_weight_avx512(m16, C, T, off, box, xt, ldx, dyt, ldy, runs, dwt);
  direct_grid_weight_avx2(m16, C, T, off, box, xt, ldx, dyt, ldy, runs, dwt);
}

void direct_transpose(const float* src, int64_t ld_src, int64_t rows, int64_t cols, float* dst,
                      int64_t ld_dst, int64_t width) {
  if (gemm::have_avx512())
    return direct_transpose_avx512(src, ld_src, rows, cols, dst, ld_dst, width);
  // (AVX2: the fp32 case of the converting transpose, the same 8 x 8 register blocks)
  transpose_convert_avx2(SrcKind::kF32, src, ld_src, rows, cols, dst, ld_dst, width);
}

}  // namespace aclnn_cpu::conv
