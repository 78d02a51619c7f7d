#include "ops/conv_acl.h"

#include "aclnnop/aclnn_convolution.h"
#include "aclnnop/aclnn_convolution_backward.h"
#include "autograd/function.h"
#include "ops/aclnn_bridge.h"
#include "ops/elementwise.h"
#include "ops/reduction.h"
#include "ops/shape.h"
#include "tensor/creation.h"

namespace aclgrad::detail {

using autograd::make_node;
using autograd::Node;
using autograd::tensor_list;

namespace {

constexpr int8_t kKeepDtype = 0;  // cubeMathType: compute in the operands' own precision

// Padding of spatial dim i on the left and right.
std::pair<int64_t, int64_t> pads(const AclConv& c, size_t i) {
  const size_t nd = c.stride.size();
  if (c.padding.size() == 2 * nd) return {c.padding[2 * i], c.padding[2 * i + 1]};
  return {c.padding[i], c.padding[i]};
}

// y's shape: [N, C_out, out...].
Shape output_sizes(const AclConv& c, const Shape& x, const Shape& w) {
  Shape y = {x[0], c.transposed ? w[1] * c.groups : w[0]};
  for (size_t i = 0; i + 2 < x.size(); ++i) {
    const auto [pl, pr] = pads(c, i);
    const int64_t dk = c.dilation[i] * (w[2 + i] - 1) + 1;
    y.push_back(c.transposed ? (x[2 + i] - 1) * c.stride[i] - pl - pr + dk + c.output_padding[i]
                             : (x[2 + i] + pl + pr - dk) / c.stride[i] + 1);
  }
  return y;
}

// conv_acl's backward: conv_acl_backward, which records itself under create_graph.
struct ConvAclBackward final : Node {
  ConvAclBackward() : Node("ConvolutionBackward") {}
  AclConv c;
  Shape x_sizes, w_sizes;
  size_t x = 0, w = 0;  // slots of the saved input (read for dw) and weight (read for dx)

  tensor_list apply(tensor_list&& grads) override {
    const bool want_x = needs_grad(0), want_w = needs_grad(1), want_b = needs_grad(2);
    return conv_acl_backward(c, grads[0], want_w ? saved(x) : Tensor(),
                             want_x ? saved(w) : Tensor(), {want_x, want_w, want_b}, x_sizes,
                             w_sizes);
  }
};

// conv_acl_backward's backward (see the header): inputs (g, x, w), outputs the defined ones of
// (dx, dw, db), in that order.
struct ConvAclDoubleBackward final : Node {
  ConvAclDoubleBackward() : Node("ConvolutionBackwardBackward") {}
  AclConv c;
  Shape x_sizes, w_sizes;
  std::array<bool, 3> outputs{};  // which of dx, dw, db this node produced
  size_t g = 0, x = 0, w = 0;

