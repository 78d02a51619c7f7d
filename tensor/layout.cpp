#include "tensor/layout.h"

#include <algorithm>

#include "tensor/error.h"

namespace aclgrad {

namespace {

bool compute_contiguous(const Shape& sizes, const Shape& strides, int64_t numel) {
  if (numel == 0) return true;
  int64_t expected = 1;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    if (sizes[d] == 1) continue;
    if (strides[d] != expected) return false;
    expected *= sizes[d];
  }
  return true;
}

// offset + sum((size - 1) * stride) + 1 with overflow detection; 0 for an empty layout (checked
// first: the other dims of an empty layout may be huge).
std::optional<int64_t> extent(const Shape& sizes, const Shape& strides, int64_t offset) {
  if (std::find(sizes.begin(), sizes.end(), 0) != sizes.end()) return 0;
  int64_t last = offset;
  for (size_t d = 0; d < sizes.size(); ++d) {
    int64_t span;
    if (__builtin_mul_overflow(sizes[d] - 1, strides[d], &span)) return std::nullopt;
    if (__builtin_add_overflow(last, span, &last)) return std::nullopt;
  }
  int64_t end;
  if (__builtin_add_overflow(last, 1, &end)) return std::nullopt;
  return end;
}

// offset + index * stride for a view op. It can overflow only when the view is empty (a
// non-empty view's elements are reachable indices of l), and then no element is addressed
// through the offset, so l's is kept.
int64_t view_offset(const Layout& l, int64_t index, int64_t stride, bool view_empty,
                    const char* op) {
  int64_t step = 0, out = 0;
  const bool overflow = __builtin_mul_overflow(index, stride, &step) ||
                        __builtin_add_overflow(l.offset(), step, &out);
  if (!overflow) return out;
  check<IndexError>(view_empty, op, ": offset ", l.offset(), " + index ", index, " * stride ",
                    stride, " overflows int64 indices");
  return l.offset();
}

}  // namespace

int64_t checked_numel(const Shape& sizes, const char* op) {
  int64_t n = 1;
  for (size_t d = 0; d < sizes.size(); ++d) {
    check<ShapeError>(sizes[d] >= 0, op, ": size ", sizes[d], " at dimension ", d, " is negative");
  }
  // Empty whatever the other sizes, whose product alone may pass int64 (PyTorch accepts that).
  if (std::find(sizes.begin(), sizes.end(), 0) != sizes.end()) return 0;
  for (int64_t s : sizes) {
    check<ShapeError>(!__builtin_mul_overflow(n, s, &n), op, ": sizes ", sizes,
                      " overflow the int64 element count");
  }
  return n;
}

Layout::Layout(Shape sizes, Shape strides, int64_t offset)
    : sizes_(std::move(sizes)), strides_(std::move(strides)), offset_(offset) {
  check<ShapeError>(sizes_.size() == strides_.size(), "layout: sizes ", sizes_, " and strides ",
                    strides_, " must have the same length");
  numel_ = checked_numel(sizes_, "layout");
  check<ShapeError>(offset_ >= 0, "layout: storage offset ", offset_, " is negative");
  for (size_t d = 0; d < strides_.size(); ++d) {
    check<ShapeError>(strides_[d] >= 0, "layout: stride ", strides_[d], " at dimension ", d,
                      " is negative");
  }
  const auto end = extent(sizes_, strides_, offset_);
  check<IndexError>(end.has_value(), "layout: sizes ", sizes_, " with strides ", strides_,
                    " and offset ", offset_, " overflow int64 indices");
  extent_ = *end;
  contiguous_ = compute_contiguous(sizes_, strides_, numel_);
}

bool Layout::has_internal_overlap() const {
  if (numel_ == 0) return false;  // no two elements at all
  for (size_t d = 0; d < sizes_.size(); ++d) {
    if (sizes_[d] > 1 && strides_[d] == 0) return true;
  }
  return false;
}

Layout Layout::contiguous(Shape sizes, int64_t offset) {
  Shape strides = contiguous_strides(sizes);
  return Layout(std::move(sizes), std::move(strides), offset);
}

Shape contiguous_strides(const Shape& sizes) {
  Shape strides(sizes.size());
  int64_t s = 1;
  bool overflow = false;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    // Past int64 only when the tensor is empty (else numel would overflow first, and the
    // layout refuses that): no element is addressed through these outer dims, so stride 0.
    strides[d] = overflow ? 0 : s;
    overflow = overflow || __builtin_mul_overflow(s, std::max<int64_t>(sizes[d], 1), &s);
  }
  return strides;
}

