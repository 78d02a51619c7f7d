#include "conv/kernels/im2col/source_panels.h"

#include <algorithm>
#include <cstring>

namespace aclnn_cpu::conv {

// Bp[panel][k][48] = B(k0 + k, j0 + panel*48 + c): each row of the block is converted once, a
// piece of up to 480 columns (the GEMMs' NC) at a time, into a stack row (L1), then dealt out to
// the panels with 192-byte copies; columns past n are zero.
void SourceRows::pack(int64_t k0, int64_t kc, int64_t j0, int64_t n, float* Bp) const {
  constexpr int64_t P = gemm::kPanelCols, kPiece = 10 * P;
  alignas(64) float row[kPiece];
  for (int64_t c0 = 0; c0 < n; c0 += kPiece) {
    const int64_t m = std::min(kPiece, n - c0), panels = (m + P - 1) / P;
    float* dst = Bp + (c0 / P) * kc * P;
    std::fill(row + m, row + panels * P, 0.0f);
    for (int64_t k = 0; k < kc; ++k) {
      src_.at((k0 + k) * ld_ + j0 + c0).convert(m, 1, row);
      for (int64_t p = 0; p < panels; ++p)
        std::memcpy(dst + (p * kc + k) * P, row + p * P, P * sizeof(float));
    }
  }
}

}  // namespace aclnn_cpu::conv
