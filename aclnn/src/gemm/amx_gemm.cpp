// Packing for the AMX bf16 GEMM (gemm/amx_gemm.h) and its run on the software tile model.
#include "gemm/amx_gemm.h"

#include <cstring>

namespace aclnn_cpu::gemm {

alignas(64) const uint16_t kAmxZeroTile[kAmxRows * kAmxK] = {};

// Ap[i][k][r][c] = A(16 i + r, 32 k + c), zero past M or K.
void amx_pack_a(int64_t M, int64_t K, Bf16Mat A, uint16_t* Ap) {
  const int64_t mp = amx_round_up(M, kAmxRows) / kAmxRows, kb = amx_round_up(K, kAmxK) / kAmxK;
  for (int64_t i = 0; i < mp; ++i)
    for (int64_t k = 0; k < kb; ++k) {
      uint16_t* t = Ap + (i * kb + k) * kAmxRows * kAmxK;
      for (int64_t r = 0; r < kAmxRows; ++r)
        for (int64_t c = 0; c < kAmxK; ++c) {
          const int64_t m = i * kAmxRows + r, kk = k * kAmxK + c;
          t[r * kAmxK + c] = m < M && kk < K ? A.p[m * A.rs + kk * A.cs] : uint16_t{0};
        }
    }
}

// Bp[j][k][p][n][h] = B(32 k + 2 p + h, 16 j + n), zero past K or N.
void amx_pack_b(int64_t K, int64_t N, Bf16Mat B, uint16_t* Bp) {
  const int64_t np = amx_round_up(N, kAmxRows) / kAmxRows, kb = amx_round_up(K, kAmxK) / kAmxK;
  for (int64_t j = 0; j < np; ++j)
    for (int64_t k = 0; k < kb; ++k) {
      uint16_t* t = Bp + (j * kb + k) * kAmxRows * kAmxK;
      for (int64_t p = 0; p < kAmxK / 2; ++p)
        for (int64_t n = 0; n < kAmxRows; ++n)
          for (int64_t h = 0; h < 2; ++h) {
            const int64_t kk = k * kAmxK + 2 * p + h, nn = j * kAmxRows + n;
            t[(p * kAmxRows + n) * 2 + h] =
                kk < K && nn < N ? B.p[kk * B.rs + nn * B.cs] : uint16_t{0};
          }
    }
}

void amx_gemm_bf16_model(int64_t M, int64_t N, int64_t K, const uint16_t* Ap, const uint16_t* Bp,
                         float* C, int64_t ldc, bool accumulate) {
  AmxModel model;
  amx_gemm_bf16_tiles(model, M, N, K, Ap, Bp, C, ldc, accumulate);
}

}  // namespace aclnn_cpu::gemm
