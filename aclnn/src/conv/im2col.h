// im2col and col2im over a column range, N-d (3 spatial dims), with stride, dilation and
// asymmetric padding. Both are one traversal (im2col_walk) so they can never disagree about which
// input element a (row, column) entry stands for:
//
//   row    r = c * K + (kd * kH + kh) * kW + kw          (input channel c of the block, kernel tap)
//   column j = (od * oH + oh) * oW + ow                  (output position)
//   entry    x[c, od*s0 - pb0 + kd*d0, oh*s1 - pb1 + kh*d1, ow*s2 - pb2 + kw*d2]   (0 if padding)
//
// im2col gathers the entries into col [nchan*K, j1-j0] (row-major, ld = j1-j0); col2im scatters
// col back with +=, dropping padding entries (this is the adjoint, i.e. the data gradient).
#pragma once

#include <algorithm>
#include <cstdint>

#include "conv/geometry.h"

namespace aclnn_cpu::conv {

template <bool kScatter, typename T>
void im2col_walk(const ConvGeometry& g, T* x, int64_t nchan, int64_t j0, int64_t j1, T* col) {
  const int64_t cols = j1 - j0;
  if (cols <= 0) return;
  const int64_t D = g.in[0], H = g.in[1], W = g.in[2];
  const int64_t oH = g.out[1], oW = g.out[2];
  const int64_t S_in = g.in_size();
  const int64_t sd = g.stride[0], sh = g.stride[1], sw = g.stride[2];
  const int64_t od0 = j0 / (oH * oW), oh0 = (j0 / oW) % oH, ow0 = j0 % oW;
  T* crow = col;
  for (int64_t c = 0; c < nchan; ++c) {
    T* xc = x + c * S_in;
    for (int64_t kd = 0; kd < g.k[0]; ++kd) {
      const int64_t offd = kd * g.dil[0] - g.pad_before[0];
      for (int64_t kh = 0; kh < g.k[1]; ++kh) {
        const int64_t offh = kh * g.dil[1] - g.pad_before[1];
        for (int64_t kw = 0; kw < g.k[2]; ++kw, crow += cols) {
          const int64_t offw = kw * g.dil[2] - g.pad_before[2];
          // Output columns ow whose input column iw = ow*sw + offw lies in [0, W).
          const int64_t lo = std::clamp<int64_t>(ceil_div(-offw, sw), 0, oW);
          const int64_t hi = std::clamp<int64_t>(ceil_div(W - offw, sw), lo, oW);
          int64_t od = od0, oh = oh0, ow = ow0;
          T* dst = crow;
          for (int64_t left = cols; left > 0;) {
            const int64_t seg = std::min(oW - ow, left);  // run of one output row
            const int64_t id = od * sd + offd, ih = oh * sh + offh;
            if (id >= 0 && id < D && ih >= 0 && ih < H) {
              T* xrow = xc + (id * H + ih) * W;  // entry of ow is xrow[ow * sw + offw]
              const int64_t a = std::clamp(lo, ow, ow + seg), b = std::clamp(hi, a, ow + seg);
              if constexpr (kScatter) {
                for (int64_t o = a; o < b; ++o) xrow[o * sw + offw] += dst[o - ow];
              } else {
                for (int64_t o = ow; o < a; ++o) dst[o - ow] = T(0);
                if (sw == 1 && b > a) {
                  const T* src = xrow + (a + offw);
                  T* d = dst + (a - ow);
                  for (int64_t i = 0; i < b - a; ++i) d[i] = src[i];
                } else {
                  for (int64_t o = a; o < b; ++o) dst[o - ow] = xrow[o * sw + offw];
                }
                for (int64_t o = b; o < ow + seg; ++o) dst[o - ow] = T(0);
              }
            } else if constexpr (!kScatter) {
              std::fill(dst, dst + seg, T(0));
            }
            dst += seg;
            left -= seg;
            ow += seg;
            if (ow == oW) {
              ow = 0;
              if (++oh == oH) {
                oh = 0;
                ++od;
              }
            }
          }
        }
      }
    }
  }
}

// col [nchan*K, j1-j0] = entries of channels x[0..nchan) (channel stride in_size()).
template <typename T>
void im2col(const ConvGeometry& g, const T* x, int64_t nchan, int64_t j0, int64_t j1, T* col) {
  im2col_walk<false>(g, const_cast<T*>(x), nchan, j0, j1, col);
}

// x[0..nchan) += col scattered back to the entries it was gathered from.
template <typename T>
void col2im(const ConvGeometry& g, const T* col, int64_t nchan, int64_t j0, int64_t j1, T* x) {
  im2col_walk<true>(g, x, nchan, j0, j1, const_cast<T*>(col));
}

}  // namespace aclnn_cpu::conv
