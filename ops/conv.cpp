// conv1d/2d/3d and conv_transpose1d/2d/3d: argument checks (PyTorch's rules and messages) and the
// mapping of a call onto libaclnn's tensors (ConvCall); the convolution itself, forward and
// backward of every order, is conv_acl (ops/conv_acl.h).
//
// How a call maps onto libaclnn (all views are zero-copy layout changes, recorded so gradients
// flow back through them):
//   - input without batch: a unit batch dim is added (and removed from the results);
//   - padding "same" with an odd total dilation * (kernel - 1) in some dim pads one more element on
//     the right, like PyTorch. libaclnn takes asymmetric padding only in 2d ([top, bottom, left,
//     right]), so: 2d passes it directly; 1d runs as a 2d convolution with a unit height (input
//     [N, C, 1, L], weight [C_out, C_in/g, 1, k]); 3d copies the input once into a buffer with
//     the extra zeros on the right (pad(); its gradient is the matching slice of the buffer's
//     gradient) and convolves that with the symmetric part of the padding.
#include "ops/conv.h"

#include "ops/autocast.h"
#include "ops/conv_acl.h"
#include "ops/shape.h"
#include "tensor/creation.h"

namespace aclgrad {

ConvPadding::ConvPadding(std::string_view mode) : name_(mode) {
  if (mode == "same") {
    mode_ = Mode::kSame;
  } else if (mode == "valid") {
    mode_ = Mode::kValid;
  } else {
    detail::fail<Error>(std::source_location::current(), "conv: invalid padding string '", mode,
                        "'; expected \"same\", \"valid\" or padding sizes");
  }
}

namespace {

const char* const kInputDims[3] = {"(N, C, L)", "(N, C, H, W)", "(N, C, D, H, W)"};
const char* const kUnbatchedDims[3] = {"(C, L)", "(C, H, W)", "(C, D, H, W)"};
const char* const kWeightDims[3] = {"(C_out, C_in / groups, kL)", "(C_out, C_in / groups, kH, kW)",
                                    "(C_out, C_in / groups, kD, kH, kW)"};
const char* const kTransposedWeightDims[3] = {"(C_in, C_out / groups, kL)",
                                              "(C_in, C_out / groups, kH, kW)",
                                              "(C_in, C_out / groups, kD, kH, kW)"};

// What the user asked for, with every size expanded to one value per spatial dim.
struct ConvArgs {
  const char* op;
  int64_t nd;
  bool transposed;
  Shape stride, pad_left, pad_right, dilation, output_padding;
  int64_t groups;
};

// One convolution call in libaclnn's terms: the attributes libaclnn gets (AclConv), and how
// framework tensors are viewed for libaclnn (recorded view ops, so gradients of every order flow
// back through them) and the shape of its output.
struct ConvCall : detail::AclConv {
  bool unbatched = false;  // input had no batch dim
  bool lift_1d = false;    // 1d runs as 2d with a unit height
  Shape pre_pad;           // zeros appended to each spatial dim by a copy (3d "same"); empty = none
  Shape out_sizes;         // libaclnn's output [N, C_out, *out]

  // input / output: framework layout <-> libaclnn layout.
  Tensor act_to_acl(const Tensor& t) const {
    const Tensor b = unbatched ? unsqueeze(t, 0) : t;
    return lift_1d ? unsqueeze(b, 2) : b;
  }
  Tensor act_from_acl(const Tensor& t) const {
    const Tensor b = lift_1d ? squeeze(t, 2) : t;
    return unbatched ? squeeze(b, 0) : b;
  }
  Tensor weight_to_acl(const Tensor& w) const { return lift_1d ? unsqueeze(w, 2) : w; }

