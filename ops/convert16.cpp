#include "ops/convert16.h"

#include <immintrin.h>

#include <cstring>

// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*(), which -Wmaybe-uninitialized
// reports as a use of an uninitialized value (a known false positive, as in libaclnn's kernels).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "aclnn/aclnn_cpu_isa.h"
#include "tensor/bulk16.h"
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

// ---- scalar (tensor/half.h) ----

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

// Each vector kernel is one W-element step (a function with the ISA's target attribute, so the
// intrinsics inline into it; a lambda would not inherit the attribute) run by this loop. The last
// n % W elements are copied into a zeroed W-element buffer, converted by one more step and
// copied out: the same bits as the scalar path, without its per-element branches.
#define ACLGRAD_CONVERT16_LOOP(target_isa, name, W, In, Out, step)                \
  __attribute__((target(target_isa))) void name(const In* s, Out* d, int64_t n) { \
    int64_t i = 0;                                                                \
    for (; i + (W) <= n; i += (W)) step(s + i, d + i);                            \
    if (i == n) return;                                                           \
    In in[W] = {};                                                                \
    Out out[W];                                                                   \
    std::memcpy(in, s + i, static_cast<size_t>(n - i) * sizeof(In));              \
    step(in, out);                                                                \
    std::memcpy(d + i, out, static_cast<size_t>(n - i) * sizeof(Out));            \
  }

// ---- AVX2 + F16C: 8 elements a step (16 for bf16 narrowing) ----

__attribute__((target("avx2,f16c"))) inline void widen_half_avx2_step(const uint16_t* s, float* d) {
  _mm256_storeu_ps(d, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s))));
}
ACLGRAD_CONVERT16_LOOP("avx2,f16c", widen_half_avx2, 8, uint16_t, float, widen_half_avx2_step)

__attribute__((target("avx2,f16c"))) inline void narrow_half_avx2_step(const float* s,
                                                                       uint16_t* d) {
  const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(s), kRoundNearest);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(d), h);
}
ACLGRAD_CONVERT16_LOOP("avx2,f16c", narrow_half_avx2, 8, float, uint16_t, narrow_half_avx2_step)

__attribute__((target("avx2"))) inline void widen_bf16_avx2_step(const uint16_t* s, float* d) {
  const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s)));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(d), _mm256_slli_epi32(w, 16));
}
ACLGRAD_CONVERT16_LOOP("avx2", widen_bf16_avx2, 8, uint16_t, float, widen_bf16_avx2_step)

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

__attribute__((target("avx2"))) inline void narrow_bf16_avx2_step(const float* s, uint16_t* d) {
  const __m256i a = bf16_rne_avx2(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s)));
  const __m256i b = bf16_rne_avx2(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + 8)));
  // packus interleaves 128-bit halves (a0-3 b0-3 a4-7 b4-7); the permute puts them in order.
  // Every lane is in [0, 0xffff], so the unsigned saturation never changes a value.
  const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(a, b), 0xd8);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(d), packed);
}
ACLGRAD_CONVERT16_LOOP("avx2", narrow_bf16_avx2, 16, float, uint16_t, narrow_bf16_avx2_step)

// ---- AVX-512F: 16 elements a step ----

__attribute__((target("avx512f"))) inline void widen_half_avx512_step(const uint16_t* s, float* d) {
  const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s));
  _mm512_storeu_ps(d, _mm512_cvtph_ps(h));
}
ACLGRAD_CONVERT16_LOOP("avx512f", widen_half_avx512, 16, uint16_t, float, widen_half_avx512_step)

__attribute__((target("avx512f"))) inline void narrow_half_avx512_step(const float* s,
                                                                       uint16_t* d) {
  const __m256i h = _mm512_cvtps_ph(_mm512_loadu_ps(s), kRoundNearest);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(d), h);
}
ACLGRAD_CONVERT16_LOOP("avx512f", narrow_half_avx512, 16, float, uint16_t, narrow_half_avx512_step)

__attribute__((target("avx512f"))) inline void widen_bf16_avx512_step(const uint16_t* s, float* d) {
  const __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s)));
  _mm512_storeu_si512(d, _mm512_slli_epi32(w, 16));
}
ACLGRAD_CONVERT16_LOOP("avx512f", widen_bf16_avx512, 16, uint16_t, float, widen_bf16_avx512_step)

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

__attribute__((target("avx512f"))) inline void narrow_bf16_avx512_step(const float* s,
                                                                       uint16_t* d) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(d), bf16_rne_avx512(_mm512_loadu_si512(s)));
}
ACLGRAD_CONVERT16_LOOP("avx512f", narrow_bf16_avx512, 16, float, uint16_t, narrow_bf16_avx512_step)

// ---- AVX512_BF16 ----

// vcvtneps2bf16 rounds to nearest even and quiets NaN as the scalar path does, but reads float32
// subnormals as zero whatever MXCSR says; a vector holding one is narrowed in integers instead.
__attribute__((target("avx512f,avx512bf16"))) inline void narrow_bf16_avx512bf16_step(
    const float* s, uint16_t* d) {
  const __m512i x = _mm512_loadu_si512(s);
  const __mmask16 subnormal = _mm512_testn_epi32_mask(x, _mm512_set1_epi32(0x7f800000)) &
                              _mm512_test_epi32_mask(x, _mm512_set1_epi32(0x007fffff));
  __m256i h;
  if (subnormal == 0) [[likely]] {
    h = reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(_mm512_castsi512_ps(x)));
  } else {
    h = bf16_rne_avx512(x);
  }
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(d), h);
}
ACLGRAD_CONVERT16_LOOP("avx512f,avx512bf16", narrow_bf16_avx512bf16, 16, float, uint16_t,
                       narrow_bf16_avx512bf16_step)

#undef ACLGRAD_CONVERT16_LOOP

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

// Tensor::to and copy_ between float32 and the 16-bit types (tensor/copy.cpp) convert contiguous
// runs with these. Installing takes the addresses only: the variant is picked at the first call.
const bool kInstalledForTensors = [] {
  install_bulk16_converters(
      {.widen_half = static_cast<void (*)(const Half*, float*, int64_t)>(&widen),
       .widen_bf16 = static_cast<void (*)(const BFloat16*, float*, int64_t)>(&widen),
       .narrow_half = static_cast<void (*)(const float*, Half*, int64_t)>(&narrow),
       .narrow_bf16 = static_cast<void (*)(const float*, BFloat16*, int64_t)>(&narrow)});
  return true;
}();

}  // namespace aclgrad::ops::convert16
