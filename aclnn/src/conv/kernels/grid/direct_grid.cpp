// The dispatch of the fp32 direct grid kernels (direct_grid.h) to their AVX-512 or AVX2 bodies,
// by gemm::isa().
#include "conv/kernels/grid/direct_grid.h"

#include "conv/engine/source.h"  // transpose_convert_avx2
#include "gemm/sgemm.h"

namespace aclnn_cpu::conv {

void direct_grid_forward(const GridForwardF32& a) {
  if (gemm::have_avx512()) return direct_grid_forward_avx512(a);
  direct_grid_forward_avx2(a);
}

void direct_grid_weight(const GridWeightF32& a) {
  if (gemm::have_avx512()) return direct_grid_weight_avx512(a);
  direct_grid_weight_avx2(a);
}

void direct_transpose(const float* src, int64_t ld_src, int64_t rows, int64_t cols, float* dst,
                      int64_t ld_dst, int64_t width) {
  if (gemm::have_avx512())
    return direct_transpose_avx512(src, ld_src, rows, cols, dst, ld_dst, width);
  // (AVX2: the fp32 case of the converting transpose, the same 8 x 8 register blocks)
  transpose_convert_avx2(SrcKind::kF32, src, ld_src, rows, cols, dst, ld_dst, width);
}

}  // namespace aclnn_cpu::conv
