// AVX-512 fp32 GEMM: C[M, N] (+)= A[M, K] * B[K, N], single-threaded, packed, cache-blocked.
//
// Register tile (micro-kernel): 8 rows x 48 columns of C = 24 zmm accumulators. Per k step it
// loads 3 vectors of B (48 columns) and broadcasts 8 scalars of A (folded into the FMAs as
// {1to16} memory operands): 24 FMAs for 11 loads, so the FMA pipes, not the load ports, bound
// it; 24 independent accumulators hide the 4-cycle FMA latency twice over. M = 8 divides every
// channel count of the benchmark problems (the A side), N = 48 is the long, flexible side
// (output positions or im2col rows).
//
// Cache blocking (Zen 4: L1d 32 KiB, L2 1 MiB per core), loop order pc -> jc -> ic -> ir -> jr:
//   B block  KC x NC = 256 x 480 floats = 480 KiB, packed once per (pc, jc), lives in L2;
//   A block  MC x KC = 128 x 256 floats = 128 KiB, packed per (pc, jc, ic);
//   inner    one A micro-panel (8 x 256 = 8 KiB) stays in L1 while the B micro-panels
//            (256 x 48 = 48 KiB each) stream from L2 at ~16 B/cycle (L2 delivers 64).
// Packed formats: Ap[panel][k][8] (zero rows past M), Bp[panel][k][48] (zero columns past N).
//
// Packing reads strided views. B with unit column stride (row-major, "NN") is a row copy; B with
// unit row stride (a transposed view such as col^T in the weight gradient) is packed through
// 16 x 16 in-register transposes so it costs a fraction of the FMA work even when M is only 64.
//
// The functions are compiled for AVX-512 with a target pragma and called only after the runtime
// CPU check in sgemm.cpp; no standard-library template is instantiated inside the pragma region
// (such instantiations could be merged with the generic ones elsewhere by the linker).
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "gemm/sgemm.h"
#include "int_math.h"

// The whole file is compiled for AVX-512.
#include "gemm/target_avx512_begin.h"
// GCC 12's AVX-512 intrinsics start from _mm512_undefined_ps() internally, which
// -Wmaybe-uninitialized reports as a use of an uninitialized value (a known false positive; at -O1,
// as the GEMM test builds it, the same is reported as -Wuninitialized).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include "gemm/avx512_util.h"
#include "gemm/bf16_narrow_avx512.h"
#include "gemm/sgemm_blocked.h"

namespace aclnn_cpu::gemm {
namespace {

constexpr int64_t kMR = 8;
constexpr int64_t kNR = 48;
constexpr int64_t kKC = 256;
constexpr int64_t kMC = 128;  // multiple of kMR
constexpr int64_t kNC = 480;  // multiple of kNR

// How the packers read an operand's elements (Mat): fp32 as stored (F32), fp32 rounded to fp16
// to nearest even and widened back (F32Fp16: Mat::fp16, half.h's round_to_half; F16C's conversion
// is exactly that, so USE_FP16 on fp32 operands costs two conversions per vector in the packing,
// not a pass over a converted copy), or 16-bit bits widened exactly (F16, Bf16: Mat::p16), so a
// 16-bit input is packed straight from the caller's tensor. Each reads 16 (v16, m16: the lanes of
// mask m, zero elsewhere), 8 (v8) or one (one) elements from p.
struct F32 {
  using T = float;
  static __m512 v16(const float* p) { return _mm512_loadu_ps(p); }
  static __m512 m16(__mmask16 m, const float* p) { return _mm512_maskz_loadu_ps(m, p); }
  static __m256 v8(const float* p) { return _mm256_loadu_ps(p); }
  static float one(const float* p) { return *p; }
};
// (The narrower forms go through the 512-bit conversion: F16C's own are not enabled here.)
struct F32Fp16 {
  using T = float;
  static __m512 rnd(__m512 v) {
    return _mm512_cvtph_ps(_mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  }
  static __m512 v16(const float* p) { return rnd(_mm512_loadu_ps(p)); }
  static __m512 m16(__mmask16 m, const float* p) { return rnd(_mm512_maskz_loadu_ps(m, p)); }
  static __m256 v8(const float* p) {
    return _mm512_castps512_ps256(rnd(_mm512_castps256_ps512(_mm256_loadu_ps(p))));
  }
  static float one(const float* p) { return _mm512_cvtss_f32(rnd(_mm512_set1_ps(*p))); }
};
// The 16-bit readers: W::widen turns 16 elements' bits into fp32 lanes.
template <class W>
struct Bits16 {
  using T = uint16_t;
  static __m512 v16(const uint16_t* p) { return W::widen(_mm256_loadu_si256((const __m256i*)p)); }
  static __m512 m16(__mmask16 m, const uint16_t* p) {
    return W::widen(_mm256_maskz_loadu_epi16(m, p));
  }
  static __m256 v8(const uint16_t* p) {
    return _mm512_castps512_ps256(
        W::widen(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i*)p))));
  }
  static float one(const uint16_t* p) { return _mm512_cvtss_f32(m16(1, p)); }
};
struct WidenF16 {
  static __m512 widen(__m256i h) { return _mm512_cvtph_ps(h); }
};
struct WidenBf16 {  // bf16 bits are the top half of the fp32 ones
  static __m512 widen(__m256i h) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
};
using F16 = Bits16<WidenF16>;
using Bf16 = Bits16<WidenBf16>;

