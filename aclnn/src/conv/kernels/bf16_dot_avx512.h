// The vdpbf16ps step of the AVX512_BF16 kernels (direct_grid_bf16_avx512.cpp,
// tbc_bf16_avx512.cpp): a 32-bit unit holds a pair of bf16 values, and one instruction adds both
// products of a lane's two pairs to its fp32 accumulator. Include only inside an AVX512_BF16
// target region (gemm/target_avx512bf16_begin.h), after <immintrin.h>, so these helpers are
// compiled for it (each file gets its own copy: they are static). No standard-library template
// is instantiated here.
#pragma once

#include <cstdint>

namespace aclnn_cpu::conv {

// acc + a.lo * b.lo + a.hi * b.hi, lane by lane (a, b: 16 units of bf16 pairs).
static inline __m512 dot2(__m512 acc, __m512i a, __m512i b) {
  return _mm512_dpbf16_ps(acc, reinterpret_cast<__m512bh>(a), reinterpret_cast<__m512bh>(b));
}

// One rank-1 step of a register tile: acc[i][v] += vec[16 v + lane] . unit(i) for i < R, v < V;
// the V vectors of units are loaded once (vec: 64-byte aligned), each row's unit (an int holding
// a bf16 pair) is broadcast against them.
template <int R, int V, typename Unit>
static inline void dot2_outer(__m512 (&acc)[R][V], const uint32_t* vec, Unit unit) {
  __m512i bv[V];
#pragma GCC unroll 16
  for (int v = 0; v < V; ++v) bv[v] = _mm512_load_si512(vec + 16 * v);
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i) {
    const __m512i u = _mm512_set1_epi32(unit(i));
#pragma GCC unroll 16
    for (int v = 0; v < V; ++v) acc[i][v] = dot2(acc[i][v], bv[v], u);
  }
}

}  // namespace aclnn_cpu::conv
