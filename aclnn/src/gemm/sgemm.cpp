#include "gemm/sgemm.h"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

#include <cblas.h>

namespace aclnn_cpu::gemm {

bool have_avx512() {
  // ACLNN_CPU_NO_AVX512=1 forces the OpenBLAS path (to compare, or to test the fallback).
  static const bool yes = [] {
    const char* off = std::getenv("ACLNN_CPU_NO_AVX512");
    if (off && off[0] == '1') return false;
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") != 0;
  }();
  return yes;
}

int64_t pack_elems() {
  return have_avx512() ? sgemm_avx512_pack_elems() : 0;
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
  if (scratch && have_avx512()) {
    sgemm_avx512(M, N, K, A, B, accumulate, C, ldc, scratch);
    return;
  }
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
