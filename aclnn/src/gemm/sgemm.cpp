#include "gemm/sgemm.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include <cblas.h>

#include "cpu/cpu.h"

namespace aclnn_cpu::gemm {

// The kernels' vector width from the tier in force (cpu/cpu.h: CPU, OS and caps). kAvx2 includes
// FMA and F16C; kAvx512 AVX-512 F, BW, VL and DQ, which every AVX-512 kernel file targets.
Isa isa() {
  const cpu::Tier t = cpu::tier();  // decided once by the module; nothing to cache here
  return t >= cpu::Tier::kAvx512 ? Isa::kAvx512 : t >= cpu::Tier::kAvx2 ? Isa::kAvx2 : Isa::kNone;
}

const char* isa_name(Isa i) {
  switch (i) {
    case Isa::kAvx512:
      return "avx512";
    case Isa::kAvx2:
      return "avx2";
    case Isa::kNone:
      break;
  }
  return "none";
}

int64_t pack_elems() {
  switch (isa()) {
    case Isa::kAvx512:
      return kAvx512Kernel.pack_elems;
    case Isa::kAvx2:
      return kAvx2Kernel.pack_elems;
    case Isa::kNone:
      break;
  }
  return 0;
}

int64_t panel_depth() {
  if (have_avx512()) return kAvx512Kernel.panel_depth;
  if (have_packed_gemm()) return kAvx2Kernel.panel_depth;
  throw std::logic_error("panel_depth: no packed GEMM kernel on this CPU");
}

int64_t packed_a_elems(int64_t M, int64_t K) {
  return (M + 7) / 8 * 8 * K;
}

void pack_a_once(int64_t M, int64_t K, Mat A, float* packed) {
  if (A.fp16 && !packs_fp16())
    throw std::logic_error("pack_a_once: fp16-rounded operands need our packed kernels");
  if (A.p16 && !packs_16bit())
    throw std::logic_error("pack_a_once: 16-bit operands need the AVX-512 kernels");
  if (have_avx512()) return kAvx512Kernel.pack_a_once(M, K, A, packed);
  if (have_packed_gemm()) return kAvx2Kernel.pack_a_once(M, K, A, packed);
  throw std::logic_error("pack_a_once: no packed GEMM kernel on this CPU");
}

namespace {

// The packed kernels of isa() (`what`: the caller, for the errors).
void packed_kernels(const char* what, const PackedCall& c) {
  if (sgemm_empty(c.M, c.N, c.K, c.accumulate, c.C, c.ldc)) return;
  if (((c.a_mat && c.a_mat->fp16) || (c.b_mat && c.b_mat->fp16)) && !packs_fp16())
    throw std::logic_error(std::string(what) + ": fp16-rounded operands need our packed kernels");
  if (((c.a_mat && c.a_mat->p16) || (c.b_mat && c.b_mat->p16)) && !packs_16bit())
    throw std::logic_error(std::string(what) + ": 16-bit operands need the AVX-512 kernels");
  if (have_avx512()) return kAvx512Kernel.run(c);
  if (have_packed_gemm()) return kAvx2Kernel.run(c);
  throw std::logic_error(std::string(what) + ": no packed GEMM kernel on this CPU");
}

}  // namespace

void sgemm_packed(int64_t M, int64_t N, int64_t K, const float* packed_a, const Mat* a_mat,
                  const Mat* b_mat, const BPanels* b_panels, bool accumulate, float* C, int64_t ldc,
                  float* scratch) {
  packed_kernels("sgemm_packed", {.M = M,
                                  .N = N,
                                  .K = K,
                                  .packed_a = packed_a,
                                  .a_rows = M,
                                  .a_row0 = 0,
                                  .a_mat = a_mat,
                                  .b_mat = b_mat,
                                  .b_panels = b_panels,
                                  .accumulate = accumulate,
                                  .C = C,
                                  .ldc = ldc,
                                  .scratch = scratch});
}

void sgemm_packed_rows(int64_t M, int64_t N, int64_t K, const float* packed_a, int64_t rows,
                       int64_t row0, const BPanels* b_panels, bool accumulate, float* C,
                       int64_t ldc, float* scratch) {
  if (M > 0 && N > 0 && K > 0 && (row0 < 0 || row0 % 8 != 0 || row0 + M > rows))
    throw std::logic_error("sgemm_packed_rows: rows [row0, row0 + M) not whole panels of A");
  packed_kernels("sgemm_packed_rows", {.M = M,
                                       .N = N,
                                       .K = K,
                                       .packed_a = packed_a,
                                       .a_rows = rows,
                                       .a_row0 = row0,
                                       .b_panels = b_panels,
                                       .accumulate = accumulate,
                                       .C = C,
                                       .ldc = ldc,
                                       .scratch = scratch});
}

void sgemm_packed_narrow(int64_t M, int64_t N, int64_t K, const float* packed_a, const Mat* b_mat,
                         const BPanels* b_panels, bool bf16, uint16_t* C16, int64_t ldc,
                         float* scratch) {
  if (M <= 0 || N <= 0) return;
  if (!packs_16bit() || K <= 0 || K > panel_depth())
    throw std::logic_error("sgemm_packed_narrow: needs the AVX-512 kernel and 0 < K <= " +
                           std::to_string(packs_16bit() ? panel_depth() : 0) +
                           ", got K = " + std::to_string(K));
  kAvx512Kernel.run({.M = M,
                     .N = N,
                     .K = K,
                     .packed_a = packed_a,
                     .a_rows = M,
                     .a_row0 = 0,
                     .b_mat = b_mat,
                     .b_panels = b_panels,
                     .ldc = ldc,
                     .C16 = C16,
                     .c16_bf16 = bf16,
                     .scratch = scratch});
}

bool sgemm_empty(int64_t M, int64_t N, int64_t K, bool accumulate, float* C, int64_t ldc) {
  if (M <= 0 || N <= 0) return true;
  if (K > 0) return false;
  if (!accumulate)
    for (int64_t i = 0; i < M; ++i) std::fill(C + i * ldc, C + i * ldc + N, 0.0f);
  return true;
}

void sgemm(int64_t M, int64_t N, int64_t K, Mat A, Mat B, bool accumulate, float* C, int64_t ldc,
           float* scratch) {
  if (sgemm_empty(M, N, K, accumulate, C, ldc)) return;
  if (scratch && have_packed_gemm()) {
    sgemm_packed(M, N, K, nullptr, &A, &B, nullptr, accumulate, C, ldc, scratch);
    return;
  }
  if (A.fp16 || B.fp16 || A.p16 || B.p16)
    throw std::logic_error("sgemm: rounded or 16-bit operands need our packed kernels");
  // OpenBLAS: a row-major operand has cs == 1 (NoTrans, ld = rs) or rs == 1 (Trans, ld = cs).
  auto op = [](const Mat& m, int64_t cols) {
    if (m.cs == 1 && m.rs >= cols) return std::pair{CblasNoTrans, m.rs};
    if (m.rs == 1) return std::pair{CblasTrans, std::max<int64_t>(m.cs, 1)};
    throw std::logic_error("sgemm: an operand has no unit stride");
  };
  const auto [ta, lda] = op(A, K);
  const auto [tb, ldb] = op(B, N);
  cblas_sgemm(CblasRowMajor, ta, tb, static_cast<blasint>(M), static_cast<blasint>(N),
              static_cast<blasint>(K), 1.0f, A.p, static_cast<blasint>(lda), B.p,
              static_cast<blasint>(ldb), accumulate ? 1.0f : 0.0f, C, static_cast<blasint>(ldc));
}

}  // namespace aclnn_cpu::gemm
