// Convolution layers (torch.nn names, options, defaults and reprs): Conv1d/2d/3d,
// ConvTranspose1d/2d/3d and ConvTBC. Forwards are the ops of ops/conv.h (libaclnn).
//
//   auto conv = std::make_shared<nn::Conv2d>(nn::Conv2dOptions(3, 16, 5).stride(2).padding(1));
//   auto same = std::make_shared<nn::Conv1d>(nn::Conv1dOptions(8, 8, 3).padding("same"));
//
// Default init (PyTorch's _ConvNd.reset_parameters): weight kaiming_uniform_(a = √5), i.e.
// U(±1/√fan_in), and bias U(±1/√fan_in), where fan_in = weight.size(1) · prod(kernel_size):
// C_in / groups · prod(k) for Conv, C_out / groups · prod(k) for ConvTranspose (whose weight is
// [C_in, C_out / groups, *k], as in PyTorch).
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "../nn/module.h"
#include "../nn/options.h"
#include "../tensor/random.h"

namespace aclgrad::nn {

/// Padding of a regular convolution: sizes (one number or D), or "same" / "valid".
template <size_t D>
class ConvPaddingNd {
 public:
  template <std::integral I>
  ConvPaddingNd(I value) : sizes_(static_cast<int64_t>(value)) {}  // NOLINT: implicit
  ConvPaddingNd(std::initializer_list<int64_t> values) : sizes_(values) {}
  ConvPaddingNd(const ExpandingArray<D>& sizes) : sizes_(sizes) {}  // NOLINT
  /// "same" or "valid"; Error otherwise.
  ConvPaddingNd(const char* mode) : ConvPaddingNd(std::string(mode)) {}  // NOLINT
  ConvPaddingNd(const std::string& mode) : sizes_(0), mode_(mode) {      // NOLINT
    check(mode == "same" || mode == "valid", "Conv: invalid padding string '", mode,
          "', should be one of {'valid', 'same'}");
  }
  /// "" for explicit sizes, else "same" / "valid".
  const std::string& mode() const { return mode_; }
  const ExpandingArray<D>& sizes() const { return sizes_; }

 private:
  ExpandingArray<D> sizes_;
  std::string mode_;
};

template <size_t D>
struct ConvNdOptions {
  ConvNdOptions(int64_t in_channels, int64_t out_channels, ExpandingArray<D> kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {}
  ACLGRAD_ARG(int64_t, in_channels);
  ACLGRAD_ARG(int64_t, out_channels);
  ACLGRAD_ARG(ExpandingArray<D>, kernel_size);
  ACLGRAD_ARG(ExpandingArray<D>, stride) = 1;
  ACLGRAD_ARG(ConvPaddingNd<D>, padding) = 0;
  ACLGRAD_ARG(ExpandingArray<D>, dilation) = 1;
  ACLGRAD_ARG(int64_t, groups) = 1;
  ACLGRAD_ARG(bool, bias) = true;
  /// "zeros", "reflect" or "replicate" ("circular" is not supported).
  ACLGRAD_ARG(std::string, padding_mode) = "zeros";
};
using Conv1dOptions = ConvNdOptions<1>;
using Conv2dOptions = ConvNdOptions<2>;
using Conv3dOptions = ConvNdOptions<3>;

/// Input [N, C_in, *spatial] or unbatched [C_in, *spatial]. Parameters: weight
/// [C_out, C_in / groups, *kernel_size], bias [C_out] (if options.bias()).
template <size_t D>
class ConvNd : public Module {
 public:
  explicit ConvNd(const ConvNdOptions<D>& options);
  ConvNd(int64_t in_channels, int64_t out_channels, ExpandingArray<D> kernel_size)
      : ConvNd(ConvNdOptions<D>(in_channels, out_channels, kernel_size)) {}
  void reset_parameters(Generator* gen = nullptr);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  ConvNdOptions<D> options;
  Tensor weight;
  Tensor bias;  // undefined without bias
};
using Conv1d = ConvNd<1>;
using Conv2d = ConvNd<2>;
using Conv3d = ConvNd<3>;

template <size_t D>
struct ConvTransposeNdOptions {
  ConvTransposeNdOptions(int64_t in_channels, int64_t out_channels, ExpandingArray<D> kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {}
  ACLGRAD_ARG(int64_t, in_channels);
  ACLGRAD_ARG(int64_t, out_channels);
  ACLGRAD_ARG(ExpandingArray<D>, kernel_size);
  ACLGRAD_ARG(ExpandingArray<D>, stride) = 1;
  ACLGRAD_ARG(ExpandingArray<D>, padding) = 0;
  ACLGRAD_ARG(ExpandingArray<D>, output_padding) = 0;
  ACLGRAD_ARG(int64_t, groups) = 1;
  ACLGRAD_ARG(bool, bias) = true;
  ACLGRAD_ARG(ExpandingArray<D>, dilation) = 1;
};
using ConvTranspose1dOptions = ConvTransposeNdOptions<1>;
using ConvTranspose2dOptions = ConvTransposeNdOptions<2>;
using ConvTranspose3dOptions = ConvTransposeNdOptions<3>;

/// Parameters: weight [C_in, C_out / groups, *kernel_size], bias [C_out] (if options.bias()).
template <size_t D>
class ConvTransposeNd : public Module {
 public:
  explicit ConvTransposeNd(const ConvTransposeNdOptions<D>& options);
  ConvTransposeNd(int64_t in_channels, int64_t out_channels, ExpandingArray<D> kernel_size)
      : ConvTransposeNd(ConvTransposeNdOptions<D>(in_channels, out_channels, kernel_size)) {}
  void reset_parameters(Generator* gen = nullptr);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  ConvTransposeNdOptions<D> options;
  Tensor weight;
  Tensor bias;
};
using ConvTranspose1d = ConvTransposeNd<1>;
using ConvTranspose2d = ConvTransposeNd<2>;
using ConvTranspose3d = ConvTransposeNd<3>;

struct ConvTBCOptions {
  ConvTBCOptions(int64_t in_channels, int64_t out_channels, int64_t kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {}
  ACLGRAD_ARG(int64_t, in_channels);
  ACLGRAD_ARG(int64_t, out_channels);
  ACLGRAD_ARG(int64_t, kernel_size);
  ACLGRAD_ARG(int64_t, padding) = 0;
};

/// fairseq's ConvTBC (torch.conv_tbc as a layer): input [T, B, C_in] -> [T + 2·pad + 1 - K, B,
/// C_out]. Parameters: weight [K, C_in, C_out], bias [C_out] (always present, as in fairseq).
/// Init: the Conv1d default for the same layer (fairseq's own reset_parameters uses
/// xavier_normal_ on the [K, C_in, C_out] tensor, whose fans then mix kernel and channels), i.e.
/// weight and bias U(±1/√(C_in·K)), so a ConvTBC starts like the Conv1d it computes.
class ConvTBC : public Module {
 public:
  explicit ConvTBC(const ConvTBCOptions& options);
  ConvTBC(int64_t in_channels, int64_t out_channels, int64_t kernel_size)
      : ConvTBC(ConvTBCOptions(in_channels, out_channels, kernel_size)) {}
  void reset_parameters(Generator* gen = nullptr);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  ConvTBCOptions options;
  Tensor weight;
  Tensor bias;
};

extern template class ConvNd<1>;
extern template class ConvNd<2>;
extern template class ConvNd<3>;
extern template class ConvTransposeNd<1>;
extern template class ConvTransposeNd<2>;
extern template class ConvTransposeNd<3>;

}  // namespace aclgrad::nn
