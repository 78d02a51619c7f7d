// Strided tensor views as the convolution engine captures them (by value, so the caller may destroy
// its aclTensor after phase 1), and the moves between them and contiguous compute buffers:
// pack (any supported dtype, any non-negative strides -> contiguous float/double, applying the
// cubeMathType operand rounding), unpack (contiguous -> the output's dtype and strides) and the
// per-channel reductions/additions of the bias. Every view is 5-d: [N, C, D, H, W] for activations,
// [C_out, C_in/g, kD, kH, kW] for weights, [1, C, 1, 1, 1] for biases; missing dims have size 1.
#pragma once

#include <array>
#include <cstdint>

#include "acl/acl_base.h"

namespace aclnn_cpu::conv {

struct View5 {
  char* data = nullptr;  // storage base (may be null when the view is empty)
  int64_t offset = 0;    // elements from data to element (0, 0, 0, 0, 0)
  aclDataType dtype = ACL_FLOAT;
  std::array<int64_t, 5> dims{1, 1, 1, 1, 1};
  std::array<int64_t, 5> strides{0, 0, 0, 0, 0};

  int64_t numel() const { return dims[0] * dims[1] * dims[2] * dims[3] * dims[4]; }
  // Row-major dense (size-1 dims ignored), so it can be used in place as a compute buffer.
  bool contiguous() const;
  // Address of element (0, ...); only meaningful when numel() > 0.
  char* origin() const;
};

// Operand rounding applied while packing a float-computed Cube operand (cubeMathType emulation).
enum class Round { kNone, kHf32, kFp16 };

// Whether `v` can be used directly as a T compute buffer (right dtype, dense, no rounding).
template <typename T>
bool usable_in_place(const View5& v, Round round);

// dst[i] = round(convert(src[i])) over the view in row-major order; dst is dense [src.dims].
template <typename T>
void pack(const View5& src, T* dst, Round round);

// Views read in their own dtype (the kernels that convert as they read): the elements' bits copied
// into a dense buffer (numel x the dtype's size), for views that are not dense already.
void pack_raw(const View5& src, void* dst);

// dst[i] = convert(src[i]) (round to nearest even for narrower dtypes); src is dense [dst.dims].
template <typename T>
void unpack(const T* src, const View5& dst);

// out[c] = sum of src[n, c, d, h, w] over n, d, h, w (c = dim 1), accumulated in double in a
// fixed order; reads src in its own dtype and strides (no operand rounding: this is not Cube work).
template <typename T>
void channel_sum(const View5& src, T* out);

// acc[i] += p[i] for i < n, in double (channel_sum's step over one channels-last row; the fused
// bias gradients call it on the rows they read).
void add_run_f32(double* acc, const float* p, int64_t n);
// sum of p[i] for i < n in double: 16 lanes added element-wise, then the lanes in order
// (deterministic for a given n; the gradBias sums of channel_sum and the fused depthwise pass).
// Defined in source.cpp, beside Source::convert_sum, which sums in the same order.
double sum_run_f32(const float* p, int64_t n);

// out[c * ld + j] += bias[c] for a `channels` x `cols` block: add_channel_bias's rows, and the
// block a forward task has just stored where its algorithm adds the bias itself
// (Blocking::adds_bias), on data still in cache.
template <typename T>
void add_bias_block(T* out, int64_t ld, int64_t channels, int64_t cols, const T* bias) {
  for (int64_t c = 0; c < channels; ++c) {
    const T b = bias[c];
    T* row = out + c * ld;
    for (int64_t j = 0; j < cols; ++j) row[j] += b;
  }
}

// buf[n, c, s] += bias[c] for a dense [N, C, S] buffer.
template <typename T>
void add_channel_bias(T* buf, const T* bias, int64_t N, int64_t C, int64_t S);

// Zero-fills a dense buffer of `count` elements.
template <typename T>
void fill_zero(T* buf, int64_t count);

}  // namespace aclnn_cpu::conv
