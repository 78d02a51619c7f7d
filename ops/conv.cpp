// conv1d/2d/3d and conv_transpose1d/2d/3d: argument checks (PyTorch's rules and messages), the
// mapping of a call onto libaclnn's tensors (ConvCall), the forward through aclnnConvolution and,
// next to it, the backward node through aclnnConvolutionBackward.
//
// How a call maps onto libaclnn (all views are zero-copy layout changes):
//   - input without batch: a unit batch dim is added (and removed from the results);
//   - padding "same" with an odd total dilation * (kernel - 1) in some dim pads one more element on
//     the right, like PyTorch. libaclnn takes asymmetric padding only in 2d ([top, bottom, left,
//     right]), so: 2d passes it directly; 1d runs as a 2d convolution with a unit height (input
//     [N, C, 1, L], weight [C_out, C_in/g, 1, k]); 3d copies the input once into a buffer with
//     the extra zeros on the right (its gradient is the matching slice of the buffer's gradient)
//     and convolves that with the symmetric part of the padding.
#include "ops/conv.h"

#include "aclnnop/aclnn_convolution.h"
#include "aclnnop/aclnn_convolution_backward.h"
#include "autograd/function.h"
#include "tensor/creation.h"

namespace aclgrad {

using autograd::make_node;
using autograd::Node;
using autograd::tensor_list;

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

constexpr int8_t kKeepDtype = 0;  // cubeMathType: compute in the operands' own precision

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

// One convolution call in libaclnn's terms: how framework tensors are viewed for libaclnn, the
// attribute arrays it gets, and the shape of its output.
struct ConvCall {
  bool transposed = false;
  bool unbatched = false;  // input had no batch dim
  bool lift_1d = false;    // 1d runs as 2d with a unit height
  Shape pre_pad;           // zeros appended to each spatial dim by a copy (3d "same"); empty = none
  Shape stride, padding, dilation, output_padding;  // for libaclnn's rank
  int64_t groups = 1;
  Shape out_sizes;  // libaclnn's output [N, C_out, *out]

  // input / output / their gradients: framework layout <-> libaclnn layout.
  Tensor act_to_acl(const Tensor& t) const {
    const Tensor b = unbatched ? t.unsqueeze(0) : t;
    return lift_1d ? b.unsqueeze(2) : b;
  }
  Tensor act_from_acl(const Tensor& t) const {
    const Tensor b = lift_1d ? t.select(2, 0) : t;
    return unbatched ? b.select(0, 0) : b;
  }
  Tensor weight_to_acl(const Tensor& w) const { return lift_1d ? w.unsqueeze(2) : w; }
  Tensor weight_from_acl(const Tensor& w) const { return lift_1d ? w.select(2, 0) : w; }

