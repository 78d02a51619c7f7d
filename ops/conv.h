// Differentiable convolutions (PyTorch semantics), computed by libaclnn:
//   conv1d / conv2d / conv3d, conv_transpose1d / 2d / 3d, conv_tbc.
//
// The forward calls aclnnConvolution / aclnnConvTbc and the backward aclnnConvolutionBackward /
// aclnnConvTbcBackward through the two-phase API, on zero-copy aclTensor views of the tensors
// (any strides and offsets, no .contiguous() copies); the output mask asks only for the gradients
// of inputs that need one. There is no other convolution code in ops/. With create_graph=true
// the backward is recorded as convolutions itself, so double (and higher) backward works
// (ops/conv_acl.cpp).
//
// Tensors: input [N, C_in, *spatial] or, like PyTorch, [C_in, *spatial] without batch (the output
// then has no batch dim either); N = 0 is allowed. weight [C_out, C_in / groups, *kernel] (regular)
// or [C_in, C_out / groups, *kernel] (transposed). bias: undefined Tensor() or [C_out]. input,
// weight and bias must share one floating dtype (float32, float64, float16, bfloat16; 16-bit
// types accumulate in float32).
//
//   Tensor y = conv2d(x, w, b, {.stride = 2, .padding = 1});
//   Tensor z = conv1d(x, w, {}, {.padding = "same", .dilation = 2});
//   Tensor u = conv_transpose3d(x, w, b, {.stride = 2, .padding = 1, .output_padding = 1});
//
// Errors: bad arguments throw ShapeError / DtypeError / Error with PyTorch-style messages naming
// the op ("conv2d: expected input with 4 dims (N, C, H, W) or 3 dims (C, H, W) without batch, got
// input of shape [3, 5]"); anything libaclnn itself rejects (e.g. its hardware limits: kernel,
// padding and dilation <= 255 in H/W, output_padding < stride) is an AclnnError
// (ops/aclnn_error.h) carrying libaclnn's status and message.
#pragma once

#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "../ops/aclnn_error.h"
#include "../tensor/tensor.h"

namespace aclgrad {

/// A size per spatial dimension (stride, dilation, ...): one value for every dim (`2`), or one
/// value per dim (`{1, 2}`).
class ConvSizes {
 public:
  template <std::integral I>
  ConvSizes(I value) : values_{static_cast<int64_t>(value)} {}  // NOLINT: implicit on purpose
  ConvSizes(std::initializer_list<int64_t> values) : values_(values) {}
  ConvSizes(std::vector<int64_t> values) : values_(std::move(values)) {}  // NOLINT
  const std::vector<int64_t>& values() const { return values_; }

 private:
  std::vector<int64_t> values_;
};

/// Padding of a regular convolution: explicit sizes (as ConvSizes; the same on both sides of each
/// dim), or PyTorch's strings "valid" (no padding) and "same" (output size = input size; only with
/// stride 1). "same" pads dilation * (kernel - 1) in total per dim; when that is odd the extra
/// element goes on the right, as in PyTorch.
class ConvPadding {
 public:
  enum class Mode { kExplicit, kSame, kValid };
  template <std::integral I>
  ConvPadding(I value) : sizes_(value) {}  // NOLINT: implicit on purpose
  ConvPadding(std::initializer_list<int64_t> values) : sizes_(values) {}
  ConvPadding(std::vector<int64_t> values) : sizes_(std::move(values)) {}  // NOLINT
  ConvPadding(ConvSizes sizes) : sizes_(std::move(sizes)) {}               // NOLINT
  /// "same" or "valid"; any other string throws Error.
  ConvPadding(const char* mode) : ConvPadding(std::string_view(mode)) {}         // NOLINT
  ConvPadding(std::string_view mode);                                            // NOLINT
  ConvPadding(const std::string& mode) : ConvPadding(std::string_view(mode)) {}  // NOLINT

  Mode mode() const { return mode_; }
  /// The explicit sizes (meaningful for kExplicit).
  const ConvSizes& sizes() const { return sizes_; }
  /// The string given, for messages ("" for explicit padding).
  const std::string& name() const { return name_; }

 private:
  Mode mode_ = Mode::kExplicit;
  ConvSizes sizes_{0};
  std::string name_;
};

/// Options of conv1d/2d/3d (PyTorch's defaults). Use designated initializers:
/// `{.stride = 2, .padding = "same", .dilation = {1, 2}, .groups = 3}`.
struct ConvOptions {
  ConvSizes stride = 1;
  ConvPadding padding = 0;
  ConvSizes dilation = 1;
  int64_t groups = 1;
};

/// Options of conv_transpose1d/2d/3d (PyTorch's defaults and its argument order). padding is
/// dilation * (kernel - 1) - padding of implicit zero padding on both sides of the input;
/// output_padding adds size to one side of the output (needs output_padding < stride).
struct ConvTransposeOptions {
  ConvSizes stride = 1;
  ConvSizes padding = 0;
  ConvSizes output_padding = 0;
  int64_t groups = 1;
  ConvSizes dilation = 1;
};

/// Regular convolutions: input [N, C_in, L] / [N, C_in, H, W] / [N, C_in, D, H, W] (or without
/// N), output [N, C_out, *out] with out = floor((in + 2 * padding - dilation * (kernel - 1) - 1)
/// / stride) + 1 per dim.
Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(),
              const ConvOptions& options = {});
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(),
              const ConvOptions& options = {});
Tensor conv3d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(),
              const ConvOptions& options = {});

/// Transposed convolutions (the gradient of the regular one w.r.t. its input): output size
/// (in - 1) * stride - 2 * padding + dilation * (kernel - 1) + output_padding + 1 per dim.
Tensor conv_transpose1d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(),
                        const ConvTransposeOptions& options = {});
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(),
                        const ConvTransposeOptions& options = {});
Tensor conv_transpose3d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(),
                        const ConvTransposeOptions& options = {});

/// Temporal convolution in time-batch-channel layout (PyTorch's conv_tbc):
///   output[t, b, o] = bias[o] + sum_{k, c} input[t + k - pad, b, c] * weight[k, c, o]
/// input [T, B, C_in], weight [K, C_in, C_out], bias [C_out] (undefined = no bias), output
/// [T + 2 * pad + 1 - K, B, C_out]. pad in [0, 255] (libaclnn's limit). B = 0 is allowed.
Tensor conv_tbc(const Tensor& input, const Tensor& weight, const Tensor& bias, int64_t pad = 0);

}  // namespace aclgrad