  // The input libaclnn convolves: x_acl itself, or x_acl with zeros appended (pre_pad).
  Tensor padded(const Tensor& x_acl) const {
    if (pre_pad.empty()) return x_acl;
    Shape pads;  // pad(): last dim first, (left, right) each
    for (size_t i = pre_pad.size(); i-- > 0;) pads.insert(pads.end(), {0, pre_pad[i]});
    return pad(x_acl, pads);
  }
};

Shape expand_sizes(const char* op, const char* name, const std::vector<int64_t>& v, int64_t nd) {
  const int64_t n = static_cast<int64_t>(v.size());
  check(n == 1 || n == nd, op, ": expected ", name, " to have ",
        nd == 1   ? "1 value"
        : nd == 2 ? "1 or 2 values"
                  : "1 or 3 values",
        ", got ", v);
  return n == 1 ? Shape(static_cast<size_t>(nd), v[0]) : v;
}

void check_all_at_least(const char* op, const char* name, const Shape& v, int64_t lo) {
  for (int64_t x : v) check(x >= lo, op, ": ", name, " must be >= ", lo, " in every dim, got ", v);
}

void check_tensors(const ConvArgs& a, const Tensor& input, const Tensor& weight,
                   const Tensor& bias) {
  const int64_t nd = a.nd;
  check(input.defined(), a.op, ": input is an undefined tensor");
  check(weight.defined(), a.op, ": weight is an undefined tensor");
  check<DtypeError>(input.is_floating_point(), a.op,
                    ": expected a floating point input (float32, float64, float16 or bfloat16), "
                    "got ",
                    input.dtype());
  check<DtypeError>(weight.dtype() == input.dtype(), a.op,
                    ": expected input and weight to have the same dtype, got input ", input.dtype(),
                    " and weight ", weight.dtype());
  if (bias.defined())
    check<DtypeError>(bias.dtype() == input.dtype(), a.op,
                      ": expected bias to have the dtype of input (", input.dtype(), "), got ",
                      bias.dtype());
  check<ShapeError>(input.dim() == nd + 2 || input.dim() == nd + 1, a.op, ": expected input with ",
                    nd + 2, " dims ", kInputDims[nd - 1], " or ", nd + 1, " dims ",
                    kUnbatchedDims[nd - 1], " without batch, got input of shape ", input.sizes());
  check<ShapeError>(weight.dim() == nd + 2, a.op, ": expected weight with ", nd + 2, " dims ",
                    a.transposed ? kTransposedWeightDims[nd - 1] : kWeightDims[nd - 1],
                    ", got weight of shape ", weight.sizes());
  check(a.groups >= 1, a.op, ": groups must be >= 1, got ", a.groups);

  const int64_t c_in = input.size(input.dim() - nd - 1);
  const int64_t w0 = weight.size(0);
  check<ShapeError>(w0 % a.groups == 0, a.op, ": weight of shape ", weight.sizes(), " has ", w0,
                    a.transposed ? " input channels" : " output channels",
                    " (weight[0]), which is not divisible by groups = ", a.groups);
  const int64_t expected_c_in = a.transposed ? w0 : weight.size(1) * a.groups;
  check<ShapeError>(c_in == expected_c_in, a.op, ": input of shape ", input.sizes(), " has ", c_in,
                    " channels, but weight of shape ", weight.sizes(), " with groups = ", a.groups,
                    " expects ", expected_c_in,
                    a.transposed ? " (weight[0])" : " (weight[1] * groups)");
  const int64_t c_out = a.transposed ? weight.size(1) * a.groups : w0;
  check<ShapeError>(!bias.defined() || (bias.dim() == 1 && bias.size(0) == c_out), a.op,
                    ": expected bias of shape [", c_out,
                    "] (one value per output channel), got bias of shape ",
                    bias.defined() ? bias.sizes() : Shape{});
}

// The output's spatial sizes (framework-level), checking the kernel fits / the output is non-empty.
Shape output_spatial(const ConvArgs& a, const Tensor& input, const Tensor& weight) {
  Shape out(static_cast<size_t>(a.nd));
  const int64_t first = input.dim() - a.nd;
  for (int64_t i = 0; i < a.nd; ++i) {
    const int64_t len = input.size(first + i), k = weight.size(2 + i);
    const int64_t dk = a.dilation[i] * (k - 1) + 1;
    const int64_t pads = a.pad_left[i] + a.pad_right[i];
    if (!a.transposed) {
      check<ShapeError>(len + pads >= dk, a.op, ": input of shape ", input.sizes(),
                        " is too small for weight of shape ", weight.sizes(), ": padded size ",
                        len + pads, " in spatial dim ", i, " is smaller than the dilated kernel ",
                        "size ", dk, " ((kernel - 1) * dilation + 1)");
      out[i] = (len + pads - dk) / a.stride[i] + 1;
    } else {
      out[i] = (len - 1) * a.stride[i] - pads + dk + a.output_padding[i];
    }
  }
  if (a.transposed) {
    for (int64_t o : out)
      check<ShapeError>(o >= 1, a.op, ": input of shape ", input.sizes(), " with weight of shape ",
                        weight.sizes(), " gives output size ", out, " (every dim must be >= 1)");
  }
  return out;
}

ConvCall plan(const ConvArgs& a, const Tensor& input, const Tensor& weight, const Tensor& bias) {
  check_tensors(a, input, weight, bias);
  const Shape spatial_out = output_spatial(a, input, weight);

  ConvCall c;
  c.transposed = a.transposed;
  c.groups = a.groups;
  c.unbatched = input.dim() == a.nd + 1;
  c.stride = a.stride;
  c.dilation = a.dilation;
  c.output_padding = a.output_padding;
  c.padding = a.pad_left;
  if (a.pad_left != a.pad_right) {
    if (a.nd == 2) {
      c.padding = {a.pad_left[0], a.pad_right[0], a.pad_left[1], a.pad_right[1]};
    } else if (a.nd == 1) {
      c.lift_1d = true;
      c.stride = {1, a.stride[0]};
      c.dilation = {1, a.dilation[0]};
      c.output_padding = {0, a.output_padding[0]};
      c.padding = {0, 0, a.pad_left[0], a.pad_right[0]};
    } else {
      c.pre_pad.resize(3);
      for (size_t i = 0; i < 3; ++i) c.pre_pad[i] = a.pad_right[i] - a.pad_left[i];
    }
  }
  const int64_t n = c.unbatched ? 1 : input.size(0);
  const int64_t c_out = a.transposed ? weight.size(1) * a.groups : weight.size(0);
  c.out_sizes = {n, c_out};
  if (c.lift_1d) c.out_sizes.push_back(1);
  c.out_sizes.insert(c.out_sizes.end(), spatial_out.begin(), spatial_out.end());
  return c;
}

// y = conv(x, w) + b, or its transposed form, as conv_acl on libaclnn's views of the tensors
// (ops/conv_acl.h: differentiable to any order; a plain backward is one fused
// aclnnConvolutionBackward call with outputMask = which inputs need a gradient).
Tensor convolution(const ConvArgs& a, const Tensor& input, const Tensor& weight,
                   const Tensor& bias) {
  const ConvCall c = plan(a, input, weight, bias);
  const Tensor x = c.padded(c.act_to_acl(input));
  return c.act_from_acl(detail::conv_acl(c, x, c.weight_to_acl(weight), bias));
}

Tensor conv_nd(const char* op, int64_t nd, const Tensor& input, const Tensor& weight,
               const Tensor& bias, const ConvOptions& o) {
  ConvArgs a{op, nd, false, {}, {}, {}, {}, {}, o.groups};
  a.stride = expand_sizes(op, "stride", o.stride.values(), nd);
  a.dilation = expand_sizes(op, "dilation", o.dilation.values(), nd);
  check_all_at_least(op, "stride", a.stride, 1);
  check_all_at_least(op, "dilation", a.dilation, 1);
  a.output_padding = Shape(static_cast<size_t>(nd), 0);
  switch (o.padding.mode()) {
    case ConvPadding::Mode::kExplicit:
      a.pad_left = a.pad_right = expand_sizes(op, "padding", o.padding.sizes().values(), nd);
      check_all_at_least(op, "padding", a.pad_left, 0);
      break;
    case ConvPadding::Mode::kValid:
      a.pad_left = a.pad_right = Shape(static_cast<size_t>(nd), 0);
      break;
    case ConvPadding::Mode::kSame:
      for (int64_t s : a.stride)
        check(s == 1, op, ": padding='same' is not supported for strided convolutions, got stride ",
              a.stride);
      // The kernel sizes come from the weight; check its rank first for a clear message.
      check<ShapeError>(weight.defined() && weight.dim() == nd + 2, op, ": expected weight with ",
                        nd + 2, " dims ", kWeightDims[nd - 1], ", got weight of shape ",
                        weight.defined() ? weight.sizes() : Shape{});
      for (int64_t i = 0; i < nd; ++i) {
        const int64_t total = a.dilation[i] * (weight.size(2 + i) - 1);
        a.pad_left.push_back(total / 2);
        a.pad_right.push_back(total - total / 2);
      }
      break;
  }
  return convolution(a, input, weight, bias);
}

Tensor conv_transpose_nd(const char* op, int64_t nd, const Tensor& input, const Tensor& weight,
                         const Tensor& bias, const ConvTransposeOptions& o) {
  ConvArgs a{op, nd, true, {}, {}, {}, {}, {}, o.groups};
  a.stride = expand_sizes(op, "stride", o.stride.values(), nd);
  a.dilation = expand_sizes(op, "dilation", o.dilation.values(), nd);
  a.pad_left = a.pad_right = expand_sizes(op, "padding", o.padding.values(), nd);
  a.output_padding = expand_sizes(op, "output_padding", o.output_padding.values(), nd);
  check_all_at_least(op, "stride", a.stride, 1);
  check_all_at_least(op, "dilation", a.dilation, 1);
  check_all_at_least(op, "padding", a.pad_left, 0);
  check_all_at_least(op, "output_padding", a.output_padding, 0);
  for (int64_t i = 0; i < nd; ++i)
    check(a.output_padding[i] < a.stride[i] || a.output_padding[i] < a.dilation[i], op,
          ": output_padding ", a.output_padding, " must be smaller than either stride ", a.stride,
          " or dilation ", a.dilation, " in every dim");
  return convolution(a, input, weight, bias);
}

}  // namespace

Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias,
              const ConvOptions& options) {
  if (autocast::is_active()) {
    const autocast::OpInputs in(AutocastOp::kConv1d, {input, weight, bias});
    return conv1d(in[0], in[1], in[2], options);
  }
  return conv_nd("conv1d", 1, input, weight, bias, options);
}
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias,
              const ConvOptions& options) {
  if (autocast::is_active()) {
    const autocast::OpInputs in(AutocastOp::kConv2d, {input, weight, bias});
    return conv2d(in[0], in[1], in[2], options);
  }
  return conv_nd("conv2d", 2, input, weight, bias, options);
}
Tensor conv3d(const Tensor& input, const Tensor& weight, const Tensor& bias,
              const ConvOptions& options) {
  if (autocast::is_active()) {
    const autocast::OpInputs in(AutocastOp::kConv3d, {input, weight, bias});
    return conv3d(in[0], in[1], in[2], options);
  }
  return conv_nd("conv3d", 3, input, weight, bias, options);
}
Tensor conv_transpose1d(const Tensor& input, const Tensor& weight, const Tensor& bias,
                        const ConvTransposeOptions& options) {
  if (autocast::is_active()) {
    const autocast::OpInputs in(AutocastOp::kConvTranspose1d, {input, weight, bias});
    return conv_transpose1d(in[0], in[1], in[2], options);
  }
  return conv_transpose_nd("conv_transpose1d", 1, input, weight, bias, options);
}
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias,
                        const ConvTransposeOptions& options) {
  if (autocast::is_active()) {
    const autocast::OpInputs in(AutocastOp::kConvTranspose2d, {input, weight, bias});
    return conv_transpose2d(in[0], in[1], in[2], options);
  }
  return conv_transpose_nd("conv_transpose2d", 2, input, weight, bias, options);
}
Tensor conv_transpose3d(const Tensor& input, const Tensor& weight, const Tensor& bias,
                        const ConvTransposeOptions& options) {
  if (autocast::is_active()) {
    const autocast::OpInputs in(AutocastOp::kConvTranspose3d, {input, weight, bias});
    return conv_transpose3d(in[0], in[1], in[2], options);
  }
  return conv_transpose_nd("conv_transpose3d", 3, input, weight, bias, options);
}

}  // namespace aclgrad