  // The input libaclnn convolves: x_acl itself, or a zero-padded copy (pre_pad).
  Tensor padded(const Tensor& x_acl) const {
    if (pre_pad.empty()) return x_acl;
    Shape sizes = x_acl.sizes();
    for (size_t i = 0; i < pre_pad.size(); ++i) sizes[2 + i] += pre_pad[i];
    Tensor buf = zeros(sizes, x_acl.dtype());
    Tensor interior = buf;
    for (size_t i = 0; i < pre_pad.size(); ++i)
      interior = interior.narrow(static_cast<int64_t>(2 + i), 0, x_acl.size(2 + i));
    interior.copy_(x_acl);
    return buf;
  }
  // The gradient of padded(): the interior of the padded input's gradient.
  Tensor unpadded(const Tensor& g) const {
    if (pre_pad.empty()) return g;
    Tensor interior = g;
    for (size_t i = 0; i < pre_pad.size(); ++i)
      interior = interior.narrow(static_cast<int64_t>(2 + i), 0, g.size(2 + i) - pre_pad[i]);
    return interior.contiguous();
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

// y = conv(x, w) + b, or its transposed form. The backward computes, through one
// aclnnConvolutionBackward call with outputMask = which inputs need a gradient:
//   dL/dx = conv^T(dL/dy, w) (needs w),  dL/dw = correlation of x with dL/dy (needs x),
//   dL/db = sum of dL/dy over N and the spatial dims (needs neither).
// An operand the requested gradients do not read is not saved; libaclnn gets a shape-only
// stand-in for it.
struct ConvolutionBackward final : Node {
  ConvolutionBackward() : Node("ConvolutionBackward", /*supports_double_backward=*/false) {}
  ConvCall call;
  Shape x_sizes, w_sizes;  // libaclnn-level shapes of the (padded) input and the weight
  size_t x = 0, w = 0;     // slots of the saved libaclnn-level input and weight

  tensor_list apply(tensor_list&& grads) override {
    const bool want_x = needs_grad(0), want_w = needs_grad(1), want_b = needs_grad(2);
    const Dtype dtype = input_meta(1).dtype;
    const Tensor g = call.act_to_acl(grads[0]);  // [N, C_out, *out], any strides
    const Tensor xv = want_w ? saved(x) : Tensor();
    const Tensor wv = want_x ? saved(w) : Tensor();
    Tensor gx = want_x ? empty(x_sizes, dtype) : Tensor();
    Tensor gw = want_w ? empty(w_sizes, dtype) : Tensor();
    Tensor gb = want_b ? empty({call.out_sizes[1]}, dtype) : Tensor();

    const auto g_acl = aclnn::view_of(g);
    const auto x_acl = want_w ? aclnn::view_of(xv) : aclnn::shape_only(x_sizes, dtype);
    const auto w_acl = want_x ? aclnn::view_of(wv) : aclnn::shape_only(w_sizes, dtype);
    const auto gx_acl = aclnn::optional_view_of(gx);
    const auto gw_acl = aclnn::optional_view_of(gw);
    const auto gb_acl = aclnn::optional_view_of(gb);
    const auto bias_sizes = aclnn::int_array({call.out_sizes[1]});
    const auto stride = aclnn::int_array(call.stride);
    const auto padding = aclnn::int_array(call.padding);
    const auto dilation = aclnn::int_array(call.dilation);
    const auto output_padding = aclnn::int_array(call.output_padding);
    const auto mask = aclnn::bool_array({want_x, want_w, want_b});
    aclnn::run_two_phase(
        "aclnnConvolutionBackward",
        [&](uint64_t* workspace_size, aclOpExecutor** executor) {
          return aclnnConvolutionBackwardGetWorkspaceSize(
              g_acl.get(), x_acl.get(), w_acl.get(), bias_sizes.get(), stride.get(), padding.get(),
              dilation.get(), call.transposed, output_padding.get(), static_cast<int>(call.groups),
              mask.get(), kKeepDtype, gx_acl.get(), gw_acl.get(), gb_acl.get(), workspace_size,
              executor);
        },
        aclnnConvolutionBackward);
    return {want_x ? call.act_from_acl(call.unpadded(gx)) : Tensor(),
            want_w ? call.weight_from_acl(gw) : Tensor(), gb};
  }
};

Tensor convolution(const ConvArgs& a, const Tensor& input, const Tensor& weight,
                   const Tensor& bias) {
  const ConvCall c = plan(a, input, weight, bias);
  const Tensor x = c.padded(c.act_to_acl(input));
  const Tensor w = c.weight_to_acl(weight);
  Tensor out = empty(c.out_sizes, input.dtype());
  {
    const auto x_acl = aclnn::view_of(x);
    const auto w_acl = aclnn::view_of(w);
    const auto b_acl = aclnn::optional_view_of(bias);
    const auto out_acl = aclnn::view_of(out);
    const auto stride = aclnn::int_array(c.stride);
    const auto padding = aclnn::int_array(c.padding);
    const auto dilation = aclnn::int_array(c.dilation);
    const auto output_padding = aclnn::int_array(c.output_padding);
    aclnn::run_two_phase(
        "aclnnConvolution",
        [&](uint64_t* workspace_size, aclOpExecutor** executor) {
          return aclnnConvolutionGetWorkspaceSize(
              x_acl.get(), w_acl.get(), b_acl.get(), stride.get(), padding.get(), dilation.get(),
              c.transposed, output_padding.get(), c.groups, out_acl.get(), kKeepDtype,
              workspace_size, executor);
        },
        aclnnConvolution);
  }
  Tensor result = c.act_from_acl(out);
  if (auto node = make_node<ConvolutionBackward>({input, weight, bias})) {
    node->call = c;
    node->x_sizes = x.sizes();
    node->w_sizes = w.sizes();
    if (node->needs_grad(1)) node->x = node->save(x);  // dL/dw reads the input
    if (node->needs_grad(0)) node->w = node->save(w);  // dL/dx reads the weight
    node->set_history(result);
  }
  return result;
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
  return conv_nd("conv1d", 1, input, weight, bias, options);
}
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias,
              const ConvOptions& options) {
  return conv_nd("conv2d", 2, input, weight, bias, options);
}
Tensor conv3d(const Tensor& input, const Tensor& weight, const Tensor& bias,
              const ConvOptions& options) {
  return conv_nd("conv3d", 3, input, weight, bias, options);
}
Tensor conv_transpose1d(const Tensor& input, const Tensor& weight, const Tensor& bias,
                        const ConvTransposeOptions& options) {
  return conv_transpose_nd("conv_transpose1d", 1, input, weight, bias, options);
}
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias,
                        const ConvTransposeOptions& options) {
  return conv_transpose_nd("conv_transpose2d", 2, input, weight, bias, options);
}
Tensor conv_transpose3d(const Tensor& input, const Tensor& weight, const Tensor& bias,
                        const ConvTransposeOptions& options) {
  return conv_transpose_nd("conv_transpose3d", 3, input, weight, bias, options);
}

}  // namespace aclgrad
