// An input of the direct kernels as it is stored: dense elements of one kind, converted to fp32
// (and rounded, for cubeMathType emulation) while the kernels' bands are built, so fp16, bf16,
// 8-bit and rounded fp32 inputs need no separate conversion pass.
#pragma once

#include <cstddef>
#include <cstdint>

#include "acl/acl_base.h"
#include "conv/engine/strided.h"

namespace aclnn_cpu::conv {

enum class SrcKind : uint8_t {
  kF32,       // fp32 as is
  kF32Hf32,   // fp32 rounded to HF32 (ALLOW_FP32_DOWN_PRECISION / USE_HF32)
  kF32Fp16,   // fp32 rounded to fp16 (USE_FP16)
  kF16,       // fp16 (every rounding mode leaves fp16 values unchanged)
  kBF16,      // bf16 (HF32 rounding leaves bf16 values unchanged)
  kBF16Fp16,  // bf16 rounded to fp16 (USE_FP16)
  kE4M3FN,    // FLOAT8_E4M3FN (float8.h; every rounding mode leaves its values unchanged)
  kHiF8,      // HIFLOAT8 (float8.h; likewise)
};

// The kind of a `dtype` input under operand rounding `round`; false when the kernels cannot read
// that dtype (DOUBLE and others: the engine converts those).
bool src_kind_of(aclDataType dtype, Round round, SrcKind* kind);

struct Source {
  const void* data = nullptr;  // element 0
  SrcKind kind = SrcKind::kF32;

  size_t elem_bytes() const {
    if (kind == SrcKind::kE4M3FN || kind == SrcKind::kHiF8) return 1;
    return kind == SrcKind::kF16 || kind == SrcKind::kBF16 || kind == SrcKind::kBF16Fp16 ? 2 : 4;
  }
  // The source advanced by `elems` elements.
  Source at(int64_t elems) const {
    return Source{static_cast<const char*>(data) + elems * static_cast<int64_t>(elem_bytes()),
                  kind};
  }
  // Element i as fp32, converted and rounded.
  float value(int64_t i) const;
  // dst[k] = value(k * stride) for k < n: vectorised on AVX-512, and on AVX2 + F16C for every
  // kind but the 8-bit ones; strides up to kMaxChunkedStride convert the covering run a chunk at
  // a time and keep every stride-th element.
  void convert(int64_t n, int64_t stride, float* dst) const;
  // convert(n, 1, dst), returning the sum in double of the n values as stored (before any
  // rounding), added in sum_run_f32's order: in one pass over the source on AVX2-only CPUs, else
  // a conversion and then sum_run_f32. Every kind but kBF16Fp16 and the 8-bit ones.
  double convert_sum(int64_t n, float* dst) const;
  static constexpr int64_t kMaxChunkedStride = 8;
};

// dst[i] = element i of a `kind` source (not an 8-bit kind) as fp32, converted and rounded, for
// i < n: bit for bit Source::value's (NaN: a NaN). AVX2 + F16C only (source_avx2.cpp).
void convert_avx2(SrcKind kind, const void* src, int64_t n, float* dst);

// convert_avx2, returning the sum of the n values as stored (Source::convert_sum).
double convert_sum_avx2(SrcKind kind, const void* src, int64_t n, float* dst);

// dst[c * ld_dst + r] = element r * ld_src + c of a `kind` source converted and rounded as
// Source::convert does, for c < cols and r < width (a multiple of 16), zero for r >= rows: rows
// of the source become columns of dst (dst and ld_dst 32-byte aligned), with no converted copy
// of the source made. The converting form of direct_transpose (direct_grid.h), on CPUs whose
// widest kernels are AVX2 + F16C; false, nothing written, elsewhere and for the 8-bit kinds.
bool transpose_convert(SrcKind kind, const void* src, int64_t ld_src, int64_t rows, int64_t cols,
                       float* dst, int64_t ld_dst, int64_t width);
// Its AVX2 + F16C form (source_avx2.cpp; width a multiple of 8), after the runtime CPU check.
void transpose_convert_avx2(SrcKind kind, const void* src, int64_t ld_src, int64_t rows,
                            int64_t cols, float* dst, int64_t ld_dst, int64_t width);

// dst[i] = src[i] rounded to fp16 (`bf16` false) or bf16, to nearest even, for i < n: bit for bit
// half.h's float_to_half / float_to_bf16 (NaN: a NaN). The inverse of a 16-bit Source, used
// wherever fp32 results are written to a 16-bit output; vectorised on AVX-512 and AVX2 + F16C.
void narrow16(bool bf16, const float* src, int64_t n, uint16_t* dst);
// Its AVX2 + F16C form (source_avx2.cpp), reached only after the runtime CPU check.
void narrow_avx2(bool bf16, const float* src, int64_t n, uint16_t* dst);

}  // namespace aclnn_cpu::conv
