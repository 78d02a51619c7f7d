#include "tensor/tensor.h"

namespace aclgrad {

Tensor Tensor::make(Storage storage, Layout layout, Dtype dtype) {
  const int64_t capacity = static_cast<int64_t>(storage.nbytes()) / aclgrad::element_size(dtype);
  check<IndexError>(layout.storage_extent() <= capacity, "Tensor::make: sizes ", layout.sizes(),
                    " with strides ", layout.strides(), " and offset ", layout.offset(), " need ",
                    layout.storage_extent(), " elements but the storage holds ", capacity);
  return Tensor(std::make_shared<TensorImpl>(std::move(storage), std::move(layout), dtype));
}

int64_t Tensor::size(int64_t dim) const {
  check<IndexError>(this->dim() > 0, "size: a 0-dim tensor has no dimension ", dim);
  return sizes()[wrap_dim(dim, this->dim(), "size")];
}

int64_t Tensor::stride(int64_t dim) const {
  check<IndexError>(this->dim() > 0, "stride: a 0-dim tensor has no dimension ", dim);
  return strides()[wrap_dim(dim, this->dim(), "stride")];
}

Tensor Tensor::with_layout(Layout layout) const {
  return Tensor(std::make_shared<TensorImpl>(storage(), std::move(layout), dtype()));
}

Tensor Tensor::view(const Shape& sizes) const {
  return with_layout(layout::view(layout(), sizes));
}

Tensor Tensor::reshape(const Shape& sizes) const {
  const Shape shape = infer_view_shape(sizes, numel(), "reshape");
  if (auto v = layout::try_view(layout(), shape)) return with_layout(std::move(*v));
  return clone().view(shape);
}

Tensor Tensor::permute(const Shape& dims) const {
  return with_layout(layout::permute(layout(), dims));
}

Tensor Tensor::transpose(int64_t dim0, int64_t dim1) const {
  return with_layout(layout::transpose(layout(), dim0, dim1));
}

Tensor Tensor::t() const {
  return with_layout(layout::t(layout()));
}

Tensor Tensor::narrow(int64_t dim, int64_t start, int64_t length) const {
  return with_layout(layout::narrow(layout(), dim, start, length));
}

Tensor Tensor::slice(int64_t dim, int64_t start, int64_t end, int64_t step) const {
  return with_layout(layout::slice(layout(), dim, start, end, step));
}

Tensor Tensor::select(int64_t dim, int64_t index) const {
  return with_layout(layout::select(layout(), dim, index));
}

Tensor Tensor::expand(const Shape& sizes) const {
  return with_layout(layout::expand(layout(), sizes));
}

Tensor Tensor::squeeze() const {
  return with_layout(layout::squeeze(layout()));
}

Tensor Tensor::squeeze(int64_t dim) const {
  return with_layout(layout::squeeze(layout(), dim));
}

Tensor Tensor::unsqueeze(int64_t dim) const {
  return with_layout(layout::unsqueeze(layout(), dim));
}

Tensor Tensor::flatten(int64_t start_dim, int64_t end_dim) const {
  return reshape(layout::flatten_sizes(sizes(), start_dim, end_dim));
}

Tensor Tensor::as_strided(const Shape& sizes, const Shape& strides,
                          std::optional<int64_t> storage_offset) const {
  const int64_t capacity = static_cast<int64_t>(storage().nbytes()) / element_size();
  return with_layout(layout::as_strided(sizes, strides,
                                        storage_offset.value_or(this->storage_offset()), capacity));
}

Tensor Tensor::detach() const {
  return with_layout(layout());
}

void* Tensor::data_ptr() const {
  char* base = static_cast<char*>(storage().data());
  return base ? base + storage_offset() * element_size() : nullptr;
}

void* Tensor::element_ptr(const Shape& indices) const {
  check<IndexError>(static_cast<int64_t>(indices.size()) == dim(), "at: expected ", dim(),
                    " indices for a tensor of ", dim(), " dims, got ", indices.size());
  int64_t linear = storage_offset();
  for (int64_t d = 0; d < dim(); ++d) {
    const int64_t size = sizes()[d];
    int64_t i = indices[d];
    check<IndexError>(i >= -size && i < size, "at: index ", i, " is out of bounds for dimension ",
                      d, " with size ", size);
    if (i < 0) i += size;
    linear += i * strides()[d];
  }
  return static_cast<char*>(storage().data()) + linear * element_size();
}

const Tensor& Tensor::set_requires_grad(bool requires_grad) const {
  check<DtypeError>(!requires_grad || is_floating_point(),
                    "set_requires_grad: only floating point tensors can require gradients, got ",
                    dtype());
  get().requires_grad = requires_grad;
  return *this;
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) {
  return os << t.to_string();
}

}  // namespace aclgrad