  tensor_list apply(tensor_list&& grads) override {
    Tensor gg[3];  // incoming gradients of dx, dw, db (undefined: zero)
    for (size_t k = 0, next = 0; k < 3; ++k)
      if (outputs[k]) gg[k] = grads[next++];
    const Tensor& ggx = gg[0];
    const Tensor& ggw = gg[1];
    const Tensor& ggb = gg[2];
    Tensor dg, dx, dw;
    if (needs_grad(0)) {  // dL/dg = B(ggx, w) + B(x, ggw) + ggb broadcast
      auto add_term = [&](const Tensor& t) { dg = dg.defined() ? add(dg, t) : t; };
      if (ggx.defined()) add_term(conv_acl(c, ggx, saved(w), Tensor()));
      if (ggw.defined()) add_term(conv_acl(c, saved(x), ggw, Tensor()));
      if (ggb.defined()) {
        Shape view(input_sizes(0).size(), 1);
        view[1] = ggb.size(0);
        add_term(broadcast_to(reshape(ggb, view), input_sizes(0)));
      }
      if (!dg.defined()) dg = zeros(input_sizes(0), input_meta(0).dtype);
    }
    if (needs_grad(1) && ggw.defined())  // the data gradient of a conv with weight ggw
      dx = conv_acl_backward(c, saved(g), Tensor(), ggw, {true, false, false}, x_sizes, w_sizes)[0];
    if (needs_grad(2) && ggx.defined())  // the weight gradient of a conv with input ggx
      dw = conv_acl_backward(c, saved(g), ggx, Tensor(), {false, true, false}, x_sizes, w_sizes)[1];
    if (needs_grad(1) && !dx.defined()) dx = zeros(x_sizes, input_meta(1).dtype);
    if (needs_grad(2) && !dw.defined()) dw = zeros(w_sizes, input_meta(2).dtype);
    return {dg, dx, dw};
  }
};

}  // namespace

Tensor conv_acl(const AclConv& c, const Tensor& x, const Tensor& w, const Tensor& b) {
  Tensor out = empty(output_sizes(c, x.sizes(), w.sizes()), x.dtype());
  {
    const auto x_acl = aclnn::view_of(x);
    const auto w_acl = aclnn::view_of(w);
    const auto b_acl = aclnn::optional_view_of(b);
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
  if (auto node = make_node<ConvAclBackward>({x, w, b})) {
    node->c = c;
    node->x_sizes = x.sizes();
    node->w_sizes = w.sizes();
    if (node->needs_grad(1)) node->x = node->save(x);  // dL/dw reads the input
    if (node->needs_grad(0)) node->w = node->save(w);  // dL/dx reads the weight
    node->set_history(out);
  }
  return out;
}

tensor_list conv_acl_backward(const AclConv& c, const Tensor& g, const Tensor& x, const Tensor& w,
                              std::array<bool, 3> mask, const Shape& x_sizes,
                              const Shape& w_sizes) {
  const auto [want_x, want_w, want_b] = mask;
  const Dtype dtype = g.dtype();
  Tensor gx = want_x ? empty(x_sizes, dtype) : Tensor();
  Tensor gw = want_w ? empty(w_sizes, dtype) : Tensor();
  Tensor gb = want_b ? empty({g.size(1)}, dtype) : Tensor();
  {
    const auto g_acl = aclnn::view_of(g);
    const auto x_acl = want_w ? aclnn::view_of(x) : aclnn::shape_only(x_sizes, dtype);
    const auto w_acl = want_x ? aclnn::view_of(w) : aclnn::shape_only(w_sizes, dtype);
    // gradInput / gradWeight are never null (the spec's 161001 rule): unrequested ones are
    // shape-only stand-ins libaclnn validates but does not write.
    const auto gx_acl = want_x ? aclnn::view_of(gx) : aclnn::shape_only(x_sizes, dtype);
    const auto gw_acl = want_w ? aclnn::view_of(gw) : aclnn::shape_only(w_sizes, dtype);
    const auto gb_acl = aclnn::optional_view_of(gb);
    const auto bias_sizes = aclnn::int_array({g.size(1)});
    const auto stride = aclnn::int_array(c.stride);
    const auto padding = aclnn::int_array(c.padding);
    const auto dilation = aclnn::int_array(c.dilation);
    const auto output_padding = aclnn::int_array(c.output_padding);
    const auto mask_acl = aclnn::bool_array({want_x, want_w, want_b});
    aclnn::run_two_phase(
        "aclnnConvolutionBackward",
        [&](uint64_t* workspace_size, aclOpExecutor** executor) {
          return aclnnConvolutionBackwardGetWorkspaceSize(
              g_acl.get(), x_acl.get(), w_acl.get(), bias_sizes.get(), stride.get(), padding.get(),
              dilation.get(), c.transposed, output_padding.get(), static_cast<int>(c.groups),
              mask_acl.get(), kKeepDtype, gx_acl.get(), gw_acl.get(), gb_acl.get(), workspace_size,
              executor);
        },
        aclnnConvolutionBackward);
  }
  // Recorded only while a graph is being built (create_graph): make_node is null otherwise.
  if (auto node =
          make_node<ConvAclDoubleBackward>({g, want_w ? x : Tensor(), want_x ? w : Tensor()})) {
    node->c = c;
    node->x_sizes = x_sizes;
    node->w_sizes = w_sizes;
    node->outputs = mask;
    // dL/dg reads w (for ggx) and x (for ggw); dL/dx and dL/dw read g.
    if (want_x || want_w) node->g = node->save(g);
    if (want_x) node->w = node->save(w);
    if (want_w) node->x = node->save(x);
    for (Tensor* t : {&gx, &gw, &gb})
      if (t->defined()) node->set_history(*t);
  }
  return {gx, gw, gb};
}

}  // namespace aclgrad::detail
