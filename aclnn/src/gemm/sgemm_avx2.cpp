// AVX2 + FMA fp32 GEMM: C[M, N] (+)= A[M, K] * B[K, N], single-threaded, packed, cache-blocked,
// on the same packed formats as the AVX-512 kernel (Ap[panel][k][8], Bp[panel][k][48]), so every
// BPanels source and pack_a_once layout serves both; Mat::fp16 operands rounded as they are packed
// (F16C).
//
// Register tile: 16 ymm registers allow 12 accumulators, so an 8 x 48 panel pair is computed as
// four 4 x 24 sub-tiles. Per k step a sub-tile loads 3 vectors of B and broadcasts 4 scalars of A:
// 12 FMAs for 7 loads (Zen 3 issues 2 FMAs and up to 3 loads per cycle, so the FMA pipes bound
// it), and 12 independent accumulators cover the 4-cycle FMA latency on both pipes (8 needed).
// A 4 x 24 tile is the widest that fits the packed formats (M panels of 8 = 2 x 4, N panels of
// 48 = 2 x 24); a tile row of fewer valid columns runs with 2 or 1 vectors, and a panel with at
// most 4 valid rows or 24 valid columns skips the empty sub-tiles.
//
// Cache blocking (Zen 3: L1d 32 KiB, L2 512 KiB per core), loop order pc -> jc -> ic -> jr -> ir:
//   KC = 128: one B panel pair (128 x 48 = 24 KiB) stays in L1 while the A panels (8 x 128 =
//   4 KiB each) stream past it from L2; B block KC x NC = 128 x 480 = 240 KiB and A block
//   MC x KC = 128 x 128 = 64 KiB fit L2 together.
//
// The functions are compiled for AVX2 + FMA with a target pragma and called only after the
// runtime CPU check in sgemm.cpp; no standard-library template is instantiated inside the pragma
// region (such instantiations could be merged with the generic ones elsewhere by the linker).
#include <immintrin.h>

#include <cstdint>

#include "gemm/sgemm.h"
#include "int_math.h"

#include "gemm/target_avx2_begin.h"

#include "gemm/avx2_util.h"
#include "gemm/sgemm_blocked.h"

