// Tensor: a shared handle to a TensorImpl = storage + layout (sizes, strides, offset in elements)
// + dtype + autograd hooks. Copying a Tensor copies the handle (both see the same impl), like
// PyTorch. View methods return new tensors over the same storage; only contiguous(), clone(),
// to() and reshape() of an incompatible layout copy data.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "../tensor/dtype.h"
#include "../tensor/error.h"
#include "../tensor/layout.h"
#include "../tensor/storage.h"

namespace aclgrad {

namespace autograd {
class Node;
}

/// Opaque per-tensor autograd state; autograd/ subclasses it (grad, grad_fn, hooks...).
struct AutogradMeta {
  virtual ~AutogradMeta() = default;
};

struct TensorImpl {
  TensorImpl(Storage s, Layout l, Dtype d)
      : storage(std::move(s)), layout(std::move(l)), dtype(d) {}
  Storage storage;
  Layout layout;
  Dtype dtype;
  bool requires_grad = false;
  std::shared_ptr<AutogradMeta> autograd_meta;
};

class Tensor {
 public:
  /// An undefined tensor; every method except defined() throws Error on it.
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}
  /// A tensor over storage with the given layout; checks the layout fits in the storage.
  static Tensor make(Storage storage, Layout layout, Dtype dtype);

  bool defined() const { return impl_ != nullptr; }
  /// The impl, for identity (e.g. autograd graph keys); nullptr when undefined.
  TensorImpl* impl() const { return impl_.get(); }
  /// Handles sharing this tensor's impl, this one included (0 when undefined).
  long use_count() const { return impl_.use_count(); }

  // ---- metadata ----
  const Layout& layout() const { return get().layout; }
  const Shape& sizes() const { return get().layout.sizes(); }
  const Shape& strides() const { return get().layout.strides(); }
  int64_t size(int64_t dim) const;
  int64_t stride(int64_t dim) const;
  int64_t dim() const { return get().layout.dim(); }
  int64_t numel() const { return get().layout.numel(); }
  int64_t storage_offset() const { return get().layout.offset(); }
  Dtype dtype() const { return get().dtype; }
  int64_t element_size() const { return aclgrad::element_size(dtype()); }
  bool is_floating_point() const { return aclgrad::is_floating_point(dtype()); }
  /// Row-major contiguous; computed once when the layout was made.
  bool is_contiguous() const { return get().layout.is_contiguous(); }
  const Storage& storage() const { return get().storage; }
  /// Same storage buffer (so writes through one may be seen through the other).
  bool shares_storage(const Tensor& other) const {
    return storage().defined() && storage().is_same(other.storage());
  }

  // ---- views: share storage, no data movement (see tensor/layout.h for the rules) ----
  /// Same data with new sizes (one may be -1); ShapeError if the strides do not allow it.
  Tensor view(const Shape& sizes) const;
  /// view() when the strides allow it, else a contiguous copy.
  Tensor reshape(const Shape& sizes) const;
  Tensor permute(const Shape& dims) const;
  Tensor transpose(int64_t dim0, int64_t dim1) const;
  Tensor t() const;
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  Tensor slice(int64_t dim, int64_t start = 0, int64_t end = std::numeric_limits<int64_t>::max(),
               int64_t step = 1) const;
  Tensor select(int64_t dim, int64_t index) const;
  Tensor expand(const Shape& sizes) const;
  Tensor expand_as(const Tensor& other) const { return expand(other.sizes()); }
  Tensor squeeze() const;
  Tensor squeeze(int64_t dim) const;
  Tensor unsqueeze(int64_t dim) const;
  /// reshape() merging dims [start_dim, end_dim]; a 0-dim tensor becomes [1].
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  /// Any sizes/strides over this tensor's storage (offset defaults to this storage_offset);
  /// IndexError if any element would fall outside the storage.
  Tensor as_strided(const Shape& sizes, const Shape& strides,
                    std::optional<int64_t> storage_offset = std::nullopt) const;
  /// Same storage and layout, without autograd state (shares the version counter).
  Tensor detach() const;

  // ---- data movement (tensor/copy.cpp) ----
  /// This tensor if already contiguous, else a contiguous copy.
  Tensor contiguous() const;
  /// A contiguous copy with its own storage.
  Tensor clone() const;
  /// This tensor if it already has dtype, else a converted contiguous copy.
  Tensor to(Dtype dtype) const;
  /// Copies src into this tensor, broadcasting src to our shape and converting its dtype.
  /// Overlapping src is read before anything is written. Bumps the version counter.
  const Tensor& copy_(const Tensor& src) const;
  /// Sets every element to value (converted to our dtype). Bumps the version counter.
  const Tensor& fill_(Scalar value) const;