int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op) {
  const int64_t n = std::max<int64_t>(ndim, 1);
  check<IndexError>(dim >= -n && dim < n, op, ": dimension ", dim,
                    " is out of range for a tensor of ", ndim, " dims (expected in [", -n, ", ",
                    n - 1, "])");
  return dim < 0 ? dim + n : dim;
}

Shape infer_view_shape(const Shape& shape, int64_t numel, const char* op) {
  Shape out = shape;
  int64_t infer = -1;
  int64_t known = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == -1) {
      check<ShapeError>(infer < 0, op, ": only one dimension can be inferred, got shape ", shape);
      infer = static_cast<int64_t>(d);
      continue;
    }
    check<ShapeError>(shape[d] >= 0, op, ": invalid size ", shape[d], " at dimension ", d,
                      " of shape ", shape);
    check<ShapeError>(!__builtin_mul_overflow(known, shape[d], &known), op, ": shape ", shape,
                      " is invalid for input of size ", numel);
  }
  if (infer >= 0) {
    check<ShapeError>(known != 0 && numel % known == 0, op, ": shape ", shape,
                      " is invalid for input of size ", numel);
    out[infer] = numel / known;
  } else {
    check<ShapeError>(known == numel, op, ": shape ", shape, " is invalid for input of size ",
                      numel);
  }
  return out;
}

namespace layout {

std::optional<Layout> try_view(const Layout& l, const Shape& sizes) {
  const Shape& old_sizes = l.sizes();
  const Shape& old_strides = l.strides();
  if (l.numel() == 0 || l.dim() == 0) {
    if (l.numel() == 0 && old_sizes == sizes) return l;
    return Layout::contiguous(sizes, l.offset());
  }
  // Walk old dims from the innermost, cutting them into chunks that are contiguous among
  // themselves; the new dims must tile each chunk exactly. (PyTorch's computeStride.)
  Shape strides(sizes.size());
  int64_t view_d = static_cast<int64_t>(sizes.size()) - 1;
  int64_t chunk_base_stride = old_strides.back();
  int64_t tensor_numel = 1;
  int64_t view_numel = 1;
  for (int64_t d = l.dim() - 1; d >= 0; --d) {
    tensor_numel *= old_sizes[d];
    int64_t next_stride = 0;  // stride the next outer dim needs to extend this chunk
    const bool overflow = __builtin_mul_overflow(tensor_numel, chunk_base_stride, &next_stride);
    const bool chunk_ends =
        d == 0 || (old_sizes[d - 1] != 1 && (overflow || old_strides[d - 1] != next_stride));
    if (!chunk_ends) continue;
    while (view_d >= 0 && (view_numel < tensor_numel || sizes[view_d] == 1)) {
      strides[view_d] = view_numel * chunk_base_stride;
      view_numel *= sizes[view_d];
      --view_d;
    }
    if (view_numel != tensor_numel) return std::nullopt;
    if (d > 0) {
      chunk_base_stride = old_strides[d - 1];
      tensor_numel = 1;
      view_numel = 1;
    }
  }
  if (view_d != -1) return std::nullopt;
  return Layout(sizes, std::move(strides), l.offset());
}

Layout view(const Layout& l, const Shape& sizes) {
  const Shape shape = infer_view_shape(sizes, l.numel(), "view");
  auto v = try_view(l, shape);
  check<ShapeError>(v.has_value(), "view: shape ", sizes, " is not compatible with sizes ",
                    l.sizes(), " and strides ", l.strides(),
                    " (a merged dimension spans non-contiguous memory); use reshape");
  return *v;
}

Layout permute(const Layout& l, const Shape& dims) {
  check<ShapeError>(static_cast<int64_t>(dims.size()) == l.dim(), "permute: dims ", dims,
                    " must list each of the ", l.dim(), " dims once");
  Shape sizes(dims.size()), strides(dims.size());
  std::vector<bool> seen(dims.size(), false);
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = wrap_dim(dims[i], l.dim(), "permute");
    check<ShapeError>(!seen[d], "permute: dims ", dims, " repeat dimension ", d);
    seen[d] = true;
    sizes[i] = l.sizes()[d];
    strides[i] = l.strides()[d];
  }
  return Layout(std::move(sizes), std::move(strides), l.offset());
}