// Calls pack(E{}, base) with the reader E of operand m and its element 0 (`base`).
template <class Pack>
void with_reader(const Mat& m, Pack&& pack) {
  if (m.p16) {
    if (m.bf16) return pack(Bf16{}, m.p16);
    return pack(F16{}, m.p16);
  }
  if (m.fp16) return pack(F32Fp16{}, m.p);
  pack(F32{}, m.p);
}

// Ap[p][k][r] = A(i0 + p*8 + r, k0 + k), zero past row m; A's elements from `a` (E::T).
template <class E>
void pack_a_as(const typename E::T* a, const Mat& A, int64_t i0, int64_t m, int64_t k0, int64_t kc,
               float* Ap) {
  for (int64_t p = 0; p < m; p += kMR) {
    const int64_t rows = min64(kMR, m - p);
    const typename E::T* src = a + (i0 + p) * A.rs + k0 * A.cs;
    if (rows == kMR && A.rs == 1) {  // 8 contiguous values per k
      for (int64_t k = 0; k < kc; ++k) _mm256_store_ps(Ap + k * kMR, E::v8(src + k * A.cs));
    } else if (rows == kMR && A.cs == 1) {  // 8 rows contiguous along k: 16 x 16 transposes
      int64_t k = 0;                        // (rows 8..15 zero; the low 8 lanes are kept)
      for (; k + 16 <= kc; k += 16) {
        __m512 r[16];
        for (int i = 0; i < 8; ++i) r[i] = E::v16(src + i * A.rs + k);
        for (int i = 8; i < 16; ++i) r[i] = _mm512_setzero_ps();
        transpose16(r);
        for (int i = 0; i < 16; ++i)
          _mm256_store_ps(Ap + (k + i) * kMR, _mm512_castps512_ps256(r[i]));
      }
      for (; k < kc; ++k)
        for (int64_t i = 0; i < kMR; ++i) Ap[k * kMR + i] = E::one(src + i * A.rs + k);
    } else {
      for (int64_t k = 0; k < kc; ++k) {
        int64_t r = 0;
        for (; r < rows; ++r) Ap[k * kMR + r] = E::one(src + r * A.rs + k * A.cs);
        for (; r < kMR; ++r) Ap[k * kMR + r] = 0.0f;
      }
    }
    Ap += kc * kMR;
  }
}

void pack_a(const Mat& A, int64_t i0, int64_t m, int64_t k0, int64_t kc, float* Ap) {
  with_reader(A, [&](auto e, const auto* a) { pack_a_as<decltype(e)>(a, A, i0, m, k0, kc, Ap); });
}

