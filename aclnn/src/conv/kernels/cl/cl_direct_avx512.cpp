// The channels-last row kernels of cl_direct.h, compiled for AVX-512 (reached only after the
// runtime CPU check). No standard-library template is instantiated inside the target region.
#include <immintrin.h>

#include <cstdint>

#include "conv/kernels/cl/cl_direct.h"
#include "int_math.h"

#include "gemm/target_avx512_begin.h"
// GCC 12 sees the intrinsics' internal __Y as uninitialized in the transposes.
#if !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "gemm/avx512_util.h"
#include "conv/kernels/cl/cl_store_avx512.h"

namespace aclnn_cpu::conv {
namespace {

// acc += w * broadcast(*x), the broadcast folded into the FMA as its memory operand ({1to16}).
// Compilers load a value broadcast into several FMAs once into a register instead (a separate
// vbroadcastss per source column). Which is faster depends on the core (the bcast_reg policy,
// cpu.h): Zen 4 ran the data gradient faster folded (fewer instructions for its half-width
// FMAs); Intel ran it up to 1.6x faster from a register (measured: bench/RESULTS.md, design
// cl_direct_avx512.fold-broadcast).
static inline void fma_bcast(__m512& acc, __m512 w, const float* x) {
  asm("vfmadd231ps %[x]%{1to16%}, %[w], %[acc]" : [acc] "+v"(acc) : [w] "v"(w), [x] "m"(*x));
}

// Taps of residue r (R residues: tap k = r + R * j) along a row of K taps: ceil((K - r) / R).
constexpr int residue_taps(int K, int R, int r) {
  return (K - r + R - 1) / R;
}

// acc[u] += the KW taps of one residue of one (tap row, channel): source column p
// (p < UR + KW - 1) of the residue, at x + p * CS, feeds the outputs u = p - k with the weight
// vectors w[16 * k]; p outside [plo, phi) is padding and skipped. kGuard 0: no test (an interior
// tile); 1: the first KW - 1 and the last KW - 1 columns are tested (plo < KW, phi >= UR): a
// row's edge within the kernel's reach; 2: every column. kReg: column p broadcast into a register
// once for its (up to KW) FMAs; else each FMA broadcasts it from memory.
template <int UR, int KW, int CS, int kGuard, bool kReg>
__attribute__((always_inline)) inline void residue(__m512 (&acc)[UR], const float* w,
                                                   const float* x, int64_t plo, int64_t phi) {
  constexpr int P = UR + KW - 1;
  __m512 wv[KW > 0 ? KW : 1];
#pragma GCC unroll 8
  for (int k = 0; k < KW; ++k) wv[k] = _mm512_loadu_ps(w + 16 * k);
#pragma GCC unroll 32
  for (int p = 0; p < P; ++p) {
    if (kGuard == 2 && (p < plo || p >= phi)) continue;
    if (kGuard == 1 && ((p < KW - 1 && p < plo) || (p >= UR && p >= phi))) continue;
    if constexpr (kReg) {
      const __m512 xp = _mm512_set1_ps(x[p * CS]);
#pragma GCC unroll 8
      for (int k = 0; k < KW; ++k) {
        const int u = p - k;
        if (u >= 0 && u < UR) acc[u] = _mm512_fmadd_ps(wv[k], xp, acc[u]);
      }
    } else {
#pragma GCC unroll 8
      for (int k = 0; k < KW; ++k) {
        const int u = p - k;
        if (u >= 0 && u < UR) fma_bcast(acc[u], wv[k], x + p * CS);
      }
    }
  }
}

// acc[u] (16 output channels at output u of the tile) += sum over tap rows t, channels c and the
// K row taps of W[c][t][k] * src[c][row t][col0 + u * CS + k * CS / R]: with R = 1 tap k reads
// column col0 + (u + k) * CS (unit stride, or dilation = stride = CS); with R = CS (stride CS,
// dilation 1) tap k = r + CS * j reads col0 + r + (u + j) * CS, the K taps split by residue r
// into R walks of CS-apart columns, r columns apart. The packed weights of (t, c) list the taps
// residue by residue. plo[r], phi[r]: residue r's columns inside the row.
template <int UR, int K, int CS, int R, int kGuard, bool kReg>
inline void accumulate(__m512 (&acc)[UR], const ClRow& r, const int64_t* plo, const int64_t* phi) {
  constexpr int KW0 = residue_taps(K, R, 0), KW1 = residue_taps(K, R, 1);
  const float* const src = r.src;
  const int64_t C = r.C, ldc = r.ldc, wc = r.wc, rows = r.rows;
  for (int64_t t = 0; t < rows; ++t) {
    const float* wt = r.w + r.woff[t];
    // Index of column col0 of this tap row in channel 0.
    int64_t at = r.soff[t] + r.col0;
    for (int64_t c = 0; c < C; ++c, wt += wc, at += ldc) {
      residue<UR, KW0, CS, kGuard, kReg>(acc, wt, src + at, plo[0], phi[0]);
      if constexpr (R == 2 && KW1 > 0)
        residue<UR, KW1, CS, kGuard, kReg>(acc, wt + 16 * KW0, src + at + 1, plo[1], phi[1]);
    }
  }
}

template <int UR, int K, int CS, int R, bool kReg>
void row_tile(const ClRow& r, float* out, int64_t ld_out, int64_t nch, int64_t os) {
  // Residue q's column p reads input column col0 + q + p * CS: inside the row for p in
  // [plo[q], phi[q]), of its UR + KW_q - 1 columns.
  int64_t plo[R], phi[R];
  bool inner = true, near = true;
  for (int q = 0; q < R; ++q) {
    const int64_t kw = residue_taps(K, R, q), P = UR + kw - 1, c0 = r.col0 + q;
    plo[q] = c0 < 0 ? (CS - 1 - c0) / CS : 0;
    phi[q] = r.width > c0 ? min64(P, (r.width - c0 + CS - 1) / CS) : 0;
    if (kw == 0) continue;
    inner = inner && plo[q] == 0 && phi[q] == P;
    near = near && plo[q] < kw && phi[q] >= UR;
  }
  __m512 acc[UR];
#pragma GCC unroll 16
  for (int u = 0; u < UR; ++u) acc[u] = _mm512_setzero_ps();
  if (inner) {
    accumulate<UR, K, CS, R, 0, kReg>(acc, r, plo, phi);
  } else if (near) {
    accumulate<UR, K, CS, R, 1, kReg>(acc, r, plo, phi);
  } else {
    accumulate<UR, K, CS, R, 2, kReg>(acc, r, plo, phi);
  }
  cl_store_tile<UR>(acc, out, ld_out, nch, os);
}

using RowTile = void (*)(const ClRow&, float*, int64_t, int64_t, int64_t);

template <int K, int CS, int R, bool kReg>
constexpr RowTile kRowTiles[kClMaxRow + 1] = {
    nullptr,
    row_tile<1, K, CS, R, kReg>,
    row_tile<2, K, CS, R, kReg>,
    row_tile<3, K, CS, R, kReg>,
    row_tile<4, K, CS, R, kReg>,
    row_tile<5, K, CS, R, kReg>,
    row_tile<6, K, CS, R, kReg>,
    row_tile<7, K, CS, R, kReg>,
    row_tile<8, K, CS, R, kReg>,
    row_tile<9, K, CS, R, kReg>,
    row_tile<10, K, CS, R, kReg>,
    row_tile<11, K, CS, R, kReg>,
    row_tile<12, K, CS, R, kReg>,
    row_tile<13, K, CS, R, kReg>,
    row_tile<14, K, CS, R, kReg>,
    row_tile<15, K, CS, R, kReg>,
    row_tile<16, K, CS, R, kReg>,
};

// The tile of K taps: where every column feeds one FMA (one tap per residue), a register saves no
// load, and only the folded form is compiled.
template <int K, int CS, int R>
RowTile tile_of(int64_t ur, bool reg) {
  if constexpr (residue_taps(K, R, 0) > 1) {
    if (reg) return kRowTiles<K, CS, R, true>[ur];
  }
  return kRowTiles<K, CS, R, false>[ur];
}

template <int CS, int R>
RowTile row_tile_for(int64_t ur, int64_t kw, bool reg) {
  switch (kw) {
    case 1:
      return tile_of<1, CS, R>(ur, reg);
    case 2:
      return tile_of<2, CS, R>(ur, reg);
    case 3:
      return tile_of<3, CS, R>(ur, reg);
    case 4:
      return tile_of<4, CS, R>(ur, reg);
    case 5:
      return tile_of<5, CS, R>(ur, reg);
    case 6:
      return tile_of<6, CS, R>(ur, reg);
    default:
      return tile_of<7, CS, R>(ur, reg);
  }
}

}  // namespace

void cl_direct_row_avx512(int64_t ur, int64_t kw, const ClRow& r, float* out, int64_t ld_out,
                          int64_t nch, int64_t os) {
  const RowTile tile = r.cs == 1         ? row_tile_for<1, 1>(ur, kw, r.bcast_reg)
                       : r.residues == 2 ? row_tile_for<2, 2>(ur, kw, r.bcast_reg)
                                         : row_tile_for<2, 1>(ur, kw, r.bcast_reg);
  tile(r, out, ld_out, nch, os);
}

}  // namespace aclnn_cpu::conv

#if !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#include "gemm/target_end.h"
