// The packing of aclnnMatmul's operands for our packed fp32 GEMM (gemm/sgemm.h), straight from
// the caller's tensors: fp16 and bf16 elements are widened, and FLOAT ones rounded as
// cubeMathType says, while the GEMM's panels are written, so no fp32 copy of an operand is made.
// Any strides: a unit stride along either dimension takes the vector path (a unit column stride
// converts runs of a row; a unit row stride, as in linear's wᵀ, converts runs of a column and
// transposes them in registers); other layouts are packed element by element.
//
// The forms per tier: AVX-512 (panels_avx512.cpp) and AVX2 + F16C (panels_avx2.cpp), one template
// over a vector trait (panels_kernels.h). They run only where gemm::have_packed_gemm(); the
// portable tier converts blocks with conv::Source and calls OpenBLAS (matmul_run.cpp).
#pragma once

#include <cstdint>

#include "conv/engine/source.h"
#include "gemm/sgemm.h"

namespace aclnn_cpu::matmul {

// A matrix as stored: element (r, c) is element r * rs + c * cs of `data`, of kind `kind`.
struct SrcMat {
  const void* data = nullptr;
  conv::SrcKind kind = conv::SrcKind::kF32;
  int64_t rs = 0, cs = 0;

  int64_t elem_bytes() const { return static_cast<int64_t>(conv::Source{data, kind}.elem_bytes()); }
  // The matrix starting at element (r, c).
  SrcMat at(int64_t r, int64_t c) const {
    return {static_cast<const char*>(data) + (r * rs + c * cs) * elem_bytes(), kind, rs, cs};
  }
  // Element (r, c) as an fp32 operand (converted and rounded).
  float value(int64_t r, int64_t c) const {
    return conv::Source{data, kind}.value(r * rs + c * cs);
  }
};

// The kinds the vector packers read (every kind aclnnMatmul accepts: fp32 with or without the
// HF32 / fp16 operand rounding, fp16, bf16).
bool packs_kind(conv::SrcKind kind);

// Rows [0, m) and columns [0, K) of A in gemm::pack_a_once's layout (K blocks of
// gemm::panel_depth(), each [ceil(m / 8)][kc][8], rows past m zero): gemm::packed_a_elems(m, K)
// floats. Only where gemm::have_packed_gemm().
void pack_a(const SrcMat& A, int64_t m, int64_t K, float* packed);

// B as the GEMM's panel source: pack() writes Bp[panel][k][48] = B(k0 + k, j0 + panel * 48 + c),
// zero past column j0 + n. Only where gemm::have_packed_gemm().
class MatPanels final : public gemm::BPanels {
 public:
  explicit MatPanels(const SrcMat& b) : b_(b) {}
  void pack(int64_t k0, int64_t kc, int64_t j0, int64_t n, float* Bp) const override;

 private:
  SrcMat b_;
};

// The per-tier forms behind pack_a (one K block: Ap[p][k][8] = A(p * 8 + r, k0 + k)) and
// MatPanels::pack, called after the tier check; false (nothing written) for a kind that
// packs_kind() refuses.
namespace avx512 {
bool pack_a_block(const SrcMat& A, int64_t m, int64_t k0, int64_t kc, float* Ap);
bool pack_b(const SrcMat& B, int64_t k0, int64_t kc, int64_t j0, int64_t n, float* Bp);
}  // namespace avx512
namespace avx2 {
bool pack_a_block(const SrcMat& A, int64_t m, int64_t k0, int64_t kc, float* Ap);
bool pack_b(const SrcMat& B, int64_t k0, int64_t kc, int64_t j0, int64_t n, float* Bp);
}  // namespace avx2

}  // namespace aclnn_cpu::matmul
