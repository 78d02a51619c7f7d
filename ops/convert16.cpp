#include "ops/convert16.h"

#include <immintrin.h>

#include "aclnn/aclnn_cpu_isa.h"
#include "tensor/error.h"

namespace aclgrad::ops::convert16 {

namespace {

// The arrays are passed as raw bits: Half and BFloat16 are one uint16_t each.
struct Kernels {
  void (*widen_half)(const uint16_t*, float*, int64_t);
  void (*widen_bf16)(const uint16_t*, float*, int64_t);
  void (*narrow_half)(const float*, uint16_t*, int64_t);
  void (*narrow_bf16)(const float*, uint16_t*, int64_t);
};

// ---- scalar (tensor/half.h), also the tails of the vector loops ----

void widen_half_scalar(const uint16_t* s, float* d, int64_t n) {
  for (int64_t i = 0; i < n; ++i) d[i] = detail::half_bits_to_float(s[i]);
}
void widen_bf16_scalar(const uint16_t* s, float* d, int64_t n) {
  for (int64_t i = 0; i < n; ++i) d[i] = detail::bf16_bits_to_float(s[i]);
}
void narrow_half_scalar(const float* s, uint16_t* d, int64_t n) {
  for (int64_t i = 0; i < n; ++i) d[i] = detail::float_to_half_bits(s[i]);
}
void narrow_bf16_scalar(const float* s, uint16_t* d, int64_t n) {
  for (int64_t i = 0; i < n; ++i) d[i] = detail::float_to_bf16_bits(s[i]);
}

// vcvtps2ph's immediate: round to nearest even, no exception flags; MXCSR is not consulted.
constexpr int kRoundNearest = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;

// ---- AVX2 + F16C ----

__attribute__((target("avx2,f16c"))) void widen_half_avx2(const uint16_t* s, float* d, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
    _mm256_storeu_ps(d + i, _mm256_cvtph_ps(h));
  }
  widen_half_scalar(s + i, d + i, n - i);
}

__attribute__((target("avx2,f16c"))) void narrow_half_avx2(const float* s, uint16_t* d, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(s + i), kRoundNearest);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i), h);
  }
  narrow_half_scalar(s + i, d + i, n - i);
}

__attribute__((target("avx2"))) void widen_bf16_avx2(const uint16_t* s, float* d, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i w =
        _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i), _mm256_slli_epi32(w, 16));
  }
  widen_bf16_scalar(s + i, d + i, n - i);
}

// float_to_bf16_bits in 8 lanes, each result in the low 16 bits of its 32-bit lane.
__attribute__((target("avx2"))) inline __m256i bf16_rne_avx2(__m256i x) {
  const __m256i abs = _mm256_and_si256(x, _mm256_set1_epi32(0x7fffffff));
  const __m256i nan = _mm256_cmpgt_epi32(abs, _mm256_set1_epi32(0x7f800000));
  const __m256i high = _mm256_srli_epi32(x, 16);
  const __m256i odd = _mm256_and_si256(high, _mm256_set1_epi32(1));
  const __m256i biased = _mm256_add_epi32(_mm256_add_epi32(x, _mm256_set1_epi32(0x7fff)), odd);
  const __m256i quiet = _mm256_or_si256(high, _mm256_set1_epi32(0x40));
  return _mm256_blendv_epi8(_mm256_srli_epi32(biased, 16), quiet, nan);
}

__attribute__((target("avx2"))) void narrow_bf16_avx2(const float* s, uint16_t* d, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i a = bf16_rne_avx2(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i)));
    const __m256i b =
        bf16_rne_avx2(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i + 8)));
    // packus interleaves 128-bit halves (a0-3 b0-3 a4-7 b4-7); the permute puts them in order.
    // Every lane is in [0, 0xffff], so the unsigned saturation never changes a value.
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(a, b), 0xd8);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i), packed);
  }
  narrow_bf16_scalar(s + i, d + i, n - i);
}

// ---- AVX-512F ----

__attribute__((target("avx512f"))) void widen_half_avx512(const uint16_t* s, float* d, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i));
    _mm512_storeu_ps(d + i, _mm512_cvtph_ps(h));
  }
  widen_half_scalar(s + i, d + i, n - i);
}

__attribute__((target("avx512f"))) void narrow_half_avx512(const float* s, uint16_t* d, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i h = _mm512_cvtps_ph(_mm512_loadu_ps(s + i), kRoundNearest);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i), h);
  }
  narrow_half_scalar(s + i, d + i, n - i);
}

__attribute__((target("avx512f"))) void widen_bf16_avx512(const uint16_t* s, float* d, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i w =
        _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i)));
    _mm512_storeu_si512(d + i, _mm512_slli_epi32(w, 16));
  }
  widen_bf16_scalar(s + i, d + i, n - i);
}

// float_to_bf16_bits in 16 lanes, narrowed to 16 bits.
__attribute__((target("avx512f"))) inline __m256i bf16_rne_avx512(__m512i x) {
  const __m512i abs = _mm512_and_si512(x, _mm512_set1_epi32(0x7fffffff));
  const __mmask16 nan = _mm512_cmpgt_epu32_mask(abs, _mm512_set1_epi32(0x7f800000));
  const __m512i high = _mm512_srli_epi32(x, 16);
  const __m512i odd = _mm512_and_si512(high, _mm512_set1_epi32(1));
  const __m512i biased = _mm512_add_epi32(_mm512_add_epi32(x, _mm512_set1_epi32(0x7fff)), odd);
  const __m512i quiet = _mm512_or_si512(high, _mm512_set1_epi32(0x40));
  return _mm512_cvtepi32_epi16(_mm512_mask_blend_epi32(nan, _mm512_srli_epi32(biased, 16), quiet));
}