Layout transpose(const Layout& l, int64_t dim0, int64_t dim1) {
  if (l.dim() == 0) {
    wrap_dim(dim0, 0, "transpose");
    wrap_dim(dim1, 0, "transpose");
    return l;
  }
  const int64_t a = wrap_dim(dim0, l.dim(), "transpose");
  const int64_t b = wrap_dim(dim1, l.dim(), "transpose");
  Shape sizes = l.sizes(), strides = l.strides();
  std::swap(sizes[a], sizes[b]);
  std::swap(strides[a], strides[b]);
  return Layout(std::move(sizes), std::move(strides), l.offset());
}

Layout t(const Layout& l) {
  check<ShapeError>(l.dim() <= 2, "t: expected a tensor with <= 2 dims, got shape ", l.sizes());
  return l.dim() < 2 ? l : transpose(l, 0, 1);
}

Layout narrow(const Layout& l, int64_t dim, int64_t start, int64_t length) {
  check<IndexError>(l.dim() > 0, "narrow: cannot be applied to a 0-dim tensor");
  const int64_t d = wrap_dim(dim, l.dim(), "narrow");
  const int64_t size = l.sizes()[d];
  check<IndexError>(start >= -size && start <= size, "narrow: start ", start,
                    " is out of range for size ", size, " of dimension ", d);
  if (start < 0) start += size;
  check<IndexError>(length >= 0, "narrow: length ", length, " must be non-negative");
  check<IndexError>(length <= size - start, "narrow: start ", start, " + length ", length,
                    " exceeds size ", size, " of dimension ", d);
  Shape sizes = l.sizes();
  sizes[d] = length;
  const int64_t offset =
      view_offset(l, start, l.strides()[d], length == 0 || l.numel() == 0, "narrow");
  return Layout(std::move(sizes), l.strides(), offset);
}

Layout slice(const Layout& l, int64_t dim, int64_t start, int64_t end, int64_t step) {
  check<IndexError>(l.dim() > 0, "slice: cannot be applied to a 0-dim tensor");
  const int64_t d = wrap_dim(dim, l.dim(), "slice");
  check<IndexError>(step > 0, "slice: step must be positive, got ", step);
  const int64_t size = l.sizes()[d];
  auto clamp = [size](int64_t i) {
    if (i < 0) i = i < -size ? 0 : i + size;
    return std::min(i, size);
  };
  start = clamp(start);
  end = std::max(clamp(end), start);
  Shape sizes = l.sizes(), strides = l.strides();
  sizes[d] = (end - start + step - 1) / step;
  const int64_t offset =
      view_offset(l, start, strides[d], sizes[d] == 0 || l.numel() == 0, "slice");
  // Stride times step may overflow only for a dim with < 2 elements, where it does not matter.
  if (__builtin_mul_overflow(strides[d], step, &strides[d]) || sizes[d] <= 1) {
    strides[d] = l.strides()[d];
  }
  return Layout(std::move(sizes), std::move(strides), offset);
}

Layout select(const Layout& l, int64_t dim, int64_t index) {
  check<IndexError>(l.dim() > 0, "select: cannot be applied to a 0-dim tensor");
  const int64_t d = wrap_dim(dim, l.dim(), "select");
  const int64_t size = l.sizes()[d];
  check<IndexError>(index >= -size && index < size, "select: index ", index,
                    " is out of bounds for dimension ", d, " with size ", size);
  if (index < 0) index += size;
  Shape sizes = l.sizes(), strides = l.strides();
  const int64_t offset = view_offset(l, index, strides[d], l.numel() == 0, "select");
  sizes.erase(sizes.begin() + d);
  strides.erase(strides.begin() + d);
  return Layout(std::move(sizes), std::move(strides), offset);
}

