// The panel sources' dispatch: the packing bodies are compiled per instruction set
// (im2col_panels_avx512.cpp, im2col_panels_avx2.cpp) and follow the GEMM's own choice, so a
// source only ever runs under the kernel that asked for it.
#include "conv/kernels/im2col/im2col_panels.h"

namespace aclnn_cpu::conv {

void Im2colPanels::pack(int64_t k0, int64_t kc, int64_t j0, int64_t n, float* Bp) const {
  if (gemm::have_avx512()) return pack_avx512(k0, kc, j0, n, Bp);
  pack_avx2(k0, kc, j0, n, Bp);
}

void GridPanels::pack(int64_t k0, int64_t kc, int64_t j0, int64_t n, float* Bp) const {
  if (gemm::have_avx512()) return pack_avx512(k0, kc, j0, n, Bp);
  pack_avx2(k0, kc, j0, n, Bp);
}

void GridPanelsT::pack(int64_t k0, int64_t kc, int64_t j0, int64_t n, float* Bp) const {
  if (gemm::have_avx512()) return pack_avx512(k0, kc, j0, n, Bp);
  pack_avx2(k0, kc, j0, n, Bp);
}

void Im2colPanelsT::pack(int64_t k0, int64_t kc, int64_t j0, int64_t n, float* Bp) const {
  if (gemm::have_avx512()) return pack_avx512(k0, kc, j0, n, Bp);
  pack_avx2(k0, kc, j0, n, Bp);
}

int64_t Im2colPanelsT::tile_elems() {
  // 16 rows of the deepest K block, and room for the last row's gather to spill (im2col_row.h).
  return 16 * gemm::kMaxPanelDepth + 16;
}

}  // namespace aclnn_cpu::conv