__attribute__((target("avx512f"))) void narrow_bf16_avx512(const float* s, uint16_t* d, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i x = _mm512_loadu_si512(s + i);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i), bf16_rne_avx512(x));
  }
  narrow_bf16_scalar(s + i, d + i, n - i);
}

// ---- AVX512_BF16 ----

// vcvtneps2bf16 rounds to nearest even and quiets NaN as the scalar path does, but reads float32
// subnormals as zero whatever MXCSR says; a vector holding one is narrowed in integers instead.
__attribute__((target("avx512f,avx512bf16"))) void narrow_bf16_avx512bf16(const float* s,
                                                                          uint16_t* d, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i x = _mm512_loadu_si512(s + i);
    const __mmask16 subnormal = _mm512_testn_epi32_mask(x, _mm512_set1_epi32(0x7f800000)) &
                                _mm512_test_epi32_mask(x, _mm512_set1_epi32(0x007fffff));
    __m256i h;
    if (subnormal == 0) [[likely]] {
      h = reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(_mm512_castsi512_ps(x)));
    } else {
      h = bf16_rne_avx512(x);
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i), h);
  }
  narrow_bf16_scalar(s + i, d + i, n - i);
}

constexpr Kernels kScalar{widen_half_scalar, widen_bf16_scalar, narrow_half_scalar,
                          narrow_bf16_scalar};
constexpr Kernels kAvx2{widen_half_avx2, widen_bf16_avx2, narrow_half_avx2, narrow_bf16_avx2};
constexpr Kernels kAvx512{widen_half_avx512, widen_bf16_avx512, narrow_half_avx512,
                          narrow_bf16_avx512};
constexpr Kernels kAvx512Bf16{widen_half_avx512, widen_bf16_avx512, narrow_half_avx512,
                              narrow_bf16_avx512bf16};

const Kernels& kernels_of(Variant v) {
  check(may_run(v), "convert16: variant ", name(v), " may not run in this process (",
        aclnnCpuDescribe(), ")");
  switch (v) {
    case Variant::Avx2F16c:
      return kAvx2;
    case Variant::Avx512:
      return kAvx512;
    case Variant::Avx512Bf16:
      return kAvx512Bf16;
    default:
      return kScalar;
  }
}

const Kernels& chosen_kernels() {
  static const Kernels& k = kernels_of(chosen());
  return k;
}

const uint16_t* bits(const Half* p) {
  return reinterpret_cast<const uint16_t*>(p);
}
const uint16_t* bits(const BFloat16* p) {
  return reinterpret_cast<const uint16_t*>(p);
}
uint16_t* bits(Half* p) {
  return reinterpret_cast<uint16_t*>(p);
}
uint16_t* bits(BFloat16* p) {
  return reinterpret_cast<uint16_t*>(p);
}

}  // namespace

const char* name(Variant v) {
  switch (v) {
    case Variant::Avx2F16c:
      return "avx2_f16c";
    case Variant::Avx512:
      return "avx512";
    case Variant::Avx512Bf16:
      return "avx512_bf16";
    default:
      return "scalar";
  }
}

bool may_run(Variant v) {
  const auto has = [](const char* feature) { return aclnnCpuHasFeature(feature) == 1; };
  switch (v) {
    case Variant::Avx2F16c:
      return has("avx2") && has("f16c");
    case Variant::Avx512:
      return has("avx512f");
    case Variant::Avx512Bf16:
      return has("avx512f") && has("avx512_bf16");
    default:
      return true;
  }
}

std::vector<Variant> runnable() {
  std::vector<Variant> out;
  for (Variant v : {Variant::Scalar, Variant::Avx2F16c, Variant::Avx512, Variant::Avx512Bf16}) {
    if (may_run(v)) out.push_back(v);
  }
  return out;
}

Variant chosen() {
  static const Variant v = runnable().back();
  return v;
}

void widen(const Half* src, float* dst, int64_t n) {
  chosen_kernels().widen_half(bits(src), dst, n);
}
void widen(const BFloat16* src, float* dst, int64_t n) {
  chosen_kernels().widen_bf16(bits(src), dst, n);
}
void narrow(const float* src, Half* dst, int64_t n) {
  chosen_kernels().narrow_half(src, bits(dst), n);
}
void narrow(const float* src, BFloat16* dst, int64_t n) {
  chosen_kernels().narrow_bf16(src, bits(dst), n);
}

void widen(Variant v, const Half* src, float* dst, int64_t n) {
  kernels_of(v).widen_half(bits(src), dst, n);
}
void widen(Variant v, const BFloat16* src, float* dst, int64_t n) {
  kernels_of(v).widen_bf16(bits(src), dst, n);
}
void narrow(Variant v, const float* src, Half* dst, int64_t n) {
  kernels_of(v).narrow_half(src, bits(dst), n);
}
void narrow(Variant v, const float* src, BFloat16* dst, int64_t n) {
  kernels_of(v).narrow_bf16(src, bits(dst), n);
}

}  // namespace aclgrad::ops::convert16
