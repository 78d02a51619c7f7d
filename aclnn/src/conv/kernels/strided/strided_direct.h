// The AVX2 + FMA kernels of strided_direct's forward (algo_strided_direct.cpp): a strided
// convolution computed on the input at its own resolution, in oneDNN's orientation (vectors of 8
// output channels, input values broadcast), so a stride is only a larger step between the
// positions a tile broadcasts from (call only where gemm::isa() is at least kAvx2), and the
// AVX-512 step of its weight gradient around direct_grid.h's weight kernel.
#pragma once

#include <cstdint>

namespace aclnn_cpu::conv {

// Packed weights: blocks of 8 output channels, packed[ob * ob_stride + (c * T + t) * 8 + i].
//
// yt[p * ldy + o] = (add ? yt[p * ldy + o] : 0) + sum_{c < C, t < T} packed(o, c, t) *
//                   x[c * cstride + off[t] + p * xstep]
// for p < n positions and o < 8 * blocks output channels (ldy a multiple of 8).
void strided_forward_avx2(int64_t blocks, int64_t n, int64_t C, int64_t T, const int64_t* off,
                          const float* x, int64_t cstride, int64_t xstep, const float* packed,
                          int64_t ob_stride, float* yt, int64_t ldy, bool add);

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