namespace aclnn_cpu::gemm {
namespace {

constexpr int64_t kMR = 8;   // packed A panel rows
constexpr int64_t kNR = 48;  // packed B panel columns
constexpr int64_t kKC = 128;
constexpr int64_t kMC = 128;  // multiple of kMR
constexpr int64_t kNC = 480;  // multiple of kNR
static_assert(kKC <= kMaxPanelDepth && kNR == kPanelCols);

// An element as packed: as stored, or (kFp16: a Mat's fp16 flag) rounded to fp16 to nearest even
// and widened back (half.h's round_to_half; F16C's conversion is exactly that), so USE_FP16 on
// fp32 operands costs two conversions per vector in the packing, not a pass over a converted copy.
template <bool kFp16>
inline __m256 rnd(__m256 v) {
  if constexpr (kFp16) return round_to_fp16(v);
  return v;
}
template <bool kFp16>
inline float rnd(float v) {
  if constexpr (kFp16) return _mm256_cvtss_f32(round_to_fp16(_mm256_set1_ps(v)));
  return v;
}

// Ap[p][k][r] = A(i0 + p*8 + r, k0 + k), zero past row m.
template <bool R>
void pack_a_as(const Mat& A, int64_t i0, int64_t m, int64_t k0, int64_t kc, float* Ap) {
  for (int64_t p = 0; p < m; p += kMR) {
    const int64_t rows = min64(kMR, m - p);
    const float* src = A.p + (i0 + p) * A.rs + k0 * A.cs;
    if (rows == kMR && A.rs == 1) {  // 8 contiguous values per k
      for (int64_t k = 0; k < kc; ++k)
        _mm256_store_ps(Ap + k * kMR, rnd<R>(_mm256_loadu_ps(src + k * A.cs)));
    } else if (rows == kMR && A.cs == 1) {  // 8 rows contiguous along k: 8 x 8 transposes
      int64_t k = 0;
      for (; k + 8 <= kc; k += 8) {
        __m256 r[8];
        for (int i = 0; i < 8; ++i) r[i] = rnd<R>(_mm256_loadu_ps(src + i * A.rs + k));
        transpose8(r);
        for (int i = 0; i < 8; ++i) _mm256_store_ps(Ap + (k + i) * kMR, r[i]);
      }
      for (; k < kc; ++k)
        for (int64_t i = 0; i < kMR; ++i) Ap[k * kMR + i] = rnd<R>(src[i * A.rs + k]);
    } else {
      for (int64_t k = 0; k < kc; ++k) {
        int64_t r = 0;
        for (; r < rows; ++r) Ap[k * kMR + r] = rnd<R>(src[r * A.rs + k * A.cs]);
        for (; r < kMR; ++r) Ap[k * kMR + r] = 0.0f;
      }
    }
    Ap += kc * kMR;
  }
}

void pack_a(const Mat& A, int64_t i0, int64_t m, int64_t k0, int64_t kc, float* Ap) {
  if (A.fp16) return pack_a_as<true>(A, i0, m, k0, kc, Ap);
  pack_a_as<false>(A, i0, m, k0, kc, Ap);
}

// Bp[p][k][c] = B(k0 + k, j0 + p*48 + c), zero past column n; B with unit column stride.
template <bool R>
void pack_b_rows(const Mat& B, int64_t k0, int64_t kc, int64_t j0, int64_t n, float* Bp) {
  // Each row of the block is read once, left to right (one sequential stream per row), and dealt
  // out to the panels 48 columns at a time (see sgemm_avx512.cpp for the measurement).
  const int64_t panels = (n + kNR - 1) / kNR;
  for (int64_t k = 0; k < kc; ++k) {
    const float* s = B.p + (k0 + k) * B.rs + j0;
    for (int64_t p = 0; p < panels; ++p) {
      const int64_t cols = min64(kNR, n - p * kNR);
      float* d = Bp + p * kc * kNR + k * kNR;
      const float* sp = s + p * kNR;
      if (cols == kNR) {
        for (int q = 0; q < 6; ++q) _mm256_store_ps(d + 8 * q, rnd<R>(_mm256_loadu_ps(sp + 8 * q)));
      } else {
        for (int64_t q = 0; q < 6; ++q)  // masked-off lanes read nothing and load zero
          _mm256_store_ps(d + 8 * q,
                          rnd<R>(_mm256_maskload_ps(sp + 8 * q, first_lanes8(cols - 8 * q))));
      }
    }
  }
}

// The same for B with unit row stride (a transposed view): 8 x 8 transposes.
template <bool R>
void pack_b_cols(const Mat& B, int64_t k0, int64_t kc, int64_t j0, int64_t n, float* Bp) {
  for (int64_t p = 0; p < n; p += kNR) {
    const int64_t cols = min64(kNR, n - p);
    const float* src = B.p + k0 * B.rs + (j0 + p) * B.cs;
    int64_t c = 0;
    for (; c + 8 <= cols; c += 8) {
      int64_t k = 0;
      for (; k + 8 <= kc; k += 8) {
        __m256 r[8];
        for (int i = 0; i < 8; ++i) r[i] = rnd<R>(_mm256_loadu_ps(src + (c + i) * B.cs + k));
        transpose8(r);
        for (int i = 0; i < 8; ++i) _mm256_store_ps(Bp + (k + i) * kNR + c, r[i]);
      }
      for (; k < kc; ++k)
        for (int64_t i = 0; i < 8; ++i) Bp[k * kNR + c + i] = rnd<R>(src[(c + i) * B.cs + k]);
    }
    for (; c < kNR; ++c)
      for (int64_t k = 0; k < kc; ++k)
        Bp[k * kNR + c] = c < cols ? rnd<R>(src[c * B.cs + k]) : 0.0f;
    Bp += kc * kNR;
  }
}

// Neither stride unit: element by element.
template <bool R>
void pack_b_any(const Mat& B, int64_t k0, int64_t kc, int64_t j0, int64_t n, float* Bp) {
  for (int64_t p = 0; p < n; p += kNR) {
    const int64_t cols = min64(kNR, n - p);
    const float* src = B.p + k0 * B.rs + (j0 + p) * B.cs;
    for (int64_t k = 0; k < kc; ++k)
      for (int64_t c = 0; c < kNR; ++c)
        Bp[k * kNR + c] = c < cols ? rnd<R>(src[k * B.rs + c * B.cs]) : 0.0f;
    Bp += kc * kNR;
  }
}

template <bool R>
void pack_b_as(const Mat& B, int64_t k0, int64_t kc, int64_t j0, int64_t n, float* Bp) {
  if (B.cs == 1) return pack_b_rows<R>(B, k0, kc, j0, n, Bp);
  if (B.rs == 1) return pack_b_cols<R>(B, k0, kc, j0, n, Bp);
  pack_b_any<R>(B, k0, kc, j0, n, Bp);
}

void pack_b(const Mat& B, int64_t k0, int64_t kc, int64_t j0, int64_t n, float* Bp) {
  if (B.fp16) return pack_b_as<true>(B, k0, kc, j0, n, Bp);
  pack_b_as<false>(B, k0, kc, j0, n, Bp);
}

// C[0..4, 0..8*NV) (+)= Ap (4 rows of an 8-row panel, kc deep) * Bp (8*NV columns of a 48-column
// panel); `rows` x `cols` of it are stored.
template <int NV>
void micro_kernel(int64_t kc, const float* Ap, const float* Bp, bool accumulate, float* C,
                  int64_t ldc, int64_t rows, int64_t cols) {
  __m256 c[4][NV];
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < NV; ++j) c[i][j] = _mm256_setzero_ps();
#pragma GCC unroll 4
  for (int64_t k = 0; k < kc; ++k) {
    __m256 b[NV];
    for (int j = 0; j < NV; ++j) b[j] = _mm256_load_ps(Bp + 8 * j);
    for (int i = 0; i < 4; ++i) {
      const __m256 a = _mm256_broadcast_ss(Ap + i);
      for (int j = 0; j < NV; ++j) c[i][j] = _mm256_fmadd_ps(a, b[j], c[i][j]);
    }
    Ap += kMR;
    Bp += kNR;
  }
  if (rows == 4 && cols == 8 * NV) {
    for (int i = 0; i < 4; ++i) {
      float* d = C + i * ldc;
      for (int j = 0; j < NV; ++j) {
        if (accumulate) c[i][j] = _mm256_add_ps(c[i][j], _mm256_loadu_ps(d + 8 * j));
        _mm256_storeu_ps(d + 8 * j, c[i][j]);
      }
    }
    return;
  }
  // Edge tile: masked loads and stores of the valid part.
  for (int j = 0; j < NV; ++j) {
    const int64_t left = cols - 8 * j;
    if (left <= 0) break;
    const __m256i m = first_lanes8(left);
    for (int64_t i = 0; i < rows; ++i) {
      float* d = C + i * ldc + 8 * j;
      __m256 v = c[i][j];
      if (accumulate) v = _mm256_add_ps(v, _mm256_maskload_ps(d, m));
      _mm256_maskstore_ps(d, m, v);
    }
  }
}

// A 4-row sub-tile with `cols` (1 .. 24) valid columns.
inline void sub_tile(int64_t kc, const float* Ap, const float* Bp, bool accumulate, float* C,
                     int64_t ldc, int64_t rows, int64_t cols) {
  if (cols > 16) return micro_kernel<3>(kc, Ap, Bp, accumulate, C, ldc, rows, cols);
  if (cols > 8) return micro_kernel<2>(kc, Ap, Bp, accumulate, C, ldc, rows, cols);
  micro_kernel<1>(kc, Ap, Bp, accumulate, C, ldc, rows, cols);
}

// One 8 x 48 tile (`rows` x `cols` valid) as up to four 4 x 24 sub-tiles.
inline void micro_tile(int64_t kc, const float* Ap, const float* Bp, bool accumulate, float* C,
                       int64_t ldc, int64_t rows, int64_t cols) {
  for (int64_t h = 0; h < 2 && 4 * h < rows; ++h) {
    const int64_t r = min64(4, rows - 4 * h);
    for (int64_t q = 0; q < 2 && 24 * q < cols; ++q)
      sub_tile(kc, Ap + 4 * h, Bp + 24 * q, accumulate, C + 4 * h * ldc + 24 * q, ldc, r,
               min64(24, cols - 24 * q));
  }
}

struct KernelAvx2 {
  static constexpr int64_t kMR = gemm::kMR, kNR = gemm::kNR, kKC = gemm::kKC, kMC = gemm::kMC,
                           kNC = gemm::kNC;
  // One B panel pair stays in L1 while the A panels stream past it from L2.
  static constexpr bool kRowPanelsOuter = false;
  static constexpr auto pack_a = &gemm::pack_a, pack_b = &gemm::pack_b;
  static constexpr auto micro_tile = &gemm::micro_tile;
};

}  // namespace

const PackedKernel kAvx2Kernel = BlockedGemm<KernelAvx2>::kernel();
}  // namespace aclnn_cpu::gemm

#include "gemm/target_end.h"
