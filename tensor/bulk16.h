// Bulk conversions between float32 and the 16-bit storage types for contiguous runs, used by
// copy_ and to() (tensor/copy.cpp) and autograd's gradient sums. The tensor layer makes no CPU
// decisions: ops/ installs its vector conversions (ops/convert16, picked by what libaclnn says may
// run here, so ACLNN_CPU_MAX_ISA caps them) when it is linked in; without them the scalar loops of
// half.h run. Every installed conversion must give bit for bit what half.h's scalar ones give.
#pragma once

#include <cstdint>

#include "tensor/half.h"

namespace aclgrad {

struct Bulk16Converters {
  void (*widen_half)(const Half* src, float* dst, int64_t n) = nullptr;
  void (*widen_bf16)(const BFloat16* src, float* dst, int64_t n) = nullptr;
  void (*narrow_half)(const float* src, Half* dst, int64_t n) = nullptr;
  void (*narrow_bf16)(const float* src, BFloat16* dst, int64_t n) = nullptr;
};

/// Installs the conversions copy_ and to() use for contiguous runs (all four must be set; the
/// last installation wins). Meant for static initialisation, before any tensor is converted.
void install_bulk16_converters(const Bulk16Converters& c);

/// The installed conversions (all null when none are).
const Bulk16Converters& bulk16_converters();

/// dst[i] = float(src[i]) for i < n (src and dst do not overlap): the installed conversion, else
/// half.h's scalar one.
void widen16(const Half* src, float* dst, int64_t n);
void widen16(const BFloat16* src, float* dst, int64_t n);
/// dst[i] = src[i] rounded to nearest even, for i < n (src and dst do not overlap).
void narrow16(const float* src, Half* dst, int64_t n);
void narrow16(const float* src, BFloat16* dst, int64_t n);

}  // namespace aclgrad
