// The AVX2 + FMA kernels of strided_direct's forward (algo_strided_direct.cpp): a strided
// convolution computed on the input at its own resolution, in oneDNN's orientation (vectors of 8
// output channels, input values broadcast), so a stride is only a larger step between the
// positions a tile broadcasts from (call only where gemm::isa() is at least kAvx2), and the
// AVX-512 step of its weight gradient around direct_grid.h's weight kernel.
#pragma once

#include <cstdint>

namespace aclnn_cpu::conv {

// One call of the strided forward kernel:
//
//   yt[p * ldy + o] = (add ? yt[p * ldy + o] : 0)
//                     + sum_{c < C, t < T} packed(o, c, t) * x[c * cstride + off[t] + p * xstep]
//
// for p < n positions and o < 8 * blocks output channels, with the weights packed in blocks of 8
// output channels: packed(o, c, t) = packed[(o / 8) * ob_stride + (c * T + t) * 8 + o % 8].
struct StridedForward {
  int64_t blocks = 0;             // blocks of 8 output channels
  int64_t n = 0;                  // output positions
  int64_t C = 0;                  // input channels
  int64_t T = 0;                  // taps
  const int64_t* off = nullptr;   // [T] tap offsets into a channel of x
  const float* x = nullptr;       // [C][cstride] the input, position p at p * xstep
  int64_t cstride = 0;            // channel stride of x
  int64_t xstep = 0;              // input elements between successive positions (the stride)
  const float* packed = nullptr;  // [blocks][ob_stride] packed weights, (c, t, 8) per block
  int64_t ob_stride = 0;          // floats between weight blocks
  float* yt = nullptr;            // [n][ldy] the output, channels-last
  int64_t ldy = 0;                // position stride of yt, a multiple of 8
  bool add = false;               // add to yt (a later channel chunk) instead of overwriting it
};
void strided_forward_avx2(const StridedForward& a);

// dw[o * ld + c * K + q] = dwt[(q * nc + c) * m16 + o] for o < Cog, c < nc, q < K: a weight task's
// accumulators [K, nc, m16] (direct_grid.h's weight kernel) back into dw's rows [Cog][.. nc * K]
// (AVX-512; call only where gemm::isa() is kAvx512).
void weight_acc_to_dw_avx512(const float* dwt, int64_t K, int64_t nc, int64_t m16, int64_t Cog,
                             float* dw, int64_t ld);

// dst[o * ld_dst + p] = src[p * ld_src + o] for o < m, p < n: position-major rows back to
// channel rows (any strides and alignment).
void positions_to_channels_avx2(const float* src, int64_t ld_src, int64_t n, int64_t m, float* dst,
                                int64_t ld_dst);

// sums[o] += sum_{r < rows, j < n} t[(r * pitch + j) * m16 + o] for o < cnt: the gradBias of a
// channels-last dy block (the AVX2 weight pass's dy_t; m16 a multiple of 16), read while it is in
// cache instead of dy again from memory. Runs of 16 positions of a row are added in fp32 as 4
// interleaved partial sums, then into double (at most 6 fp32 roundings deep).
void channels_last_sums_avx2(const float* t, int64_t rows, int64_t n, int64_t pitch, int64_t m16,
                             int64_t cnt, double* sums);

}  // namespace aclnn_cpu::conv
