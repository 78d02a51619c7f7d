#include "matmul/panels.h"

#include <algorithm>
#include <stdexcept>

namespace aclnn_cpu::matmul {

using conv::SrcKind;

bool packs_kind(SrcKind kind) {
  return kind == SrcKind::kF32 || kind == SrcKind::kF32Hf32 || kind == SrcKind::kF32Fp16 ||
         kind == SrcKind::kF16 || kind == SrcKind::kBF16;
}

void pack_a(const SrcMat& A, int64_t m, int64_t K, float* packed) {
  const int64_t depth = gemm::panel_depth(), m_padded = (m + 7) / 8 * 8;
  const bool wide = gemm::have_avx512();
  for (int64_t pc = 0; pc < K; pc += depth) {
    const int64_t kc = std::min(depth, K - pc);
    float* block = packed + pc * m_padded;
    const bool done =
        wide ? avx512::pack_a_block(A, m, pc, kc, block) : avx2::pack_a_block(A, m, pc, kc, block);
    if (!done) throw std::logic_error("matmul::pack_a: an operand kind the packers do not read");
  }
}

void MatPanels::pack(int64_t k0, int64_t kc, int64_t j0, int64_t n, float* Bp) const {
  const bool done = gemm::have_avx512() ? avx512::pack_b(b_, k0, kc, j0, n, Bp)
                                        : avx2::pack_b(b_, k0, kc, j0, n, Bp);
  if (!done) throw std::logic_error("matmul::MatPanels: an operand kind the packers do not read");
}

}  // namespace aclnn_cpu::matmul
