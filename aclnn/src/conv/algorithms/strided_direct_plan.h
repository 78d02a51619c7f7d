// What strided_direct's two primitives (algo_strided_direct.cpp: backward_weight,
// algo_strided_direct_forward.cpp: forward) share: the cost rules and the tap offsets of their
// blocks.
#pragma once

#include <algorithm>
#include <cstdint>

#include "conv/algorithms/algo_support.h"
#include "conv/engine/algorithm.h"

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

// The weight gradient's rules on AVX2 CPUs, which replace the two above there: measured on an
// AVX2-only CPU against the planner's former choice, the weight gradient alone at 1 and 2 threads
// (see the commit and bench/RESULTS.md, design strided_direct_plan.avx2-weight), strided_direct
// also wins
//   - at unit stride on output planes of at most 32 x 32 positions, against grid_direct, for fp32,
//     fp16 and USE_FP16 (which it converts as it transposes); 40 x 40 level, 56 x 56 slower
//     (resnet3x3, dilated), 3-d video level, so neither is taken;
//   - with fewer than 8 input channels per group when at least 32 output channels fill its tiles,
//     against grid_gemm (first7x7, strided: against grid_direct); with 16 outputs it was slower
//     (1 -> 16 at 64 x 64, k5).
// More than 64 output channels per group stay with the GEMM lowerings (channel_rules).
inline void avx2_weight_rules(Fit& f, const Problem& p) {
  const ConvGeometry& g = p.g;
  const bool strided = g.stride[0] > 1 || g.stride[1] > 1 || g.stride[2] > 1;
  const bool small_plane = g.out[0] == 1 && g.out[1] * g.out[2] <= 32 * 32;
  f.preferred = false;
  if (p.macs() < kMinMacs) {
    f.reason = "below 4M multiply-adds";
  } else if (g.cout_g() > 64) {
    f.reason = "more than 64 output channels per group";
  } else if (g.cin_g() < 8) {
    f.preferred = g.cout_g() >= 32;
    f.reason = f.preferred ? "fewer than 8 input channels, at least 32 output channels"
                           : "fewer than 8 input channels and fewer than 32 output channels";
  } else {
    f.preferred = strided || small_plane;
    f.reason = strided       ? "strided: the input read at its own resolution"
               : small_plane ? "unit stride, output planes of at most 32 x 32"
                             : "unit stride on planes above 32 x 32: grid_direct";
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
