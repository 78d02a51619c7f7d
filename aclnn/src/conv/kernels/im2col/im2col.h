// im2col and col2im over a column range, N-d (3 spatial dims), with stride, dilation and
// asymmetric padding. They, and the implicit GEMM panels (im2col_panels.h), walk each row with
// one traversal (for_each_row_run), so they can never disagree about which input element a
// (row, column) entry stands for:
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

#include "conv/engine/geometry.h"

namespace aclnn_cpu::conv {

struct Source;

// The runs of one column-matrix row: the row of one input channel plane `xc` and one kernel tap
// (input offsets offd, offh, offw), over `count` columns starting at output position (od, oh, ow),
// split where an output row ends. Calls run(o, ow, seg, xrow, a, b) per run: columns o .. o+seg
// of the walk are output columns ow .. ow+seg of one output row; xrow is that row's input row
// (null when it lies in the padding) and output columns [a, b) read inside it, at
// xrow[q * stride_w + offw]; the others are padding. Shared by im2col/col2im and the implicit
// GEMM panels (im2col_panels.h), so all agree on which input element an entry stands for.
template <typename T, typename Run>
void for_each_row_run(const ConvGeometry& g, T* xc, int64_t offd, int64_t offh, int64_t offw,
                      int64_t od, int64_t oh, int64_t ow, int64_t count, Run&& run) {
  const int64_t D = g.in[0], H = g.in[1], W = g.in[2], oH = g.out[1], oW = g.out[2];
  const int64_t sw = g.stride[2];
  // Output columns whose input column q*sw + offw lies in [0, W).
  const int64_t lo = clamp_i64(ceil_div(-offw, sw), 0, oW);
  const int64_t hi = clamp_i64(ceil_div(W - offw, sw), lo, oW);
  for (int64_t o = 0; o < count;) {
    const int64_t seg = oW - ow < count - o ? oW - ow : count - o;
    const int64_t id = od * g.stride[0] + offd, ih = oh * g.stride[1] + offh;
    T* xrow = id >= 0 && id < D && ih >= 0 && ih < H ? xc + (id * H + ih) * W : nullptr;
    const int64_t a = clamp_i64(lo, ow, ow + seg), b = clamp_i64(hi, a, ow + seg);
    run(o, ow, seg, xrow, a, b);
    o += seg;
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

// The tap walk every im2col form shares (im2col / col2im here, the Source gather of
// im2col_source.cpp): for each row of col [nchan*K, j1-j0], i.e. each channel c < nchan of x
// (channel stride in_size()) and tap (kd, kh, kw), the runs of for_each_row_run over its columns,
// each handed to entries(dst, ow, seg, xrow, a, b, offw): dst[q - ow] is the col entry of output
// column q (ow <= q < ow + seg); those in [a, b) stand for xrow[q * stride_w + offw], the others
// (and all of them when xrow is null) for padding. Only how an entry is read or written differs.
template <typename X, typename C, typename Entries>
void for_each_col_run(const ConvGeometry& g, X* x, int64_t nchan, int64_t j0, int64_t j1, C* col,
                      Entries&& entries) {
  const int64_t cols = j1 - j0;
  if (cols <= 0) return;
  const int64_t oH = g.out[1], oW = g.out[2], S_in = g.in_size();
  const int64_t od0 = j0 / (oH * oW), oh0 = (j0 / oW) % oH, ow0 = j0 % oW;
  C* crow = col;  // row (c, kd, kh, kw) of col
  for (int64_t c = 0; c < nchan; ++c) {
    for (int64_t kd = 0; kd < g.k[0]; ++kd) {
      const int64_t offd = kd * g.dil[0] - g.pad_before[0];
      for (int64_t kh = 0; kh < g.k[1]; ++kh) {
        const int64_t offh = kh * g.dil[1] - g.pad_before[1];
        for (int64_t kw = 0; kw < g.k[2]; ++kw, crow += cols) {
          const int64_t offw = kw * g.dil[2] - g.pad_before[2];
          auto run = [&](int64_t o, int64_t ow, int64_t seg, X* xrow, int64_t a, int64_t b) {
            entries(crow + o, ow, seg, xrow, a, b, offw);
          };
          for_each_row_run(g, x + c * S_in, offd, offh, offw, od0, oh0, ow0, cols, run);
        }
      }
    }
  }
}

template <bool kScatter, typename T>
void im2col_walk(const ConvGeometry& g, T* x, int64_t nchan, int64_t j0, int64_t j1, T* col) {
  const int64_t sw = g.stride[2];
  auto entries = [sw](T* dst, int64_t ow, int64_t seg, T* xrow, int64_t a, int64_t b,
                      int64_t offw) {
    if constexpr (kScatter) {
      if (xrow)
#pragma GCC unroll 4
        for (int64_t q = a; q < b; ++q) xrow[q * sw + offw] += dst[q - ow];
    } else if (!xrow) {
      std::fill(dst, dst + seg, T(0));
    } else {
      for (int64_t q = ow; q < a; ++q) dst[q - ow] = T(0);
      if (sw == 1) {
        const T* src = xrow + (a + offw);
        T* d = dst + (a - ow);
        for (int64_t i = 0; i < b - a; ++i) d[i] = src[i];
      } else {
#pragma GCC unroll 4
        for (int64_t q = a; q < b; ++q) dst[q - ow] = xrow[q * sw + offw];
      }
      for (int64_t q = b; q < ow + seg; ++q) dst[q - ow] = T(0);
    }
  };
  for_each_col_run(g, x, nchan, j0, j1, col, entries);
}

// col [nchan*K, j1-j0] = entries of channels x[0..nchan) (channel stride in_size()).
template <typename T>
void im2col(const ConvGeometry& g, const T* x, int64_t nchan, int64_t j0, int64_t j1, T* col) {
  im2col_walk<false>(g, const_cast<T*>(x), nchan, j0, j1, col);
}

// The same col from an input as stored (conv/engine/source.h: fp16, bf16, rounded fp32, ...), each
// entry converted as it is gathered (im2col_source.cpp), so the lowerings need no fp32 copy of x.
void im2col(const ConvGeometry& g, const Source& x, int64_t nchan, int64_t j0, int64_t j1,
            float* col);

// x[0..nchan) += col scattered back to the entries it was gathered from.
template <typename T>
void col2im(const ConvGeometry& g, const T* col, int64_t nchan, int64_t j0, int64_t j1, T* x) {
  im2col_walk<true>(g, x, nchan, j0, j1, const_cast<T*>(col));
}

}  // namespace aclnn_cpu::conv
