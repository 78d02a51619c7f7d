#include "gemm/sgemm.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include <cblas.h>
#include <cpuid.h>

namespace aclnn_cpu::gemm {

namespace {

// AVX2 with FMA and F16C (every AVX2 CPU has both; the AVX2 kernels convert fp16 with F16C's
// instructions). F16C is read from CPUID leaf 1 (ECX bit 29): clang 14's __builtin_cpu_supports
// does not know "f16c".
Isa detect_isa() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return Isa::kAvx512;
  unsigned a = 0, b = 0, c = 0, d = 0;
  const bool f16c = __get_cpuid(1, &a, &b, &c, &d) != 0 && (c & bit_F16C) != 0;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c) return Isa::kAvx2;
  return Isa::kNone;
}

// The cap of ACLNN_CPU_MAX_ISA / ACLNN_CPU_NO_AVX512 (kAvx512 when unset or not understood).
Isa isa_cap() {
  const char* no512 = std::getenv("ACLNN_CPU_NO_AVX512");
  const Isa by_no512 = no512 && no512[0] == '1' ? Isa::kAvx2 : Isa::kAvx512;
  const char* max = std::getenv("ACLNN_CPU_MAX_ISA");
  Isa by_max = Isa::kAvx512;
  if (max && std::strcmp(max, "avx2") == 0) by_max = Isa::kAvx2;
  if (max && std::strcmp(max, "none") == 0) by_max = Isa::kNone;
  return std::min(by_no512, by_max);
}

}  // namespace

Isa isa() {
  static const Isa chosen = std::min(detect_isa(), isa_cap());
  return chosen;
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
      return avx512::pack_elems();
    case Isa::kAvx2:
      return avx2::pack_elems();
    case Isa::kNone:
      break;
  }
  return 0;
}

int64_t packed_a_elems(int64_t M, int64_t K) {
  return (M + 7) / 8 * 8 * K;
}

void pack_a_once(int64_t M, int64_t K, Mat A, float* packed) {
  if (A.fp16 && !packs_fp16())
    throw std::logic_error("pack_a_once: fp16-rounded operands need our packed kernels");
  if (have_avx512()) return avx512::pack_a_once(M, K, A, packed);
  if (have_packed_gemm()) return avx2::pack_a_once(M, K, A, packed);
  throw std::logic_error("pack_a_once: no packed GEMM kernel on this CPU");
}

namespace {

// The packed kernels of isa(): packed_a (when not null) is rows [a_row0, a_row0 + M) of an
// a_rows-row matrix packed by pack_a_once.
void packed_kernels(const char* what, int64_t M, int64_t N, int64_t K, const float* packed_a,
                    int64_t a_rows, int64_t a_row0, const Mat* a_mat, const Mat* b_mat,
                    const BPanels* b_panels, bool accumulate, float* C, int64_t ldc,
                    float* scratch) {
  if (sgemm_empty(M, N, K, accumulate, C, ldc)) return;
  if (((a_mat && a_mat->fp16) || (b_mat && b_mat->fp16)) && !packs_fp16())
    throw std::logic_error(std::string(what) + ": fp16-rounded operands need our packed kernels");
  if (have_avx512())
    return avx512::sgemm_packed(M, N, K, packed_a, a_rows, a_row0, a_mat, b_mat, b_panels,
                                accumulate, C, ldc, scratch);
  if (have_packed_gemm())
    return avx2::sgemm_packed(M, N, K, packed_a, a_rows, a_row0, a_mat, b_mat, b_panels, accumulate,
                              C, ldc, scratch);
  throw std::logic_error(std::string(what) + ": no packed GEMM kernel on this CPU");
}

}  // namespace

void sgemm_packed(int64_t M, int64_t N, int64_t K, const float* packed_a, const Mat* a_mat,
                  const Mat* b_mat, const BPanels* b_panels, bool accumulate, float* C, int64_t ldc,
                  float* scratch) {
  packed_kernels("sgemm_packed", M, N, K, packed_a, M, 0, a_mat, b_mat, b_panels, accumulate, C,
                 ldc, scratch);
}

void sgemm_packed_rows(int64_t M, int64_t N, int64_t K, const float* packed_a, int64_t rows,
                       int64_t row0, const BPanels* b_panels, bool accumulate, float* C,
                       int64_t ldc, float* scratch) {
  if (M > 0 && N > 0 && K > 0 && (row0 < 0 || row0 % 8 != 0 || row0 + M > rows))
    throw std::logic_error("sgemm_packed_rows: rows [row0, row0 + M) not whole panels of A");
  packed_kernels("sgemm_packed_rows", M, N, K, packed_a, rows, row0, nullptr, nullptr, b_panels,
                 accumulate, C, ldc, scratch);
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
  if (A.fp16 || B.fp16)
    throw std::logic_error("sgemm: fp16-rounded operands need our packed kernels");
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
