// The cache-blocked loop nest of the packed fp32 GEMM and its PackedKernel (sgemm.h), written once
// over a kernel trait K and included by sgemm_avx512.cpp and sgemm_avx2.cpp inside their target
// regions, after they define K (their micro-kernels and packers differ in register tiles and are
// tuned per ISA; the nest around them, pack_a_once's layout and the entry points are the same):
//
//   static constexpr int64_t kMR, kNR;     packed A panel rows (8), packed B panel columns (48)
//   static constexpr int64_t kKC, kMC, kNC;   the K, M and N blocks (kMC % kMR == kNC % kNR == 0)
//   static constexpr bool kRowPanelsOuter;    micro tiles ir-outer (one A panel stays in L1 while
//                                          the B panels stream past it) or jr-outer (one B panel
//                                          pair stays in L1 while the A panels stream)
//   pack_a, pack_b, micro_tile: static functions, or constexpr pointers to the file's own, of
//   these signatures (a constant pointer is called directly, as the function itself would be):
//   static void pack_a(const Mat& A, int64_t i0, int64_t m, int64_t k0, int64_t kc, float* Ap);
//   static void pack_b(const Mat& B, int64_t k0, int64_t kc, int64_t j0, int64_t n, float* Bp);
//   static void micro_tile(int64_t kc, const float* Ap, const float* Bp, bool accumulate,
//                          float* C, int64_t ldc, int64_t rows, int64_t cols);
//   and, where the kernel stores 16-bit products (PackedCall::C16; one K block), optionally
//   static void micro_tile16(int64_t kc, const float* Ap, const float* Bp, bool bf16,
//                            uint16_t* C16, int64_t ldc, int64_t rows, int64_t cols);
//
// Internal linkage (an anonymous namespace): the instances for one target never meet the other's
// at link time. No standard-library template is used here.
#pragma once

#include <cstdint>

#include "gemm/sgemm.h"
#include "int_math.h"

namespace aclnn_cpu::gemm {
namespace {  // NOLINT(google-build-namespaces): see above

// The blocked loop nest, loop order pc -> jc -> ic -> (ir, jr), for one PackedCall (sgemm.h).
// scratch: Ap [kMC / kMR][kKC][kMR] then Bp [kNC / kNR][kKC][kNR].
template <class K>
void gemm_blocked(const PackedCall& call) {
  const int64_t M = call.M, N = call.N, Kdim = call.K, ldc = call.ldc, a_row0 = call.a_row0;
  const int64_t a_stride = (call.a_rows + K::kMR - 1) / K::kMR * K::kMR;  // rows per K block
  const Mat* A = call.a_mat;
  const Mat* B = call.b_mat;
  const float* packed_a = call.packed_a;
  const BPanels* b_panels = call.b_panels;
  const bool accumulate = call.accumulate;
  float *C = call.C, *scratch = call.scratch;
  float* Ap = scratch;
  float* Bp = scratch + K::kMC * K::kKC;
  for (int64_t pc = 0; pc < Kdim; pc += K::kKC) {
    const int64_t kc = min64(K::kKC, Kdim - pc);
    const bool acc = accumulate || pc > 0;  // later K blocks add onto the first
    for (int64_t jc = 0; jc < N; jc += K::kNC) {
      const int64_t nc = min64(K::kNC, N - jc);
      if (b_panels) {
        b_panels->pack(pc, kc, jc, nc, Bp);
      } else {
        K::pack_b(*B, pc, kc, jc, nc, Bp);
      }
      for (int64_t ic = 0; ic < M; ic += K::kMC) {
        const int64_t mc = min64(K::kMC, M - ic);
        const float* a_block = Ap;
        if (packed_a) {
          a_block = packed_a + pc * a_stride + (a_row0 + ic) * kc;
        } else {
          K::pack_a(*A, ic, mc, pc, kc, Ap);
        }
        // The micro tile at rows ir, columns jr of the block: into C, or narrowed into C16.
        auto tile = [&](int64_t ir, int64_t jr) {
          const int64_t at = (ic + ir) * ldc + jc + jr;
          const int64_t rows = min64(K::kMR, mc - ir), cols = min64(K::kNR, nc - jr);
          if constexpr (requires { K::micro_tile16; }) {
            if (call.C16)
              return K::micro_tile16(kc, a_block + ir * kc, Bp + jr * kc, call.c16_bf16,
                                     call.C16 + at, ldc, rows, cols);
          }
          K::micro_tile(kc, a_block + ir * kc, Bp + jr * kc, acc, C + at, ldc, rows, cols);
        };
        if constexpr (K::kRowPanelsOuter) {
          for (int64_t ir = 0; ir < mc; ir += K::kMR)
            for (int64_t jr = 0; jr < nc; jr += K::kNR) tile(ir, jr);
        } else {
          for (int64_t jr = 0; jr < nc; jr += K::kNR)
            for (int64_t ir = 0; ir < mc; ir += K::kMR) tile(ir, jr);
        }
      }
    }
  }
}

// sgemm.h's PackedKernel of K.
template <class K>
struct BlockedGemm {
  // Layout: K block pc (rows pc .. pc+kc of the K dimension) starts at pc * m_padded; within it
  // the kMR-row panels follow each other (panel p at p * kMR * kc), exactly what pack_a writes
  // per block.
  static void pack_a_once(int64_t M, int64_t Kdim, const Mat& A, float* packed) {
    const int64_t m_padded = (M + K::kMR - 1) / K::kMR * K::kMR;
    for (int64_t pc = 0; pc < Kdim; pc += K::kKC)
      K::pack_a(A, 0, M, pc, min64(K::kKC, Kdim - pc), packed + pc * m_padded);
  }

  static constexpr PackedKernel kernel() {
    return {K::kMC * K::kKC + K::kKC * K::kNC, K::kKC, &pack_a_once, &gemm_blocked<K>};
  }
};

}  // namespace
}  // namespace aclnn_cpu::gemm
