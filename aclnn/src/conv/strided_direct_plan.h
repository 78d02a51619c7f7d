// What strided_direct's two primitives (algo_strided_direct.cpp: backward_weight,
// algo_strided_direct_forward.cpp: forward) share: the cost rules and the tap offsets of their
// blocks.
#pragma once

#include <algorithm>
#include <cstdint>

#include "conv/algo_support.h"
#include "conv/algorithm.h"

namespace aclnn_cpu::conv::strided_direct {

inline constexpr double kMinMacs = double(1 << 22);

// The rules both primitives share; avx512_measured: preferred on AVX-512 too.
inline Fit common(const Problem& p, bool avx512_measured) {
  Fit f;
  const ConvGeometry& g = p.g;
  const bool strided = g.stride[0] > 1 || g.stride[1] > 1 || g.stride[2] > 1;
  if (p.fp64 || !p.packed_gemm()) {
    f.reason = "needs fp32 and AVX2 or AVX-512";
    return f;
  }
  if (g.out_size() <= 0 || g.cout_g() <= 0 || g.cin_g() <= 0 || g.N <= 0) {
    f.reason = "empty";
    return f;
  }
  f.applies = true;
  f.preferred = strided && (!p.avx512() || avx512_measured) && p.macs() >= kMinMacs;
  f.reason = !strided ? "unit stride: grid_direct's grid has no extra phases"
             : p.avx512() && !avx512_measured ? "measured on AVX2 only"
             : p.macs() < kMinMacs            ? "below 4M multiply-adds"
                                              : "strided: the input read at its own resolution";
  return f;
}

// Fewer than 8 input channels leave the weight tiles part empty; above 64 output channels per
// group the GEMM lowerings were faster for grid_direct's AVX2 tiles, and these are the same.
inline void channel_rules(Fit& f, const ConvGeometry& g) {
  if (f.preferred && (g.cin_g() < 8 || g.cout_g() > 64)) {
    f.preferred = false;
    f.reason = g.cin_g() < 8 ? "fewer than 8 input channels per group"
                             : "more than 64 output channels per group";
  }
}

// off[q] = offset of kernel tap q (kd, kh, kw) in a block of k[0] planes of Rx rows x Wx columns
// with `elems` floats per column: both primitives' blocks are laid out so.
inline void tap_offsets(const ConvGeometry& g, int64_t Rx, int64_t Wx, int64_t elems,
                        int64_t* off) {
  for (int64_t q = 0; q < g.k_size(); ++q) {
    const int64_t kd = q / (g.k[1] * g.k[2]), kh = q / g.k[2] % g.k[1], kw = q % g.k[2];
    off[q] = ((kd * Rx + kh * g.dil[1]) * Wx + kw * g.dil[2]) * elems;
  }
}

}  // namespace aclnn_cpu::conv::strided_direct