// Bp[p][k][c] = B(k0 + k, j0 + p*48 + c), zero past column n; B's elements from `b` (E::T).
template <class E>
void pack_b_as(const typename E::T* b, const Mat& B, int64_t k0, int64_t kc, int64_t j0, int64_t n,
               float* Bp) {
  if (B.cs == 1) {
    // Rows of B are contiguous: walk each row of the block once, left to right, dealing its
    // 48-column pieces out to the panels (one sequential stream per row; panel-by-panel order would
    // read 256 rows x 192 bytes at a time, defeating the hardware prefetcher: packing then took a
    // far larger share of the GEMM's time; measured: bench/RESULTS.md, design
    // sgemm_avx512.pack-b-rows).
    const int64_t panels = (n + kNR - 1) / kNR;
    for (int64_t k = 0; k < kc; ++k) {
      const typename E::T* s = b + (k0 + k) * B.rs + j0;
      for (int64_t p = 0; p < panels; ++p) {
        const int64_t cols = min64(kNR, n - p * kNR);
        float* d = Bp + p * kc * kNR + k * kNR;
        if (cols == kNR) {
          _mm512_store_ps(d, E::v16(s + p * kNR));
          _mm512_store_ps(d + 16, E::v16(s + p * kNR + 16));
          _mm512_store_ps(d + 32, E::v16(s + p * kNR + 32));
        } else {
          for (int64_t q = 0; q < 3; ++q)
            _mm512_store_ps(d + 16 * q, E::m16(first_lanes(cols - 16 * q), s + p * kNR + 16 * q));
        }
      }
    }
    return;
  }
  for (int64_t p = 0; p < n; p += kNR) {
    const int64_t cols = min64(kNR, n - p);
    const typename E::T* src = b + k0 * B.rs + (j0 + p) * B.cs;
    if (B.rs == 1) {  // columns of B are contiguous: 16 x 16 transposes
      int64_t c = 0;
      for (; c + 16 <= cols; c += 16) {
        int64_t k = 0;
        for (; k + 16 <= kc; k += 16) {
          __m512 r[16];
          for (int i = 0; i < 16; ++i) r[i] = E::v16(src + (c + i) * B.cs + k);
          transpose16(r);
          for (int i = 0; i < 16; ++i) _mm512_store_ps(Bp + (k + i) * kNR + c, r[i]);
        }
        for (; k < kc; ++k)
          for (int64_t i = 0; i < 16; ++i) Bp[k * kNR + c + i] = E::one(src + (c + i) * B.cs + k);
      }
      for (; c < kNR; ++c)
        for (int64_t k = 0; k < kc; ++k)
          Bp[k * kNR + c] = c < cols ? E::one(src + c * B.cs + k) : 0.0f;
    } else {
      for (int64_t k = 0; k < kc; ++k)
        for (int64_t c = 0; c < kNR; ++c)
          Bp[k * kNR + c] = c < cols ? E::one(src + k * B.rs + c * B.cs) : 0.0f;
    }
    Bp += kc * kNR;
  }
}

void pack_b(const Mat& B, int64_t k0, int64_t kc, int64_t j0, int64_t n, float* Bp) {
  with_reader(B, [&](auto e, const auto* b) { pack_b_as<decltype(e)>(b, B, k0, kc, j0, n, Bp); });
}

// C[0..8, 0..16*NV) (+)= Ap (8 x kc) * Bp (kc x 48, its first 16*NV columns); `rows` x `cols`
// of it are stored. NV = 3 is the full tile; a last panel with at most 32 or 16 valid columns
// runs with NV = 2 or 1, so e.g. N = 196 (a 14 x 14 output) spends 208 columns of work, not 240.
// c = Ap (8 x kc) * Bp (kc x 48, its first 16*NV columns), in registers.
template <int NV>
__attribute__((always_inline)) inline void tile_product(int64_t kc, const float* Ap,
                                                        const float* Bp, __m512 (&c)[kMR][NV]) {
#pragma GCC unroll 8
  for (int i = 0; i < kMR; ++i)
    for (int j = 0; j < NV; ++j) c[i][j] = _mm512_setzero_ps();
  for (int64_t k = 0; k < kc; ++k) {
    __m512 b[NV];
    for (int j = 0; j < NV; ++j) b[j] = _mm512_load_ps(Bp + 16 * j);
#pragma GCC unroll 8
    for (int i = 0; i < kMR; ++i) {
      const __m512 a = _mm512_set1_ps(Ap[i]);
      for (int j = 0; j < NV; ++j) c[i][j] = _mm512_fmadd_ps(a, b[j], c[i][j]);
    }
    Ap += kMR;
    Bp += kNR;
  }
}

