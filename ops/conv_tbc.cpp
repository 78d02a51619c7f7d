// conv_tbc: the temporal convolution of fairseq / PyTorch in [T, B, C] layout. Forward through
// aclnnConvTbc, backward node through aclnnConvTbcBackward (both on zero-copy views).
#include "aclnnop/aclnn_convolution.h"
#include "aclnnop/aclnn_convolution_backward.h"
#include "autograd/function.h"
#include "ops/aclnn_bridge.h"
#include "ops/autocast.h"
#include "ops/conv.h"
#include "ops/conv_acl.h"
#include "ops/shape.h"
#include "tensor/creation.h"

namespace aclgrad {

using autograd::make_node;
using autograd::Node;
using autograd::tensor_list;

namespace {

constexpr int8_t kKeepDtype = 0;  // cubeMathType: compute in the operands' own precision
constexpr auto kNd = aclnn::Format::ND;

// output[t, b, o] = bias[o] + sum_{k, c} input[t + k - pad, b, c] * weight[k, c, o]:
//   dL/dinput[t, b, c] = sum_{k, o} g[t - k + pad, b, o] * weight[k, c, o]   (needs weight)
//   dL/dweight[k, c, o] = sum_{t, b} input[t + k - pad, b, c] * g[t, b, o]   (needs input)
//   dL/dbias[o] = sum_{t, b} g[t, b, o]
// aclnnConvTbcBackward always computes all three; an operand whose gradient nobody needs is not
// saved and libaclnn gets a shape-only stand-in (its gradient output is scratch). While a graph
// is being created (create_graph), the same gradients come from conv_acl_backward on the conv1d
// views of the tensors instead, which is differentiable to any order (ops/conv_acl.h).
struct ConvTbcBackward final : Node {
  ConvTbcBackward() : Node("ConvTbcBackward") {}
  int64_t pad = 0;
  size_t x = 0, w = 0;  // slots of the saved input and weight

  tensor_list apply(tensor_list&& grads) override {
    if (GradMode::is_enabled()) return differentiable(grads[0]);
    const Tensor& g = grads[0];  // [T_out, B, C_out], any strides
    const bool want_x = needs_grad(0), want_w = needs_grad(1), want_b = needs_grad(2);
    const Dtype dtype = input_meta(1).dtype;
    const Shape& x_sizes = input_sizes(0);
    const Shape& w_sizes = input_sizes(1);
    Tensor gx = empty(x_sizes, dtype), gw, gb;
    if (x_sizes[1] == 0) {  // B = 0: libaclnn takes no empty tensors; the sums are empty
      gw = zeros(w_sizes, dtype);
      gb = zeros({w_sizes[2]}, dtype);
    } else {
      gw = empty(w_sizes, dtype);
      gb = empty({w_sizes[2]}, dtype);
      const auto g_acl = aclnn::view_of(g, kNd);
      const auto x_acl =
          want_w ? aclnn::view_of(saved(x), kNd) : aclnn::shape_only(x_sizes, dtype, kNd);
      const auto w_acl =
          want_x ? aclnn::view_of(saved(w), kNd) : aclnn::shape_only(w_sizes, dtype, kNd);
      const auto b_acl = aclnn::shape_only({w_sizes[2]}, dtype, kNd);  // only its shape matters
      const auto gx_acl = aclnn::view_of(gx, kNd);
      const auto gw_acl = aclnn::view_of(gw, kNd);
      const auto gb_acl = aclnn::view_of(gb, kNd);
      aclnn::run_two_phase(
          "aclnnConvTbcBackward",
          [&](uint64_t* workspace_size, aclOpExecutor** executor) {
            return aclnnConvTbcBackwardGetWorkspaceSize(
                g_acl.get(), x_acl.get(), w_acl.get(), b_acl.get(), pad, kKeepDtype, gx_acl.get(),
                gw_acl.get(), gb_acl.get(), workspace_size, executor);
          },
          aclnnConvTbcBackward);
    }
    return {want_x ? gx : Tensor(), want_w ? gw : Tensor(), want_b ? gb : Tensor()};
  }

