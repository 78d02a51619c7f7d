// Bulk conversions between float32 and the 16-bit storage types (float16, bfloat16) at hardware
// speed, for the 16-bit paths of ops/ (elementwise maps, BatchNorm, pooling, casts).
//
// Every variant gives bit for bit what tensor/half.h's scalar conversions give (round to nearest
// even once; inf, NaN, subnormals and overflow alike), so a 16-bit op computes exactly as before:
// widen the inputs exactly, compute in float32, round each output once.
//   - F16C / AVX-512F: vcvtph2ps (exact) and vcvtps2ph with an explicit round-to-nearest-even
//     immediate (MXCSR is not read). A NaN stays NaN, made quiet, sign and top payload bits kept,
//     as the scalar path does.
//   - bfloat16 widen is a 16-bit shift. Narrow is the scalar path's integer RNE in vector lanes;
//     with AVX512_BF16, vcvtneps2bf16 narrows instead, but it treats float32 subnormal inputs as
//     zero (the scalar path rounds them), so lanes holding a subnormal are redone in integers.
// The variant comes from what libaclnn says may run here (aclnnCpuHasFeature), so
// ACLNN_CPU_MAX_ISA caps it with the rest of the process.
#pragma once

#include <cstdint>
#include <vector>

#include "tensor/half.h"

namespace aclgrad::ops::convert16 {

enum class Variant { Scalar, Avx2F16c, Avx512, Avx512Bf16 };

/// "scalar", "avx2_f16c", "avx512", "avx512_bf16".
const char* name(Variant v);

/// Whether variant v may run in this process (CPU, OS and ACLNN_CPU_MAX_ISA).
bool may_run(Variant v);

/// Every variant that may run here, the scalar one first.
std::vector<Variant> runnable();

/// The widest variant that may run here (picked once); the one the functions below use.
Variant chosen();

/// dst[i] = float(src[i]) for i < n; src and dst do not overlap.
void widen(const Half* src, float* dst, int64_t n);
void widen(const BFloat16* src, float* dst, int64_t n);
/// dst[i] = T(src[i]) rounded to nearest even, for i < n; src and dst do not overlap.
void narrow(const float* src, Half* dst, int64_t n);
void narrow(const float* src, BFloat16* dst, int64_t n);

/// The same with an explicit variant (for tests); Error if v may not run here.
void widen(Variant v, const Half* src, float* dst, int64_t n);
void widen(Variant v, const BFloat16* src, float* dst, int64_t n);
void narrow(Variant v, const float* src, Half* dst, int64_t n);
void narrow(Variant v, const float* src, BFloat16* dst, int64_t n);

}  // namespace aclgrad::ops::convert16
