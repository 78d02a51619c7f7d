// Source::convert's AVX2 form (F16C for the fp16 kinds), like direct_convert_avx512 on AVX-512
// CPUs: element by element through Source::value, an AVX2-only CPU spent more time converting
// an fp16 or bf16 convolution's bands (and rounding USE_FP16 / HF32 operands) than computing.
// Reached only after the runtime CPU check (gemm::isa(): AVX2, FMA and F16C).
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "conv/engine/source.h"

#include "gemm/target_avx2_begin.h"

#include "gemm/avx2_util.h"

namespace aclnn_cpu::conv {

namespace {

// 8 fp16 or bf16 values as fp32 (bf16: its bits are the fp32's top half).
inline __m256 widen8(bool bf16, __m128i h) {
  return bf16 ? _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16))
              : _mm256_cvtph_ps(h);
}

// Each lane with its low 12 mantissa bits rounded off to nearest even, inf and NaN unchanged:
// half.h round_to_hf32.
inline __m256 round_hf32(__m256 v) {
  const __m256i x = _mm256_castps_si256(v);
  const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(x, 12), _mm256_set1_epi32(1));
  const __m256i r =
      _mm256_and_si256(_mm256_add_epi32(_mm256_add_epi32(x, _mm256_set1_epi32(0x7FF)), odd),
                       _mm256_set1_epi32(~0xFFF));
  const __m256i exp = _mm256_set1_epi32(0x7F800000);
  const __m256i special = _mm256_cmpeq_epi32(_mm256_and_si256(x, exp), exp);
  return _mm256_castsi256_ps(_mm256_blendv_epi8(r, x, special));
}

// What each kind is read as: fp32 (4 bytes, maybe rounded) or a 16-bit format (2 bytes, widened).
template <SrcKind K>
constexpr bool kReadsF32 = K == SrcKind::kF32 || K == SrcKind::kF32Hf32 || K == SrcKind::kF32Fp16;
template <SrcKind K>
constexpr int64_t kBytes = kReadsF32<K> ? 4 : 2;

// 8 lanes as read (fp32, or 16-bit values widened) with kind K's operand rounding applied.
template <SrcKind K>
inline __m256 rounded(__m256 v) {
  if constexpr (K == SrcKind::kF32Hf32) return round_hf32(v);
  if constexpr (K == SrcKind::kF32Fp16 || K == SrcKind::kBF16Fp16) return gemm::round_to_fp16(v);
  return v;
}

// 8 elements of kind K at `src` as fp32, as stored (not rounded).
template <SrcKind K>
inline __m256 stored8(const void* src) {
  if constexpr (kReadsF32<K>) return _mm256_loadu_ps(static_cast<const float*>(src));
  return widen8(K != SrcKind::kF16, _mm_loadu_si128(static_cast<const __m128i*>(src)));
}
// 8 elements of kind K at `src` as fp32, converted and rounded.
template <SrcKind K>
inline __m256 load8(const void* src) {
  return rounded<K>(stored8<K>(src));
}

// The first `rem` (1 .. 7) elements of kind K at `src` as fp32 lanes (the rest zero), as stored,
// reading nothing past them: masked loads (16-bit kinds: whole pairs as 32-bit lanes, an odd
// last element inserted), never a staging copy in memory (its narrow stores would stall the
// vector load that reads them back).
template <SrcKind K>
inline __m256 stored_tail(const void* src, int64_t rem) {
  if constexpr (kReadsF32<K>)
    return _mm256_maskload_ps(static_cast<const float*>(src), gemm::first_lanes8(rem));
  const __m128i pairs = _mm256_castsi256_si128(gemm::first_lanes8(rem / 2));
  __m128i h = _mm_maskload_epi32(static_cast<const int*>(src), pairs);
  const int last = static_cast<const uint16_t*>(src)[rem - 1];
  switch (rem) {  // the lane index of _mm_insert_epi16 is an immediate
    case 1:
      h = _mm_insert_epi16(h, last, 0);
      break;
    case 3:
      h = _mm_insert_epi16(h, last, 2);
      break;
    case 5:
      h = _mm_insert_epi16(h, last, 4);
      break;
    case 7:
      h = _mm_insert_epi16(h, last, 6);
      break;
    default:
      break;
  }
  return widen8(K != SrcKind::kF16, h);
}
// The same, converted and rounded.
template <SrcKind K>
inline __m256 load_tail(const void* src, int64_t rem) {
  return rounded<K>(stored_tail<K>(src, rem));
}