  // ---- element access ----
  /// Raw pointer to the first element (storage base + offset); nullptr for an empty buffer.
  void* data_ptr() const;
  /// Typed pointer to the first element; DtypeError unless T is this tensor's element type.
  template <Element T>
  T* data_ptr() const {
    check_type<T>("data_ptr");
    return static_cast<T*>(data_ptr());
  }
  /// The single element converted to T (any dtype); IndexError unless numel() == 1.
  template <Element T>
  T item() const {
    check<IndexError>(numel() == 1, "item: a tensor with ", numel(),
                      " elements cannot be converted to a scalar");
    return dispatch_dtype(
        dtype(), [&]<typename S>() { return convert<T>(*static_cast<const S*>(data_ptr())); });
  }
  /// Reference to one element; indices may be negative; bounds- and type-checked.
  template <Element T>
  T& at(const Shape& indices) const {
    check_type<T>("at");
    return *static_cast<T*>(element_ptr(indices));
  }
  template <Element T>
  T& at(std::initializer_list<int64_t> indices) const {
    return at<T>(Shape(indices));
  }
  /// All elements in row-major order, converted to T.
  template <Element T>
  std::vector<T> to_vector() const {
    const Tensor c = to(dtype_of<T>()).contiguous();
    const T* p = static_cast<const T*>(c.data_ptr());
    return std::vector<T>(p, p + c.numel());
  }
  /// "tensor([[1.0000, 2.0000]], shape=[1, 2], dtype=float32)"; large tensors are elided.
  std::string to_string() const;

  // ---- autograd hooks (used by autograd/) ----
  bool requires_grad() const { return get().requires_grad; }
  /// DtypeError for non-floating dtypes when enabling.
  const Tensor& set_requires_grad(bool requires_grad) const;
  AutogradMeta* autograd_meta() const { return get().autograd_meta.get(); }
  void set_autograd_meta(std::shared_ptr<AutogradMeta> meta) const {
    get().autograd_meta = std::move(meta);
  }
  /// Version counter shared by every view of the storage; in-place ops bump it.
  uint64_t version() const { return storage().version(); }
  void bump_version() const { storage().bump_version(); }

  // ---- autograd API: declared here, DEFINED in autograd/tensor_autograd.cpp (link
  // aclgrad_autograd to use them; libtorch splits Tensor the same way) ----
  /// Sets requires_grad on a leaf (AutogradError when turning it off on a non-leaf).
  const Tensor& requires_grad_(bool requires_grad = true) const;
  /// True when the tensor was not produced by a recorded op (no grad_fn).
  bool is_leaf() const;
  /// The node that produced this tensor (nullptr for leaves).
  std::shared_ptr<autograd::Node> grad_fn() const;
  /// Which output of grad_fn() this tensor is.
  uint32_t output_nr() const;
  /// The accumulated gradient (an undefined tensor until a backward reaches this tensor).
  Tensor grad() const;
  /// Replaces the accumulated gradient (undefined clears it); shape and dtype must match.
  void set_grad(const Tensor& grad) const;
  /// Clears .grad (set_to_none) or fills it with zeros in place.
  void zero_grad(bool set_to_none = true) const;
  /// Makes a non-leaf keep its .grad after backward (leaves always do).
  void retain_grad() const;
  bool retains_grad() const;
  /// autograd::backward({*this}, {gradient}, ...); gradient defaults to 1 for one-element tensors.
  void backward(const Tensor& gradient = Tensor(), std::optional<bool> retain_graph = std::nullopt,
                bool create_graph = false) const;

 private:
  TensorImpl& get() const {
    check(impl_ != nullptr, "Tensor: operation on an undefined tensor");
    return *impl_;
  }
  Tensor with_layout(Layout layout) const;
  void* element_ptr(const Shape& indices) const;
  template <typename T>
  void check_type(const char* op) const {
    check<DtypeError>(dtype_of<T>() == dtype(), op, ": requested type ", dtype_of<T>(),
                      " but the tensor has dtype ", dtype());
  }

  std::shared_ptr<TensorImpl> impl_;
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);

}  // namespace aclgrad