  // conv1d views: input [T, B, C_in] as [B, C_in, 1, T], weight [K, C_in, C_out] as
  // [C_out, C_in, 1, K], g [T_out, B, C_out] as [B, C_out, 1, T_out] (recorded view ops).
  tensor_list differentiable(const Tensor& g) {
    const bool want_x = needs_grad(0), want_w = needs_grad(1), want_b = needs_grad(2);
    auto act = [](const Tensor& t) { return unsqueeze(permute(t, {1, 2, 0}), 2); };
    auto act_back = [](const Tensor& t) { return permute(squeeze(t, 2), {2, 0, 1}); };
    auto weight = [](const Tensor& t) { return unsqueeze(permute(t, {2, 1, 0}), 2); };
    auto weight_back = [](const Tensor& t) { return permute(squeeze(t, 2), {2, 1, 0}); };
    const Shape& xs = input_sizes(0);
    const Shape& ws = input_sizes(1);
    detail::AclConv c;
    c.stride = {1, 1};
    c.padding = {0, pad};
    c.dilation = {1, 1};
    c.output_padding = {0, 0};
    const tensor_list d = detail::conv_acl_backward(
        c, act(g), want_w ? act(saved(x)) : Tensor(), want_x ? weight(saved(w)) : Tensor(),
        {want_x, want_w, want_b}, {xs[1], xs[2], 1, xs[0]}, {ws[2], ws[1], 1, ws[0]});
    return {want_x ? act_back(d[0]) : Tensor(), want_w ? weight_back(d[1]) : Tensor(), d[2]};
  }
};

void check_conv_tbc(const Tensor& input, const Tensor& weight, const Tensor& bias, int64_t pad) {
  check(input.defined(), "conv_tbc: input is an undefined tensor");
  check(weight.defined(), "conv_tbc: weight is an undefined tensor");
  check<DtypeError>(input.is_floating_point(), "conv_tbc: expected a floating point input ",
                    "(float32, float64, float16 or bfloat16), got ", input.dtype());
  check<DtypeError>(weight.dtype() == input.dtype(),
                    "conv_tbc: expected input and weight to have the same dtype, got input ",
                    input.dtype(), " and weight ", weight.dtype());
  if (bias.defined())
    check<DtypeError>(bias.dtype() == input.dtype(),
                      "conv_tbc: expected bias to have the dtype of input (", input.dtype(),
                      "), got ", bias.dtype());
  check<ShapeError>(input.dim() == 3, "conv_tbc: expected input with 3 dims (T, B, C_in), got ",
                    "input of shape ", input.sizes());
  check<ShapeError>(weight.dim() == 3,
                    "conv_tbc: expected weight with 3 dims (K, C_in, C_out), got weight of shape ",
                    weight.sizes());
  check<ShapeError>(input.size(2) == weight.size(1), "conv_tbc: input of shape ", input.sizes(),
                    " has ", input.size(2), " channels, but weight of shape ", weight.sizes(),
                    " expects ", weight.size(1), " (weight[1])");
  check<ShapeError>(!bias.defined() || (bias.dim() == 1 && bias.size(0) == weight.size(2)),
                    "conv_tbc: expected bias of shape [", weight.size(2),
                    "] (weight[2], the output channels), got bias of shape ",
                    bias.defined() ? bias.sizes() : Shape{});
  check(pad >= 0, "conv_tbc: pad must be >= 0, got ", pad);
  const int64_t t_out = input.size(0) + 2 * pad + 1 - weight.size(0);
  check<ShapeError>(t_out >= 1, "conv_tbc: input of shape ", input.sizes(), " with pad ", pad,
                    " is too short for kernel size ", weight.size(0),
                    " (T + 2 * pad + 1 - K = ", t_out, " must be >= 1)");
}

}  // namespace

Tensor conv_tbc(const Tensor& input, const Tensor& weight, const Tensor& bias, int64_t pad) {
  if (autocast::is_active()) {
    const autocast::OpInputs in(AutocastOp::kConvTbc, {input, weight, bias});
    return conv_tbc(in[0], in[1], in[2], pad);
  }
  check_conv_tbc(input, weight, bias, pad);
  const int64_t c_out = weight.size(2);
  Tensor out =
      empty({input.size(0) + 2 * pad + 1 - weight.size(0), input.size(1), c_out}, input.dtype());
  if (input.size(1) > 0) {  // B = 0: nothing to compute (and libaclnn takes no empty tensors)
    const Tensor b = bias.defined() ? bias : zeros({c_out}, input.dtype());
    const auto x_acl = aclnn::view_of(input, kNd);
    const auto w_acl = aclnn::view_of(weight, kNd);
    const auto b_acl = aclnn::view_of(b, kNd);
    const auto out_acl = aclnn::view_of(out, kNd);
    aclnn::run_two_phase(
        "aclnnConvTbc",
        [&](uint64_t* workspace_size, aclOpExecutor** executor) {
          return aclnnConvTbcGetWorkspaceSize(x_acl.get(), w_acl.get(), b_acl.get(), pad,
                                              out_acl.get(), kKeepDtype, workspace_size, executor);
        },
        aclnnConvTbc);
  }
  if (auto node = make_node<ConvTbcBackward>({input, weight, bias})) {
    node->pad = pad;
    if (node->needs_grad(1)) node->x = node->save(input);
    if (node->needs_grad(0)) node->w = node->save(weight);
    node->set_history(out);
  }
  return out;
}

}  // namespace aclgrad