// Calls f(KindTag<K>{}) for the kind K of `kind`, so that the loops below decide it once per
// call, not per vector; nothing for the 8-bit kinds (Source::convert and transpose_convert keep
// them away from here).
template <SrcKind K>
struct KindTag {};
template <typename F>
void with_kind(SrcKind kind, F&& f) {
  switch (kind) {
    case SrcKind::kF32:
      return f(KindTag<SrcKind::kF32>{});
    case SrcKind::kF32Hf32:
      return f(KindTag<SrcKind::kF32Hf32>{});
    case SrcKind::kF32Fp16:
      return f(KindTag<SrcKind::kF32Fp16>{});
    case SrcKind::kF16:
      return f(KindTag<SrcKind::kF16>{});
    case SrcKind::kBF16:
      return f(KindTag<SrcKind::kBF16>{});
    case SrcKind::kBF16Fp16:
      return f(KindTag<SrcKind::kBF16Fp16>{});
    default:
      return;
  }
}

// How far ahead of the loads a long run is fetched into L1, in bytes. A plane read from memory is a
// new stream the hardware prefetcher ramps up on only after a few misses, and the conversion loop
// has no compute to hide them behind: 1 KB ahead made the depthwise USE_FP16 call faster and left
// the other 16-bit calls level or faster; 2 KB was level, 512 B and 4 KB less (measured:
// bench/RESULTS.md, design source_avx2.ahead). (A prefetch never faults past the end of a run.)
constexpr int64_t kAhead = 1024;

// Short runs are the common call (one padded-grid row of a few dozen elements a call): a tail
// of a run of 8 or more is its last 8 elements again (the overlap is stored twice with the same
// values), else one masked load and store. Long runs: 16 elements a step, kAhead fetched.
template <SrcKind K>
void convert_kind(const void* src, int64_t n, float* dst) {
  const char* s = static_cast<const char*>(src);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    _mm_prefetch(s + i * kBytes<K> + kAhead, _MM_HINT_T0);
    _mm256_storeu_ps(dst + i, load8<K>(s + i * kBytes<K>));
    _mm256_storeu_ps(dst + i + 8, load8<K>(s + (i + 8) * kBytes<K>));
  }
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, load8<K>(s + i * kBytes<K>));
  if (i == n) return;
  if (n >= 8) {
    _mm256_storeu_ps(dst + n - 8, load8<K>(s + (n - 8) * kBytes<K>));
  } else {
    _mm256_maskstore_ps(dst + i, gemm::first_lanes8(n - i), load_tail<K>(s + i * kBytes<K>, n - i));
  }
}

// The elements [i, i + 16) of kind K at `s` (fewer at the end: the rest read as zero), as stored.
template <SrcKind K>
inline void stored16(const char* s, int64_t i, int64_t n, __m256 (&v)[2]) {
  for (int h = 0; h < 2; ++h) {
    const int64_t at = i + 8 * h, rem = n - at;
    v[h] = rem >= 8  ? stored8<K>(s + at * kBytes<K>)
           : rem > 0 ? stored_tail<K>(s + at * kBytes<K>, rem)
                     : _mm256_setzero_ps();
  }
}

