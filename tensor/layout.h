// Layout: sizes, strides and storage offset (all in elements) of a tensor over its storage, and
// the view operations as pure functions from one layout to another. Nothing here touches data.
//
// Dimensions may be negative (counted from the end, PyTorch style). Every function validates its
// arguments and throws ShapeError / IndexError with a message naming the op.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

namespace aclgrad {

using Shape = std::vector<int64_t>;

/// An immutable strided layout. Contiguity and element count are computed once, on construction.
class Layout {
 public:
  /// A 0-dim (scalar) layout at offset 0.
  Layout() = default;
  /// Checks ranks match, sizes >= 0, strides >= 0, offset >= 0 and that numel and the largest
  /// reachable index fit in int64.
  Layout(Shape sizes, Shape strides, int64_t offset);
  /// Row-major contiguous layout of the given sizes.
  static Layout contiguous(Shape sizes, int64_t offset = 0);

  const Shape& sizes() const { return sizes_; }
  const Shape& strides() const { return strides_; }
  int64_t offset() const { return offset_; }
  int64_t dim() const { return static_cast<int64_t>(sizes_.size()); }
  int64_t numel() const { return numel_; }
  /// Row-major contiguous (dims of size 1 may have any stride; empty layouts are contiguous).
  bool is_contiguous() const { return contiguous_; }
  /// Elements of storage needed from index 0: offset + max reachable index + 1 (0 if empty).
  int64_t storage_extent() const { return extent_; }
  /// True when two different indices surely address the same element (a dim of size > 1 with
  /// stride 0, as made by expand). In-place writes into such a layout are rejected.
  bool has_internal_overlap() const;

 private:
  Shape sizes_;
  Shape strides_;
  int64_t offset_ = 0;
  int64_t numel_ = 1;
  int64_t extent_ = 1;
  bool contiguous_ = true;
};

/// Row-major strides of a contiguous tensor of the given sizes. An empty tensor's other dims may
/// multiply past int64 (PyTorch accepts [0, 2^32, 2^32]): those outer dims get stride 0.
Shape contiguous_strides(const Shape& sizes);
/// Product of sizes; throws ShapeError "<op>: size -1 at dimension 0 is negative" or on overflow
/// (none when a size is 0: the product is 0 whatever the others).
int64_t checked_numel(const Shape& sizes, const char* op);
/// Wraps a possibly negative dim into [0, ndim); IndexError when outside [-ndim, ndim - 1].
/// A 0-dim tensor accepts dims 0 and -1 (as PyTorch does).
int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op);
/// Resolves one -1 entry of a view shape against numel (ShapeError when impossible).
Shape infer_view_shape(const Shape& shape, int64_t numel, const char* op);

namespace layout {

/// A view with the given sizes if the strides allow it without copying (PyTorch's rule: each
/// group of merged or split dims must be contiguous w.r.t. each other), else nullopt.
std::optional<Layout> try_view(const Layout& l, const Shape& sizes);
/// try_view with one -1 inferred; ShapeError if the shape is invalid or the strides forbid it.
Layout view(const Layout& l, const Shape& sizes);
Layout permute(const Layout& l, const Shape& dims);
Layout transpose(const Layout& l, int64_t dim0, int64_t dim1);
/// transpose(0, 1) for <= 2 dims.
Layout t(const Layout& l);
/// [start, start + length) of dim; start may be negative.
Layout narrow(const Layout& l, int64_t dim, int64_t start, int64_t length);
/// Python-style slice [start:end:step] of dim (step > 0); start/end are clamped.
Layout slice(const Layout& l, int64_t dim, int64_t start, int64_t end, int64_t step);
/// Removes dim, keeping index (negative counts from the end).
Layout select(const Layout& l, int64_t dim, int64_t index);
/// Broadcasts to sizes (-1 keeps a size; new leading dims allowed); size-1 dims get stride 0.
Layout expand(const Layout& l, const Shape& sizes);
/// Removes all dims of size 1.
Layout squeeze(const Layout& l);
/// Removes dim if its size is 1, else returns l unchanged.
Layout squeeze(const Layout& l, int64_t dim);
/// Inserts a dim of size 1 at dim (in [-ndim - 1, ndim]).
Layout unsqueeze(const Layout& l, int64_t dim);
/// Sizes after merging dims [start_dim, end_dim] into one (the shape flatten() reshapes to).
Shape flatten_sizes(const Shape& sizes, int64_t start_dim, int64_t end_dim);
/// Arbitrary sizes/strides/offset; checks the view stays within storage_elements.
Layout as_strided(const Shape& sizes, const Shape& strides, int64_t offset,
                  int64_t storage_elements);

}  // namespace layout
}  // namespace aclgrad
