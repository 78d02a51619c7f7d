// Packing for the AMX bf16 GEMM (gemm/amx_gemm.h) and its run on the software tile model.
#include "gemm/amx_gemm.h"

#include <algorithm>
#include <cstring>

namespace aclnn_cpu::gemm {

alignas(64) const uint16_t kAmxZeroTile[kAmxRows * kAmxK] = {};

// Ap[i][k][r][c] = A(16 i + r, 32 k + c), zero past M or K. A tile row is a run of up to 32 k of
// one row of A: copied whole where A's k are contiguous (cs = 1: the conv kernels' dy chunks,
// weights and tbc_amx's transposed x rows), gathered where they are strided.
void amx_pack_a(int64_t M, int64_t K, Bf16Mat A, uint16_t* Ap) {
  const int64_t mp = amx_round_up(M, kAmxRows) / kAmxRows, kb = amx_round_up(K, kAmxK) / kAmxK;
  for (int64_t i = 0; i < mp; ++i)
    for (int64_t k = 0; k < kb; ++k) {
      uint16_t* t = Ap + (i * kb + k) * kAmxRows * kAmxK;
      const int64_t k0 = k * kAmxK, valid = std::min(kAmxK, K - k0);
      for (int64_t r = 0; r < kAmxRows; ++r) {
        const int64_t m = i * kAmxRows + r, n = m < M ? valid : 0;
        uint16_t* dst = t + r * kAmxK;
        if (n > 0) {
          const uint16_t* src = A.p + m * A.rs + k0 * A.cs;
          if (A.cs == 1) {
            std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(uint16_t));
          } else {
            for (int64_t c = 0; c < n; ++c) dst[c] = src[c * A.cs];
          }
        }
        std::fill(dst + n, dst + kAmxK, uint16_t{0});
      }
    }
}

// Bp[j][k][p][n][h] = B(32 k + 2 p + h, 16 j + n), zero past K or N: per k, the panel's (up to)
// 16 n of one row of B interleaved with the next k's.
void amx_pack_b(int64_t K, int64_t N, Bf16Mat B, uint16_t* Bp) {
  const int64_t np = amx_round_up(N, kAmxRows) / kAmxRows, kb = amx_round_up(K, kAmxK) / kAmxK;
  for (int64_t j = 0; j < np; ++j) {
    const int64_t n0 = j * kAmxRows, cols = std::min(kAmxRows, N - n0);
    for (int64_t k = 0; k < kb; ++k) {
      uint16_t* t = Bp + (j * kb + k) * kAmxRows * kAmxK;
      for (int64_t p = 0; p < kAmxK / 2; ++p)
        for (int64_t h = 0; h < 2; ++h) {
          const int64_t kk = k * kAmxK + 2 * p + h, n = kk < K ? cols : 0;
          uint16_t* dst = t + p * kAmxRows * 2 + h;  // every other element: n's pairs
          if (n > 0) {
            const uint16_t* src = B.p + kk * B.rs + n0 * B.cs;
            for (int64_t c = 0; c < n; ++c) dst[2 * c] = src[c * B.cs];
          }
          for (int64_t c = n; c < kAmxRows; ++c) dst[2 * c] = 0;
        }
    }
  }
}

void amx_gemm_bf16_model(int64_t M, int64_t N, int64_t K, const uint16_t* Ap, const uint16_t* Bp,
                         float* C, int64_t ldc, bool accumulate) {
  AmxModel model;
  amx_gemm_bf16_tiles(model, M, N, K, Ap, Bp, C, ldc, accumulate);
}

}  // namespace aclnn_cpu::gemm