// convert_kind, summing the values as stored in double as it goes: element i into lane i % 16
// of four 4-double accumulators, the 16 lanes added in order at the end (sum_run_f32's order).
template <SrcKind K>
double convert_sum_kind(const void* src, int64_t n, float* dst) {
  const char* s = static_cast<const char*>(src);
  __m256d acc[4] = {_mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd(),
                    _mm256_setzero_pd()};
  for (int64_t i = 0; i < n; i += 16) {
    __m256 v[2];
    _mm_prefetch(s + i * kBytes<K> + kAhead, _MM_HINT_T0);
    stored16<K>(s, i, n, v);
    for (int h = 0; h < 2; ++h) {
      acc[2 * h] = _mm256_add_pd(acc[2 * h], _mm256_cvtps_pd(_mm256_castps256_ps128(v[h])));
      acc[2 * h + 1] =
          _mm256_add_pd(acc[2 * h + 1], _mm256_cvtps_pd(_mm256_extractf128_ps(v[h], 1)));
      const int64_t rem = n - (i + 8 * h);
      if (rem >= 8) {
        _mm256_storeu_ps(dst + i + 8 * h, rounded<K>(v[h]));
      } else if (rem > 0) {
        _mm256_maskstore_ps(dst + i + 8 * h, gemm::first_lanes8(rem), rounded<K>(v[h]));
      }
    }
  }
  alignas(32) double lanes[16];
  for (int a = 0; a < 4; ++a) _mm256_store_pd(lanes + 4 * a, acc[a]);
  double sum = 0.0;
  for (double l : lanes) sum += l;
  return sum;
}

// 8 x 8 blocks, each row converted as it is loaded (a short last block of columns through
// load_tail), transposed in registers, stored as columns.
template <SrcKind K>
void transpose_convert_kind(const void* src, int64_t ld_src, int64_t rows, int64_t cols, float* dst,
                            int64_t ld_dst, int64_t width) {
  const char* s = static_cast<const char*>(src);
  for (int64_t r0 = 0; r0 < width; r0 += 8)
    for (int64_t c0 = 0; c0 < cols; c0 += 8) {
      const int64_t nc = cols - c0 < 8 ? cols - c0 : 8;
      __m256 v[8];
      for (int64_t i = 0; i < 8; ++i) {
        const char* p = s + ((r0 + i) * ld_src + c0) * kBytes<K>;
        v[i] = r0 + i >= rows ? _mm256_setzero_ps() : nc == 8 ? load8<K>(p) : load_tail<K>(p, nc);
      }
      gemm::transpose8(v);
      for (int64_t i = 0; i < nc; ++i) _mm256_store_ps(dst + (c0 + i) * ld_dst + r0, v[i]);
    }
}

}  // namespace

void convert_avx2(SrcKind kind, const void* src, int64_t n, float* dst) {
  with_kind(kind, [&]<SrcKind K>(KindTag<K>) { convert_kind<K>(src, n, dst); });
}

double convert_sum_avx2(SrcKind kind, const void* src, int64_t n, float* dst) {
  double sum = 0.0;
  with_kind(kind, [&]<SrcKind K>(KindTag<K>) { sum = convert_sum_kind<K>(src, n, dst); });
  return sum;
}

void transpose_convert_avx2(SrcKind kind, const void* src, int64_t ld_src, int64_t rows,
                            int64_t cols, float* dst, int64_t ld_dst, int64_t width) {
  with_kind(kind, [&]<SrcKind K>(KindTag<K>) {
    transpose_convert_kind<K>(src, ld_src, rows, cols, dst, ld_dst, width);
  });
}

void narrow_avx2(bool bf16, const float* src, int64_t n, uint16_t* dst) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                     gemm::narrow8(bf16, _mm256_loadu_ps(src + i)));
  if (i == n) return;
  // The tail through 8-element staging copies: nothing read or written past element n - 1.
  alignas(32) float in[8] = {};
  alignas(16) uint16_t out[8];
  std::memcpy(in, src + i, static_cast<size_t>(n - i) * sizeof(float));
  _mm_store_si128(reinterpret_cast<__m128i*>(out), gemm::narrow8(bf16, _mm256_load_ps(in)));
  std::memcpy(dst + i, out, static_cast<size_t>(n - i) * sizeof(uint16_t));
}

}  // namespace aclnn_cpu::conv

#include "gemm/target_end.h"
