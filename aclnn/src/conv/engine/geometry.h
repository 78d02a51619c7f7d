// The one description of a convolution every kernel works on. 1d and 2d problems are promoted to
// 3d with unit leading spatial dims (L -> [1, 1, L], [H, W] -> [1, H, W]), so there is a single
// N-d code path. The geometry is always that of a *regular* (non-transposed) convolution:
//
//   x  [N, C_in,  in[0],  in[1],  in[2]]
//   w  [C_out, C_in / groups, k[0], k[1], k[2]]
//   y  [N, C_out, out[0], out[1], out[2]]
//   y[n, g*Cog + o, p] = sum_{c < Cig, q < k} w[g*Cog + o, c, q] * x[n, g*Cig + c, p*stride -
//   pad_before + q*dil]
//
// A transposed convolution is described by the regular one whose backward-data it is (see
// engine.h for the mapping).
#pragma once

#include <array>
#include <cstdint>

namespace aclnn_cpu::conv {

struct ConvGeometry {
  int64_t N = 0;
  int64_t C_in = 0;
  int64_t C_out = 0;
  int64_t groups = 1;
  std::array<int64_t, 3> in{1, 1, 1};
  std::array<int64_t, 3> out{1, 1, 1};
  std::array<int64_t, 3> k{1, 1, 1};
  std::array<int64_t, 3> stride{1, 1, 1};
  std::array<int64_t, 3> dil{1, 1, 1};
  std::array<int64_t, 3> pad_before{0, 0, 0};
  std::array<int64_t, 3> pad_after{0, 0, 0};

  int64_t cin_g() const { return groups > 0 ? C_in / groups : 0; }
  int64_t cout_g() const { return groups > 0 ? C_out / groups : 0; }
  int64_t in_size() const { return in[0] * in[1] * in[2]; }
  int64_t out_size() const { return out[0] * out[1] * out[2]; }
  int64_t k_size() const { return k[0] * k[1] * k[2]; }
  // Rows of the im2col matrix of one group: (input channel, kernel tap) pairs.
  int64_t col_rows() const { return cin_g() * k_size(); }

  bool unit_stride() const { return stride[0] == 1 && stride[1] == 1 && stride[2] == 1; }

  // A 1x1(x1) kernel with unit stride and no padding: the input of a group already *is* its
  // im2col matrix ([Cig, S] with S = in_size() = out_size()), so no column buffer is needed.
  bool pointwise() const {
    for (int d = 0; d < 3; ++d) {
      if (k[d] != 1 || stride[d] != 1 || pad_before[d] != 0 || pad_after[d] != 0) return false;
    }
    return true;
  }
};

// With unit stride, the data gradient of g is the forward conv of dy by the flipped geometry:
// dx[c, i] = sum_{o, q} w[o, c, q] * dy[o, i + pb - q*dil]; substituting q' = K-1-q (every kernel
// dim reversed) gives a regular conv of dy with weight w'[c, o, q'] = w[o, c, K-1-q'], padding
// pb' = dil*(k-1) - pb (may be negative: the kernels' bounds handle any offset) and output size =
// the input size.
ConvGeometry flipped_for_data(const ConvGeometry& g);

// Largest value a GEMM dimension or leading dimension may take (OpenBLAS blasint is 32-bit).
inline constexpr int64_t kMaxGemmDim = 2147483647;

// floor(a / b) for b > 0 and any sign of a.
constexpr int64_t floor_div(int64_t a, int64_t b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}
// v clamped to [lo, hi] (lo <= hi). Not std::clamp: the AVX-512 translation units use this header
// too, and a standard template instantiated there could be merged with the generic one.
constexpr int64_t clamp_i64(int64_t v, int64_t lo, int64_t hi) {
  return v < lo ? lo : (v > hi ? hi : v);
}
// ceil(a / b) for b > 0 and any sign of a.
constexpr int64_t ceil_div(int64_t a, int64_t b) {
  return a >= 0 ? (a + b - 1) / b : -((-a) / b);
}

// Output length of a regular convolution along one dim; <= 0 when the dilated kernel does not fit
// the padded input. Computed in 128 bits: callers bound the inputs to int32 range, but products of
// two such values only fit int64 one at a time.
inline __int128 conv_out_len(int64_t in, int64_t k, int64_t stride, int64_t dil, int64_t pb,
                             int64_t pa) {
  const __int128 span =
      static_cast<__int128>(in) + pb + pa - static_cast<__int128>(dil) * (k - 1) - 1;
  const __int128 q = span >= 0 ? span / stride : -((-span + stride - 1) / stride);
  return q + 1;
}

// Output length of a transposed convolution along one dim (PyTorch / CANN formula).
inline __int128 conv_transposed_out_len(int64_t in, int64_t k, int64_t stride, int64_t dil,
                                        int64_t pb, int64_t pa, int64_t output_padding) {
  return (static_cast<__int128>(in) - 1) * stride - pb - pa + static_cast<__int128>(dil) * (k - 1) +
         output_padding + 1;
}

}  // namespace aclnn_cpu::conv
