// Differentiable shape ops: views (view, reshape, permute, transpose, narrow, slice, select,
// expand, squeeze, unsqueeze, flatten), cat, stack and pad.
//
// The Tensor methods of the same names are pure layout changes that autograd does not see; these
// free functions are the recorded versions, built on those methods (views share the input's
// storage, like PyTorch's). Dims may be negative. Each backward is the inverse layout change made
// with these same differentiable ops (select's backward scatters into zeros, expand's sums), so
// every op here supports double backward. cat/stack/pad need operands of one dtype.
#pragma once

#include <limits>
#include <string_view>
#include <vector>

#include "../tensor/tensor.h"

namespace aclgrad {

// ---- views ----
/// x with new sizes (one may be -1) over the same data; ShapeError if the strides forbid it.
Tensor view(const Tensor& x, const Shape& sizes);
/// view() when the strides allow it, else a contiguous copy with the new sizes.
Tensor reshape(const Tensor& x, const Shape& sizes);
/// Dims reordered: out.size(i) = x.size(dims[i]); dims lists each dim of x once.
Tensor permute(const Tensor& x, const Shape& dims);
/// x with dims dim0 and dim1 swapped.
Tensor transpose(const Tensor& x, int64_t dim0, int64_t dim1);
/// [start, start + length) along dim (start may be negative).
Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length);
/// Python slice x[start:end:step] along dim (step > 0; start/end clamped, negative from the end).
Tensor slice(const Tensor& x, int64_t dim, int64_t start = 0,
             int64_t end = std::numeric_limits<int64_t>::max(), int64_t step = 1);
/// x[..., index, ...] along dim: dim is removed (index may be negative).
Tensor select(const Tensor& x, int64_t dim, int64_t index);
/// x broadcast to sizes (stride 0; -1 keeps a size; new leading dims allowed).
Tensor expand(const Tensor& x, const Shape& sizes);
/// x without its dims of size 1.
Tensor squeeze(const Tensor& x);
/// x without dim if that dim has size 1, else x's shape unchanged.
Tensor squeeze(const Tensor& x, int64_t dim);
/// x with a new dim of size 1 at dim (in [-ndim - 1, ndim]).
Tensor unsqueeze(const Tensor& x, int64_t dim);
/// reshape() merging dims [start_dim, end_dim] into one; a 0-dim x becomes [1].
Tensor flatten(const Tensor& x, int64_t start_dim = 0, int64_t end_dim = -1);

// ---- joining ----
/// Concatenation along dim: all tensors have the same rank and sizes except along dim (1-d
/// empty tensors [0] are skipped, as in PyTorch) and the same dtype. A new tensor.
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
/// Stacks equal-shaped tensors along a new dim (in [-ndim - 1, ndim]): [n, ...] at dim.
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);

// ---- padding ----
/// Pads the last len(pads) / 2 dims, last dim first: pads = {left_last, right_last,
/// left_2nd_last, right_2nd_last, ...} (PyTorch's F.pad). Negative pads crop. mode "constant"
/// fills with value; "reflect" mirrors without repeating the edge (pads < size of the dim);
/// "replicate" repeats the edge element. Output size of a padded dim: size + left + right.
Tensor pad(const Tensor& x, const Shape& pads, std::string_view mode = "constant",
           double value = 0.0);

}  // namespace aclgrad