template <int NV>
void micro_kernel(int64_t kc, const float* Ap, const float* Bp, bool accumulate, float* C,
                  int64_t ldc, int64_t rows, int64_t cols) {
  __m512 c[kMR][NV];
  tile_product<NV>(kc, Ap, Bp, c);
  if (rows == kMR && cols == 16 * NV) {
#pragma GCC unroll 8
    for (int i = 0; i < kMR; ++i) {
      float* d = C + i * ldc;
      for (int j = 0; j < NV; ++j) {
        if (accumulate) c[i][j] = _mm512_add_ps(c[i][j], _mm512_loadu_ps(d + 16 * j));
        _mm512_storeu_ps(d + 16 * j, c[i][j]);
      }
    }
    return;
  }
  // Edge tile: masked stores of the valid part.
  for (int64_t j = 0; j < NV; ++j) {
    const int64_t left = cols - 16 * j;
    if (left <= 0) break;
    const __mmask16 m = first_lanes(left);
    for (int64_t i = 0; i < rows; ++i) {
      float* d = C + i * ldc + 16 * j;
      __m512 v = c[i][j];
      if (accumulate) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, d));
      _mm512_mask_storeu_ps(d, m, v);
    }
  }
}

// micro_kernel's product stored narrowed (sgemm_packed_narrow: one K block, no accumulation):
// C16[i * ldc + j] = the product rounded to bf16 (`bf16`) or fp16, to nearest even, exactly as
// the engine's narrowing pass (conv::narrow16) rounds it; masked where the tile has fewer rows or
// columns.
template <int NV>
void micro_kernel16(int64_t kc, const float* Ap, const float* Bp, bool bf16, uint16_t* C16,
                    int64_t ldc, int64_t rows, int64_t cols) {
  __m512 c[kMR][NV];
  tile_product<NV>(kc, Ap, Bp, c);
  for (int j = 0; j < NV; ++j) {
    const __mmask16 m = first_lanes(cols - 16 * j);
    for (int64_t i = 0; i < rows; ++i) {
      const __m256i h =
          bf16 ? _mm512_cvtepi32_epi16(bf16_bits_rne(c[i][j]))
               : _mm512_cvtps_ph(c[i][j], _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      _mm256_mask_storeu_epi16(C16 + i * ldc + 16 * j, m, h);
    }
  }
}

// The micro-kernel for a tile with `cols` (1 .. 48) valid columns.
inline void micro_tile(int64_t kc, const float* Ap, const float* Bp, bool accumulate, float* C,
                       int64_t ldc, int64_t rows, int64_t cols) {
  if (cols > 32) return micro_kernel<3>(kc, Ap, Bp, accumulate, C, ldc, rows, cols);
  if (cols > 16) return micro_kernel<2>(kc, Ap, Bp, accumulate, C, ldc, rows, cols);
  micro_kernel<1>(kc, Ap, Bp, accumulate, C, ldc, rows, cols);
}

inline void micro_tile16(int64_t kc, const float* Ap, const float* Bp, bool bf16, uint16_t* C16,
                         int64_t ldc, int64_t rows, int64_t cols) {
  if (cols > 32) return micro_kernel16<3>(kc, Ap, Bp, bf16, C16, ldc, rows, cols);
  if (cols > 16) return micro_kernel16<2>(kc, Ap, Bp, bf16, C16, ldc, rows, cols);
  micro_kernel16<1>(kc, Ap, Bp, bf16, C16, ldc, rows, cols);
}

struct KernelAvx512 {
  static constexpr int64_t kMR = gemm::kMR, kNR = gemm::kNR, kKC = gemm::kKC, kMC = gemm::kMC,
                           kNC = gemm::kNC;
  // One A micro-panel stays in L1 while the B micro-panels stream from L2.
  static constexpr bool kRowPanelsOuter = true;
  static constexpr auto pack_a = &gemm::pack_a, pack_b = &gemm::pack_b;
  static constexpr auto micro_tile = &gemm::micro_tile;
  static constexpr auto micro_tile16 = &gemm::micro_tile16;
};

}  // namespace

const PackedKernel kAvx512Kernel = BlockedGemm<KernelAvx512>::kernel();

}  // namespace aclnn_cpu::gemm

#pragma GCC diagnostic pop
#include "gemm/target_end.h"
