// Convolution in libaclnn's terms, differentiable to any order: the layer under conv1d/2d/3d,
// conv_transpose1d/2d/3d and conv_tbc (ops/conv.cpp, ops/conv_tbc.cpp), which map their tensors
// onto these with recorded view ops.
//
//   y = conv_acl(c, x, w, b)                 aclnnConvolution (regular or transposed)
//   (dx, dw, db) = conv_acl_backward(c, g, x, w, mask)   aclnnConvolutionBackward, one fused call
//
// conv_acl's backward is conv_acl_backward. conv_acl_backward records itself only when the graph
// is being created (create_graph), so a plain backward stays one fused libaclnn call; its own
// backward (PyTorch's _convolution_double_backward) is made of both again, so third and higher
// orders work too. With B(x, w) = conv_acl(c, x, w, -) bilinear, dx = B_x^T g, dw = B_w^T g,
// db = sum of g over N and the spatial dims, and for incoming gradients ggx, ggw, ggb:
//
//   dL/dg = B(ggx, w) + B(x, ggw) + ggb (broadcast over N and space)
//   dL/dx = B_x^T g with weight ggw           (the data gradient of a conv with weight ggw)
//   dL/dw = B_w^T g with input ggx            (the weight gradient of a conv with input ggx)
//
// Operands are libaclnn-level: batched [N, C, spatial...] activations (1-d lifted to 2-d by the
// caller), weights [C_out, C_in/g, k...] (transposed: [C_in, C_out/g, k...]).
#pragma once

#include <array>

#include "autograd/node.h"
#include "tensor/tensor.h"

namespace aclgrad::detail {

// The attributes libaclnn takes (padding per spatial dim, or [top, bottom, left, right] in 2-d).
struct AclConv {
  bool transposed = false;
  Shape stride, padding, dilation, output_padding;
  int64_t groups = 1;
};

// y = conv(x, w) + b (b may be undefined).
Tensor conv_acl(const AclConv& c, const Tensor& x, const Tensor& w, const Tensor& b);

// The gradients of conv_acl for dL/dy = g: {dx, dw, db}, each undefined where !mask[i]. x is only
// read for dw and w only for dx: the other may be undefined (its shape is then x_sizes /
// w_sizes). bias_size: the number of output channels (db's length).
autograd::tensor_list conv_acl_backward(const AclConv& c, const Tensor& g, const Tensor& x,
                                        const Tensor& w, std::array<bool, 3> mask,
                                        const Shape& x_sizes, const Shape& w_sizes);

}  // namespace aclgrad::detail