Layout expand(const Layout& l, const Shape& target) {
  const int64_t n = static_cast<int64_t>(target.size());
  check<ShapeError>(n >= l.dim(), "expand: the number of sizes provided (", n,
                    ") must be greater or equal to the number of dimensions in the tensor (",
                    l.dim(), ")");
  Shape sizes(n), strides(n);
  for (int64_t i = n - 1; i >= 0; --i) {
    const int64_t j = i - (n - l.dim());  // matching existing dim, < 0 for a new leading dim
    int64_t want = target[i];
    if (j < 0) {
      check<ShapeError>(want >= 0, "expand: the expanded size ", want,
                        " is not allowed in a leading, non-existing dimension ", i);
      sizes[i] = want;
      strides[i] = 0;
      continue;
    }
    const int64_t have = l.sizes()[j];
    if (want == -1) want = have;
    check<ShapeError>(want >= 0, "expand: the expanded size ", want, " at dimension ", i,
                      " is invalid");
    check<ShapeError>(want == have || have == 1, "expand: the expanded size ", want,
                      " must match the existing size ", have, " at non-singleton dimension ", i,
                      "; target ", target, ", tensor ", l.sizes());
    sizes[i] = want;
    strides[i] = (have == want) ? l.strides()[j] : 0;
  }
  return Layout(std::move(sizes), std::move(strides), l.offset());
}

Layout squeeze(const Layout& l) {
  Shape sizes, strides;
  for (int64_t d = 0; d < l.dim(); ++d) {
    if (l.sizes()[d] == 1) continue;
    sizes.push_back(l.sizes()[d]);
    strides.push_back(l.strides()[d]);
  }
  return Layout(std::move(sizes), std::move(strides), l.offset());
}

Layout squeeze(const Layout& l, int64_t dim) {
  const int64_t d = wrap_dim(dim, l.dim(), "squeeze");
  if (l.dim() == 0 || l.sizes()[d] != 1) return l;
  Shape sizes = l.sizes(), strides = l.strides();
  sizes.erase(sizes.begin() + d);
  strides.erase(strides.begin() + d);
  return Layout(std::move(sizes), std::move(strides), l.offset());
}

Layout unsqueeze(const Layout& l, int64_t dim) {
  const int64_t d = wrap_dim(dim, l.dim() + 1, "unsqueeze");
  Shape sizes = l.sizes(), strides = l.strides();
  // PyTorch's stride for the new size-1 dim; any value is valid for a size-1 dim, so an
  // overflowing product (huge dims of an empty tensor) falls back to the neighbour's stride.
  int64_t stride = 1;
  if (d < l.dim() && __builtin_mul_overflow(sizes[d], strides[d], &stride)) stride = strides[d];
  sizes.insert(sizes.begin() + d, 1);
  strides.insert(strides.begin() + d, stride);
  return Layout(std::move(sizes), std::move(strides), l.offset());
}

Shape flatten_sizes(const Shape& sizes, int64_t start_dim, int64_t end_dim) {
  const int64_t ndim = static_cast<int64_t>(sizes.size());
  const int64_t s = wrap_dim(start_dim, ndim, "flatten");
  const int64_t e = wrap_dim(end_dim, ndim, "flatten");
  check<IndexError>(s <= e, "flatten: start_dim ", start_dim, " comes after end_dim ", end_dim);
  if (ndim == 0) return {1};
  Shape out(sizes.begin(), sizes.begin() + s);
  int64_t merged = 1;
  for (int64_t d = s; d <= e; ++d)  // may overflow for an empty tensor with huge other dims
    check<ShapeError>(!__builtin_mul_overflow(merged, sizes[d], &merged), "flatten: merging dims ",
                      s, " to ", e, " of sizes ", sizes, " overflows int64");
  out.push_back(merged);
  out.insert(out.end(), sizes.begin() + e + 1, sizes.end());
  return out;
}

Layout as_strided(const Shape& sizes, const Shape& strides, int64_t offset,
                  int64_t storage_elements) {
  check<ShapeError>(sizes.size() == strides.size(), "as_strided: sizes ", sizes, " and strides ",
                    strides, " must have the same length");
  checked_numel(sizes, "as_strided");
  for (size_t d = 0; d < strides.size(); ++d) {
    check<ShapeError>(strides[d] >= 0, "as_strided: stride ", strides[d], " at dimension ", d,
                      " is negative (not supported)");
  }
  check<IndexError>(offset >= 0, "as_strided: storage offset ", offset, " is negative");
  const auto end = extent(sizes, strides, offset);
  check<IndexError>(end.has_value(), "as_strided: sizes ", sizes, " with strides ", strides,
                    " and offset ", offset, " overflow int64 indices");
  check<IndexError>(*end <= storage_elements, "as_strided: sizes ", sizes, " with strides ",
                    strides, " and offset ", offset, " need ", *end,
                    " elements but the storage holds ", storage_elements);
  return Layout(sizes, strides, offset);
}

}  // namespace layout
}  // namespace aclgrad
