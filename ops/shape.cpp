// Shape ops: each forward is a Tensor layout method (or a copy for cat/stack/pad), recorded here
// with a backward that undoes the layout change with the same differentiable ops:
//   view/reshape/squeeze/unsqueeze/flatten  <->  reshape back to the input's sizes
//   permute/transpose                       <->  the inverse permutation
//   expand                                  <->  sum_to
//   narrow/slice/select (a window of x)     <->  scatter_window (zeros with the window set)
//   cat/stack                               <->  narrow/select of the gradient
//   constant pad                            <->  pad by the negated amounts (crops back)
//   reflect/replicate pad (index_select)    <->  index_add
#include "ops/shape.h"

#include <algorithm>

#include "autograd/function.h"
#include "ops/autocast.h"
#include "ops/reduction.h"
#include "tensor/creation.h"
#include "tensor/iter.h"

namespace aclgrad {

using autograd::make_node;
using autograd::Node;
using autograd::tensor_list;

// ---------------------------------------------------------------------------------------------
// Views that keep every element: the gradient is reshaped / permuted back.

namespace {

struct ReshapeBackward final : Node {
  explicit ReshapeBackward(const char* name) : Node(name) {}
  tensor_list apply(tensor_list&& grads) override { return {reshape(grads[0], input_sizes(0))}; }
};

// out is a fresh tensor (a layout method's result) holding x's elements in a new shape.
Tensor record_reshape(const Tensor& x, Tensor out, const char* name) {
  if (auto node = make_node<ReshapeBackward>({x}, name)) node->set_history(out);
  return out;
}

struct PermuteBackward final : Node {
  explicit PermuteBackward(Shape inverse) : Node("PermuteBackward"), inverse(std::move(inverse)) {}
  Shape inverse;
  tensor_list apply(tensor_list&& grads) override { return {permute(grads[0], inverse)}; }
};

struct TransposeBackward final : Node {
  TransposeBackward(int64_t d0, int64_t d1) : Node("TransposeBackward"), d0(d0), d1(d1) {}
  int64_t d0, d1;
  tensor_list apply(tensor_list&& grads) override { return {transpose(grads[0], d0, d1)}; }
};

struct ExpandBackward final : Node {
  ExpandBackward() : Node("ExpandBackward") {}
  tensor_list apply(tensor_list&& grads) override { return {sum_to(grads[0], input_sizes(0))}; }
};

}  // namespace

Tensor view(const Tensor& x, const Shape& sizes) {
  return record_reshape(x, x.view(sizes), "ViewBackward");
}

Tensor reshape(const Tensor& x, const Shape& sizes) {
  return record_reshape(x, x.reshape(sizes), "ReshapeBackward");
}

Tensor squeeze(const Tensor& x) {
  return record_reshape(x, x.squeeze(), "SqueezeBackward");
}

Tensor squeeze(const Tensor& x, int64_t dim) {
  return record_reshape(x, x.squeeze(dim), "SqueezeBackward");
}

Tensor unsqueeze(const Tensor& x, int64_t dim) {
  return record_reshape(x, x.unsqueeze(dim), "UnsqueezeBackward");
}

Tensor flatten(const Tensor& x, int64_t start_dim, int64_t end_dim) {
  return record_reshape(x, x.flatten(start_dim, end_dim), "FlattenBackward");
}

Tensor permute(const Tensor& x, const Shape& dims) {
  Tensor out = x.permute(dims);  // validates dims
  if (auto node = make_node<PermuteBackward>({x}, Shape(dims.size()))) {
    for (size_t i = 0; i < dims.size(); ++i)
      node->inverse[wrap_dim(dims[i], x.dim(), "permute")] = i;
    node->set_history(out);
  }
  return out;
}

Tensor transpose(const Tensor& x, int64_t dim0, int64_t dim1) {
  Tensor out = x.transpose(dim0, dim1);
  if (auto node = make_node<TransposeBackward>({x}, dim0, dim1)) node->set_history(out);
  return out;
}

Tensor expand(const Tensor& x, const Shape& sizes) {
  Tensor out = x.expand(sizes);
  if (auto node = make_node<ExpandBackward>({x})) node->set_history(out);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Windows (narrow, slice, select): y = x seen through `window`, a layout over a contiguous tensor
// of x's sizes. dy/dx scatters g into zeros at the window; the adjoint of that reads the window.

namespace {

Tensor take_window(const Tensor& x, const Layout& window, const char* name);
Tensor scatter_window(const Tensor& g, const Shape& sizes, const Layout& window);

struct WindowBackward final : Node {
  WindowBackward(const char* name, Layout window) : Node(name), window(std::move(window)) {}
  Layout window;
  tensor_list apply(tensor_list&& grads) override {
    return {scatter_window(grads[0], input_sizes(0), window)};
  }
};

struct ScatterWindowBackward final : Node {
  explicit ScatterWindowBackward(Layout window)
      : Node("ScatterWindowBackward"), window(std::move(window)) {}
  Layout window;
  tensor_list apply(tensor_list&& grads) override {
    return {take_window(grads[0], window, "WindowBackward")};
  }
};

// The window of x (any strides): its contiguous copy seen through window.
Tensor take_window(const Tensor& x, const Layout& window, const char* name) {
  const Tensor c = x.contiguous();
  Tensor out = c.as_strided(window.sizes(), window.strides(), c.storage_offset() + window.offset());
  if (auto node = make_node<WindowBackward>({x}, name, window)) node->set_history(out);
  return out;
}

// zeros(sizes) with the window set to g (window elements are distinct, so a plain copy).
Tensor scatter_window(const Tensor& g, const Shape& sizes, const Layout& window) {
  Tensor out = zeros(sizes, g.dtype());
  out.as_strided(window.sizes(), window.strides(), window.offset()).copy_(g);
  if (auto node = make_node<ScatterWindowBackward>({g}, window)) node->set_history(out);
  return out;
}

Tensor record_window(const Tensor& x, Tensor out, const Layout& window, const char* name) {
  if (auto node = make_node<WindowBackward>({x}, name, window)) node->set_history(out);
  return out;
}

}  // namespace

Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length) {
  Tensor out = x.narrow(dim, start, length);
  return record_window(x, out, layout::narrow(Layout::contiguous(x.sizes()), dim, start, length),
                       "NarrowBackward");
}

Tensor slice(const Tensor& x, int64_t dim, int64_t start, int64_t end, int64_t step) {
  Tensor out = x.slice(dim, start, end, step);
  return record_window(x, out, layout::slice(Layout::contiguous(x.sizes()), dim, start, end, step),
                       "SliceBackward");
}

Tensor select(const Tensor& x, int64_t dim, int64_t index) {
  Tensor out = x.select(dim, index);
  return record_window(x, out, layout::select(Layout::contiguous(x.sizes()), dim, index),
                       "SelectBackward");
}

// ---------------------------------------------------------------------------------------------
// cat / stack: copy each input into its slot of a new tensor; the gradient of input i is its slot
// of g (narrow for cat, select for stack).

namespace {

// PyTorch skips 1-d empty tensors in cat whatever the other shapes are (legacy behaviour).
bool skipped_in_cat(const Tensor& t) {
  return t.dim() == 1 && t.numel() == 0;
}

// Copies parts (checked: same rank and dtype, equal sizes except along dim) into one tensor.
Tensor cat_kernel(const std::vector<Tensor>& parts, int64_t dim, const Shape& out_sizes) {
  Tensor out = empty(out_sizes, parts.front().dtype());
  int64_t offset = 0;
  for (const Tensor& t : parts) {
    if (skipped_in_cat(t) && out.dim() != 1) continue;
    out.narrow(dim, offset, t.size(dim)).copy_(t);
    offset += t.size(dim);
  }
  return out;
}

void check_same_dtypes(const char* op, const std::vector<Tensor>& tensors) {
  for (size_t i = 0; i < tensors.size(); ++i) {
    check(tensors[i].defined(), op, ": tensor ", i, " is undefined");
    check<DtypeError>(tensors[i].dtype() == tensors[0].dtype(), op,
                      ": expected all tensors to have the same dtype; got ", tensors[0].dtype(),
                      " and ", tensors[i].dtype(), " (tensor ", i, ")");
  }
}

struct CatBackward final : Node {
  CatBackward(int64_t dim, std::vector<int64_t> offsets)
      : Node("CatBackward"), dim(dim), offsets(std::move(offsets)) {}
  int64_t dim;
  std::vector<int64_t> offsets;  // start of input i along dim; -1 for a skipped input
  tensor_list apply(tensor_list&& grads) override {
    tensor_list out(num_inputs());
    for (size_t i = 0; i < out.size(); ++i) {
      if (!needs_grad(i)) continue;
      const Shape& s = input_sizes(i);
      out[i] = offsets[i] < 0 ? zeros(s, input_meta(i).dtype)
                              : narrow(grads[0], dim, offsets[i], s[dim]);
    }
    return out;
  }
};

struct StackBackward final : Node {
  explicit StackBackward(int64_t dim) : Node("StackBackward"), dim(dim) {}
  int64_t dim;
  tensor_list apply(tensor_list&& grads) override {
    tensor_list out(num_inputs());
    for (size_t i = 0; i < out.size(); ++i) {
      if (needs_grad(i)) out[i] = select(grads[0], dim, static_cast<int64_t>(i));
    }
    return out;
  }
};

}  // namespace

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  if (autocast::is_active()) {
    const autocast::OpInputs in(AutocastOp::kCat, tensors);
    return cat(in.all(), dim);
  }
  check<ShapeError>(!tensors.empty(), "cat: expected a non-empty list of tensors");
  check_same_dtypes("cat", tensors);
  for (size_t i = 0; i < tensors.size(); ++i) {
    check<ShapeError>(tensors[i].dim() > 0, "cat: zero-dimensional tensor (at position ", i,
                      ") cannot be concatenated");
  }
  // The reference: the first tensor that is not skipped (all skipped: the result is [0]).
  size_t ref = 0;
  while (ref < tensors.size() && skipped_in_cat(tensors[ref])) ++ref;
  if (ref == tensors.size()) ref = 0;
  const Tensor& r = tensors[ref];
  const int64_t d = wrap_dim(dim, r.dim(), "cat");
  Shape out_sizes = r.sizes();
  out_sizes[d] = 0;
  std::vector<int64_t> offsets(tensors.size(), -1);
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    if (skipped_in_cat(t) && r.dim() != 1) continue;
    check<ShapeError>(t.dim() == r.dim(),
                      "cat: tensors must have the same number of dimensions; got ", r.dim(),
                      " and ", t.dim(), " (tensor ", i, ")");
    for (int64_t k = 0; k < r.dim(); ++k) {
      check<ShapeError>(k == d || t.size(k) == r.size(k),
                        "cat: sizes of tensors must match except in dimension ", d,
                        "; expected size ", r.size(k), " but got size ", t.size(k), " for tensor ",
                        i, " in dimension ", k, " (shapes ", r.sizes(), " and ", t.sizes(), ")");
    }
    offsets[i] = out_sizes[d];
    out_sizes[d] += t.size(d);
  }
  Tensor out = cat_kernel(tensors, d, out_sizes);
  if (auto node = make_node<CatBackward>(std::span<const Tensor>(tensors), d, offsets)) {
    node->set_history(out);
  }
  return out;
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  if (autocast::is_active()) {
    const autocast::OpInputs in(AutocastOp::kStack, tensors);
    return stack(in.all(), dim);
  }
  check<ShapeError>(!tensors.empty(), "stack: expected a non-empty list of tensors");
  check_same_dtypes("stack", tensors);
  const Shape& s0 = tensors[0].sizes();
  for (size_t i = 1; i < tensors.size(); ++i) {
    check<ShapeError>(tensors[i].sizes() == s0,
                      "stack: expects each tensor to be equal size, but got ", s0,
                      " at entry 0 and ", tensors[i].sizes(), " at entry ", i);
  }
  const int64_t d = wrap_dim(dim, static_cast<int64_t>(s0.size()) + 1, "stack");
  std::vector<Tensor> parts;
  for (const Tensor& t : tensors) parts.push_back(t.unsqueeze(d));
  Shape out_sizes = parts[0].sizes();
  out_sizes[d] = static_cast<int64_t>(tensors.size());
  Tensor out = cat_kernel(parts, d, out_sizes);
  if (auto node = make_node<StackBackward>(std::span<const Tensor>(tensors), d)) {
    node->set_history(out);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// pad. Along a padded dim of size n with pads (l, r), output position j reads input j - l:
// constant mode leaves positions outside [0, n) at value; reflect/replicate map them back in.

namespace {

Tensor index_add(const Tensor& g, int64_t dim, const std::vector<int64_t>& index, int64_t size);

// y = x indexed along dim: dy/dx adds g back at the indices (repeats accumulate).
struct IndexSelectBackward final : Node {
  IndexSelectBackward(int64_t dim, std::vector<int64_t> index)
      : Node("IndexSelectBackward"), dim(dim), index(std::move(index)) {}
  int64_t dim;
  std::vector<int64_t> index;
  tensor_list apply(tensor_list&& grads) override {
    return {index_add(grads[0], dim, index, input_sizes(0)[dim])};
  }
};

// An int64 tensor holding index along dim, of shape [1, ..., index.size(), ..., 1] (rank ndim).
Tensor index_along(const std::vector<int64_t>& index, int64_t dim, int64_t ndim) {
  Shape s(ndim, 1);
  s[dim] = static_cast<int64_t>(index.size());
  return from_vector(index, s, Dtype::Int64);
}

// out.select(dim, j) = x.select(dim, index[j]).
Tensor index_select(const Tensor& x, int64_t dim, const std::vector<int64_t>& index) {
  Shape sizes = x.sizes();
  sizes[dim] = static_cast<int64_t>(index.size());
  Tensor out = empty(sizes, x.dtype());
  const int64_t step = x.stride(dim) * x.element_size();  // bytes between entries along dim
  if (out.numel() > 0)
    dispatch_dtype(x.dtype(), [&]<typename T>() {
      // x is seen at entry 0 of dim (broadcast along it); each element jumps index[j] entries.
      for_each_strided(out, {index_along(index, dim, x.dim()), x.narrow(dim, 0, 1)},
                       [step](int64_t n, char* o, const char* const* in, const int64_t* s) {
                         for (int64_t i = 0; i < n; ++i) {
                           const int64_t k = *reinterpret_cast<const int64_t*>(in[0] + i * s[1]);
                           *reinterpret_cast<T*>(o + i * s[0]) =
                               *reinterpret_cast<const T*>(in[1] + i * s[2] + k * step);
                         }
                       });
    });
  if (auto node = make_node<IndexSelectBackward>({x}, dim, index)) node->set_history(out);
  return out;
}

struct IndexAddBackward final : Node {
  IndexAddBackward(int64_t dim, std::vector<int64_t> index)
      : Node("IndexAddBackward"), dim(dim), index(std::move(index)) {}
  int64_t dim;
  std::vector<int64_t> index;
  tensor_list apply(tensor_list&& grads) override { return {index_select(grads[0], dim, index)}; }
};

// zeros with size `size` along dim, then out.select(dim, index[j]) += g.select(dim, j).
Tensor index_add(const Tensor& g, int64_t dim, const std::vector<int64_t>& index, int64_t size) {
  Shape sizes = g.sizes();
  sizes[dim] = size;
  Tensor out = zeros(sizes, g.dtype());
  const int64_t step = out.stride(dim) * out.element_size();
  if (g.numel() > 0)
    dispatch_floating_dtype(g.dtype(), "pad", [&]<typename T>() {
      using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
      // The destination is entry 0 of dim seen at stride 0 along g's dim (serial loop, so the
      // repeated destinations accumulate correctly); each element jumps index[j] entries.
      const Tensor dst = out.narrow(dim, 0, 1).expand(g.sizes());
      for_each_strided(dst, {index_along(index, dim, g.dim()), g},
                       [step](int64_t n, char* o, const char* const* in, const int64_t* s) {
                         for (int64_t i = 0; i < n; ++i) {
                           const int64_t k = *reinterpret_cast<const int64_t*>(in[0] + i * s[1]);
                           T& d = *reinterpret_cast<T*>(o + i * s[0] + k * step);
                           d = convert<T>(convert<C>(d) + convert<C>(*reinterpret_cast<const T*>(
                                                              in[1] + i * s[2])));
                         }
                       });
    });
  if (auto node = make_node<IndexAddBackward>({g}, dim, index)) node->set_history(out);
  return out;
}

struct ConstantPadBackward final : Node {
  explicit ConstantPadBackward(Shape pads) : Node("ConstantPadBackward"), pads(std::move(pads)) {}
  Shape pads;
  tensor_list apply(tensor_list&& grads) override {
    Shape neg = pads;
    for (int64_t& p : neg) p = -p;
    return {pad(grads[0], neg, "constant", 0.0)};
  }
};

Tensor constant_pad(const Tensor& x, const Shape& pads, const Shape& out_sizes, double value) {
  Tensor out = full(out_sizes, value, x.dtype());
  Tensor src = x, dst = out;
  bool empty_region = false;
  for (size_t i = 0; i < pads.size() / 2; ++i) {
    const int64_t d = x.dim() - 1 - static_cast<int64_t>(i);
    const int64_t l = pads[2 * i], r = pads[2 * i + 1], n = x.size(d);
    // Output positions [max(0, l), min(out, n + l)) read input positions from max(0, -l).
    const int64_t len = std::min(n + l + r, n + l) - std::max<int64_t>(0, l);
    if (len <= 0) {
      empty_region = true;
      break;
    }
    src = src.narrow(d, std::max<int64_t>(0, -l), len);
    dst = dst.narrow(d, std::max<int64_t>(0, l), len);
  }
  if (!empty_region) dst.copy_(src);
  if (auto node = make_node<ConstantPadBackward>({x}, pads)) node->set_history(out);
  return out;
}

}  // namespace

Tensor pad(const Tensor& x, const Shape& pads, std::string_view mode, double value) {
  // PyTorch's float32 list has replication_pad1d/2d/3d and reflection_pad1d/2d (not 3d).
  if (autocast::is_active() && (mode == "replicate" || (mode == "reflect" && pads.size() <= 4))) {
    const autocast::OpInputs in(
        mode == "reflect" ? AutocastOp::kPadReflect : AutocastOp::kPadReplicate, {x});
    return pad(in[0], pads, mode, value);
  }
  const int64_t npairs = static_cast<int64_t>(pads.size()) / 2;
  check<ShapeError>(pads.size() % 2 == 0, "pad: padding length must be divisible by 2, got ",
                    pads.size(), " (pads ", pads, ")");
  check<ShapeError>(npairs <= x.dim(), "pad: padding length ", pads.size(),
                    " is too large for a tensor of ", x.dim(), " dims (at most ", 2 * x.dim(),
                    "); pads ", pads);
  const bool constant = mode == "constant";
  const bool reflect = mode == "reflect";
  check(constant || reflect || mode == "replicate", "pad: unknown mode '", mode,
        "' (expected constant, reflect or replicate)");
  Shape out_sizes = x.sizes();
  for (int64_t i = 0; i < npairs; ++i) {
    const int64_t d = x.dim() - 1 - i;
    const int64_t l = pads[2 * i], r = pads[2 * i + 1], n = x.size(d);
    out_sizes[d] = n + l + r;
    check<ShapeError>(out_sizes[d] >= 0, "pad: input size ", n, " of dimension ", d,
                      " with padding (", l, ", ", r, ") gives a negative output size ",
                      out_sizes[d]);
    if (reflect) {
      check<ShapeError>(l < n && r < n, "pad: reflect padding (", l, ", ", r,
                        ") must be less than the input size ", n, " of dimension ", d);
    } else if (!constant) {
      check<ShapeError>(n > 0 || (l <= 0 && r <= 0), "pad: replicate padding (", l, ", ", r,
                        ") needs a non-empty dimension ", d, " (input shape ", x.sizes(), ")");
    }
  }
  if (constant) return constant_pad(x, pads, out_sizes, value);
  Tensor out = x;
  for (int64_t i = 0; i < npairs; ++i) {
    const int64_t d = x.dim() - 1 - i;
    const int64_t l = pads[2 * i], n = x.size(d);
    if (l == 0 && out_sizes[d] == n) continue;
    std::vector<int64_t> index(out_sizes[d]);
    for (int64_t j = 0; j < out_sizes[d]; ++j) {
      int64_t k = j - l;
      if (reflect)
        k = k < 0 ? -k : (k >= n ? 2 * (n - 1) - k : k);
      else
        k = std::clamp<int64_t>(k, 0, n - 1);
      index[j] = k;
    }
    out = index_select(out, d, index);
  }
  return out.impl() == x.impl() ? reshape(x, x.sizes()) : out;
}

}  // namespace aclgrad
