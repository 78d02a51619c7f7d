#include "conv/engine/source.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "conv/kernels/grid/direct_grid.h"
#include "conv/engine/float8.h"
#include "conv/engine/half.h"
#include "gemm/sgemm.h"
#include "cpu/simd_variants.h"

namespace aclnn_cpu::conv {

bool src_kind_of(aclDataType dtype, Round round, SrcKind* kind) {
  switch (dtype) {
    case ACL_FLOAT:
      *kind = round == Round::kHf32   ? SrcKind::kF32Hf32
              : round == Round::kFp16 ? SrcKind::kF32Fp16
                                      : SrcKind::kF32;
      return true;
    case ACL_FLOAT16:
      *kind = SrcKind::kF16;
      return true;
    case ACL_BF16:
      *kind = round == Round::kFp16 ? SrcKind::kBF16Fp16 : SrcKind::kBF16;
      return true;
    // fp16 and HF32 hold every 8-bit value exactly: no rounding mode changes them.
    case ACL_FLOAT8_E4M3FN:
      *kind = SrcKind::kE4M3FN;
      return true;
    case ACL_HIFLOAT8:
      *kind = SrcKind::kHiF8;
      return true;
    default:
      return false;
  }
}

float Source::value(int64_t i) const {
  const char* p = static_cast<const char*>(data);
  if (kind == SrcKind::kE4M3FN) return kE4m3fnValues[static_cast<const uint8_t*>(data)[i]];
  if (kind == SrcKind::kHiF8) return kHif8Values[static_cast<const uint8_t*>(data)[i]];
  if (elem_bytes() == 2) {
    uint16_t bits;
    std::memcpy(&bits, p + 2 * i, 2);
    if (kind == SrcKind::kF16) return half_to_float(bits);
    const float v = bf16_to_float(bits);
    return kind == SrcKind::kBF16Fp16 ? round_to_half(v) : v;
  }
  float v;
  std::memcpy(&v, p + 4 * i, 4);
  return kind == SrcKind::kF32Hf32   ? round_to_hf32(v)
         : kind == SrcKind::kF32Fp16 ? round_to_half(v)
                                     : v;
}

namespace {

// Whether the AVX2 conversions may run: our AVX2 kernels may (gemm::isa()'s kAvx2 includes F16C).
bool avx2_f16c() {
  return gemm::isa() >= gemm::Isa::kAvx2;
}

}  // namespace

// AVX-512 CPUs keep the staged conversion: direct_transpose_convert_avx512 would serve there
// too, but that path was written on an AVX2-only machine and is not yet measured on one.
bool transpose_convert(SrcKind kind, const void* src, int64_t ld_src, int64_t rows, int64_t cols,
                       float* dst, int64_t ld_dst, int64_t width) {
  if (Source{src, kind}.elem_bytes() == 1 || gemm::have_avx512() || !avx2_f16c()) return false;
  transpose_convert_avx2(kind, src, ld_src, rows, cols, dst, ld_dst, width);
  return true;
}

void Source::convert(int64_t n, int64_t stride, float* dst) const {
  if (n <= 0) return;
  if (stride == 1 && kind == SrcKind::kF32) {
    std::memcpy(dst, data, static_cast<size_t>(n) * sizeof(float));
    return;
  }
  const bool narrow8 = elem_bytes() == 1;
  const bool avx512 = gemm::have_avx512() && !narrow8, avx2 = !avx512 && !narrow8 && avx2_f16c();
  if (stride == 1 && avx512) {
    direct_convert_avx512(kind, data, n, dst);
  } else if (stride == 1 && avx2) {
    convert_avx2(kind, data, n, dst);
  } else if (stride > 1 && stride <= kMaxChunkedStride && (avx512 || avx2) &&
             kind != SrcKind::kF32) {
    // Strided (a stride-s conv's phase planes): convert the covering run kChunk outputs at a
    // time with the vector code above, then keep every stride-th element.
    constexpr int64_t kChunk = 64;
    float run[(kChunk - 1) * kMaxChunkedStride + 1];
    for (int64_t k0 = 0; k0 < n; k0 += kChunk) {
      const int64_t m = std::min(kChunk, n - k0);
      at(k0 * stride).convert((m - 1) * stride + 1, 1, run);
      for (int64_t k = 0; k < m; ++k) dst[k0 + k] = run[k * stride];
    }
  } else if (kind == SrcKind::kF32) {
    const float* f = static_cast<const float*>(data);
    for (int64_t k = 0; k < n; ++k) dst[k] = f[k * stride];
  } else {
    for (int64_t k = 0; k < n; ++k) dst[k] = value(k * stride);
  }
}

// (declared in strided.h; defined here, next to convert_sum, which must add in its order, so
// that the tests compiling the conversions alone link.) Two zmm of doubles on AVX-512 (the variant
// of the tier in force): ~16x faster than one serial chain of double additions, which made gradBias
// a sizeable part of a whole backward.
[[gnu::always_inline]] inline double sum_run_f32_body(const float* __restrict p, int64_t n) {
  double lanes[16] = {};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (int l = 0; l < 16; ++l) lanes[l] += static_cast<double>(p[i + l]);
  for (int l = 0; i < n; ++i, ++l) lanes[l] += static_cast<double>(p[i]);
  double acc = 0.0;
  for (int l = 0; l < 16; ++l) acc += lanes[l];
  return acc;
}
ACLNN_SIMD_VARIANTS(double, sum_run_f32, (const float* p, int64_t n), (p, n))

double Source::convert_sum(int64_t n, float* dst) const {
  if (kind == SrcKind::kBF16Fp16 || elem_bytes() == 1)
    throw std::logic_error("Source::convert_sum: no sum of the stored values for this kind");
  if (n <= 0) return 0.0;
  if (!gemm::have_avx512() && avx2_f16c()) return convert_sum_avx2(kind, data, n, dst);
  convert(n, 1, dst);
  // The 4-byte kinds' stored values are the source's; the 16-bit ones' are dst's (no rounding).
  return sum_run_f32(elem_bytes() == 4 ? static_cast<const float*>(data) : dst, n);
}

void narrow16(bool bf16, const float* src, int64_t n, uint16_t* dst) {
  if (n <= 0) return;
  if (gemm::have_avx512()) {
    direct_narrow_avx512(bf16, src, n, dst);
  } else if (avx2_f16c()) {
    narrow_avx2(bf16, src, n, dst);
  } else {
    for (int64_t i = 0; i < n; ++i) dst[i] = bf16 ? float_to_bf16(src[i]) : float_to_half(src[i]);
  }
}

}  // namespace aclnn_cpu::conv
