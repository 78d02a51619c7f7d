// The AMX tile instructions behind gemm/amx_tiles.h's AmxUnit, and the bf16 GEMM kernel run on
// them. Everything here is compiled for AMX: call it only where cpu::may_use(cpu::kAmxFeatures)
// (the CPU has AMX-TILE and AMX-BF16, the OS saves tile state, and Linux granted this process the
// tile data). The intrinsics name their tile registers as literals, hence the switches: each
// template instance keeps one case.
#include <immintrin.h>

#include <cstdint>

#include "gemm/amx_tiles.h"

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("amx-tile,amx-bf16"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("amx-tile,amx-bf16")
#endif

#include "gemm/amx_gemm.h"

namespace aclnn_cpu::gemm {

#define ACLNN_TILE_CASES(MACRO) \
  switch (T) {                  \
    case 0:                     \
      MACRO(0);                 \
      break;                    \
    case 1:                     \
      MACRO(1);                 \
      break;                    \
    case 2:                     \
      MACRO(2);                 \
      break;                    \
    case 3:                     \
      MACRO(3);                 \
      break;                    \
    case 4:                     \
      MACRO(4);                 \
      break;                    \
    case 5:                     \
      MACRO(5);                 \
      break;                    \
    case 6:                     \
      MACRO(6);                 \
      break;                    \
    default:                    \
      MACRO(7);                 \
      break;                    \
  }

void AmxUnit::configure(const TileConfig& cfg) {
  _tile_loadconfig(&cfg);
}

void AmxUnit::release() {
  _tile_release();
}

template <int T>
void AmxUnit::zero() {
#define ACLNN_ZERO(t) _tile_zero(t)
  ACLNN_TILE_CASES(ACLNN_ZERO)
#undef ACLNN_ZERO
}

template <int T>
void AmxUnit::load(const void* base, int64_t stride_bytes) {
#define ACLNN_LOAD(t) _tile_loadd(t, base, stride_bytes)
  ACLNN_TILE_CASES(ACLNN_LOAD)
#undef ACLNN_LOAD
}

template <int T>
void AmxUnit::store(void* base, int64_t stride_bytes) const {
#define ACLNN_STORE(t) _tile_stored(t, base, stride_bytes)
  ACLNN_TILE_CASES(ACLNN_STORE)
#undef ACLNN_STORE
}

// The kernel uses only these four products (C tiles 0-3, A tiles 4-5, B tiles 6-7).
template <>
void AmxUnit::dpbf16ps<0, 4, 6>() {
  _tile_dpbf16ps(0, 4, 6);
}
template <>
void AmxUnit::dpbf16ps<1, 4, 7>() {
  _tile_dpbf16ps(1, 4, 7);
}
template <>
void AmxUnit::dpbf16ps<2, 5, 6>() {
  _tile_dpbf16ps(2, 5, 6);
}
template <>
void AmxUnit::dpbf16ps<3, 5, 7>() {
  _tile_dpbf16ps(3, 5, 7);
}

#undef ACLNN_TILE_CASES

void amx_gemm_bf16_unit(int64_t M, int64_t N, int64_t K, const uint16_t* Ap, const uint16_t* Bp,
                        float* C, int64_t ldc, bool accumulate) {
  AmxUnit unit;
  amx_gemm_bf16_tiles(unit, M, N, K, Ap, Bp, C, ldc, accumulate);
}

}  // namespace aclnn_cpu::gemm

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
