// Embedding: gather rows (forward) and scatter-add rows (backward), side by side.
//
// The two are transposes of each other, so each one's backward is the other: gather's gradient
// is a scatter-add of the output gradient, and scatter-add's gradient is a gather of its output
// gradient. Writing both as recorded ops gives derivatives of any order. padding_idx: the
// scatter skips that row, so its transpose (the gather used in double backward) reads zeros
// there; the user-facing forward gather still reads the row (PyTorch's semantics).
#include "ops/embedding.h"

#include <cstring>
#include <vector>

#include "autograd/function.h"
#include "ops/kernels.h"

namespace aclgrad {

using autograd::make_node;
using autograd::Node;
using autograd::tensor_list;

namespace {

constexpr int64_t kNoRow = -1;

Tensor scatter_rows(const Tensor& grad, const Tensor& indices, int64_t num_weights,
                    int64_t skip_row);

// Checks the indices and returns them contiguous.
Tensor checked_indices(const char* op, const Tensor& indices, int64_t num_weights) {
  check<DtypeError>(indices.dtype() == Dtype::Int64, op, ": expected int64 indices, got ",
                    indices.dtype());
  Tensor idx = indices.contiguous();
  const int64_t* p = idx.data_ptr<int64_t>();
  for (int64_t i = 0; i < idx.numel(); ++i) {
    check<IndexError>(p[i] >= 0 && p[i] < num_weights, op, ": index ", p[i], " at position ", i,
                      " is out of range for ", num_weights, " embeddings");
  }
  return idx;
}

int64_t wrap_padding(const char* op, std::optional<int64_t> padding_idx, int64_t num_weights) {
  if (!padding_idx) return kNoRow;
  const int64_t p = *padding_idx;
  check<IndexError>(p >= -num_weights && p < num_weights, op, ": padding_idx ", p,
                    " is out of range for ", num_weights, " embeddings");
  return p < 0 ? p + num_weights : p;
}

Shape gathered_shape(const Tensor& indices, int64_t dim) {
  Shape s = indices.sizes();
  s.push_back(dim);
  return s;
}

// out[i, :] = weight[idx[i], :], or 0 where idx[i] == zero_row. No autograd.
Tensor gather_kernel(const Tensor& weight, const Tensor& idx, int64_t zero_row) {
  const Tensor w = weight.contiguous();
  const int64_t dim = w.size(1);
  Tensor out = empty(gathered_shape(idx, dim), w.dtype());
  const int64_t* ip = idx.data_ptr<int64_t>();
  const size_t row_bytes = static_cast<size_t>(dim * w.element_size());
  const char* src = static_cast<const char*>(w.data_ptr());
  char* dst = static_cast<char*>(out.data_ptr());
  for (int64_t i = 0; i < idx.numel(); ++i) {
    char* d = dst + i * row_bytes;
    if (ip[i] == zero_row) {
      std::memset(d, 0, row_bytes);  // all-zero bits are +0 in every floating dtype
    } else {
      std::memcpy(d, src + ip[i] * row_bytes, row_bytes);
    }
  }
  return out;
}

// out[n, :] = sum of grad[i, :] over i with idx[i] == n (n != skip_row); accumulated in double.
Tensor scatter_kernel(const Tensor& grad, const Tensor& idx, int64_t num_weights,
                      int64_t skip_row) {
  const int64_t n = idx.numel();
  check<ShapeError>(grad.dim() >= 1 && grad.sizes() == gathered_shape(idx, grad.sizes().back()),
                    "embedding_dense_backward: expected grad of shape [*indices.shape, D] with "
                    "indices of shape ",
                    idx.sizes(), ", got ", grad.sizes());
  const int64_t dim = grad.sizes().back();
  const std::vector<double> g = grad.to_vector<double>();
  std::vector<double> acc(static_cast<size_t>(num_weights * dim), 0.0);
  const int64_t* ip = idx.data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    if (ip[i] == skip_row) continue;
    double* row = acc.data() + ip[i] * dim;
    const double* gr = g.data() + i * dim;
    for (int64_t d = 0; d < dim; ++d) row[d] += gr[d];
  }
  return from_vector(acc, {num_weights, dim}, grad.dtype());
}

// ---- recorded ops ----

// Gather whose forward zeroes zero_row and whose backward skips skip_row.
struct GatherRowsBackward final : Node {
  GatherRowsBackward() : Node("EmbeddingBackward") {}
  Tensor indices;  // contiguous int64, no history
  int64_t num_weights = 0, skip_row = kNoRow;
  tensor_list apply(tensor_list&& grads) override {
    return {scatter_rows(grads[0], indices, num_weights, skip_row)};
  }
};

Tensor gather_rows(const Tensor& weight, const Tensor& idx, int64_t zero_row, int64_t skip_row) {
  Tensor out = gather_kernel(weight, idx, zero_row);
  if (auto node = make_node<GatherRowsBackward>({weight})) {
    node->indices = idx;
    node->num_weights = weight.size(0);
    node->skip_row = skip_row;
    node->set_history(out);
  }
  return out;
}

// d(scatter)/d(grad) is the gather that zeroes the skipped row.
struct ScatterRowsBackward final : Node {
  ScatterRowsBackward() : Node("EmbeddingDenseBackwardBackward") {}
  Tensor indices;
  int64_t skip_row = kNoRow;
  tensor_list apply(tensor_list&& grads) override {
    return {gather_rows(grads[0], indices, skip_row, skip_row)};
  }
};

Tensor scatter_rows(const Tensor& grad, const Tensor& idx, int64_t num_weights, int64_t skip_row) {
  Tensor out = scatter_kernel(grad, idx, num_weights, skip_row);
  if (auto node = make_node<ScatterRowsBackward>({grad})) {
    node->indices = idx;
    node->skip_row = skip_row;
    node->set_history(out);
  }
  return out;
}

}  // namespace

Tensor embedding(const Tensor& weight, const Tensor& indices, std::optional<int64_t> padding_idx) {
  check<ShapeError>(weight.dim() == 2, "embedding: expected a 2-d weight [num_embeddings, dim], ",
                    "got shape ", weight.sizes());
  check<DtypeError>(weight.is_floating_point(), "embedding: expected a floating point weight, got ",
                    weight.dtype());
  const int64_t n = weight.size(0);
  const int64_t pad = wrap_padding("embedding", padding_idx, n);
  const Tensor idx = checked_indices("embedding", indices, n);
  return gather_rows(weight, idx, kNoRow, pad);
}

Tensor embedding_dense_backward(const Tensor& grad, const Tensor& indices, int64_t num_weights,
                                std::optional<int64_t> padding_idx) {
  check<Error>(num_weights >= 0, "embedding_dense_backward: num_weights must be >= 0, got ",
               num_weights);
  check<DtypeError>(grad.is_floating_point(),
                    "embedding_dense_backward: expected a floating point grad, got ", grad.dtype());
  const int64_t pad = wrap_padding("embedding_dense_backward", padding_idx, num_weights);
  const Tensor idx = checked_indices("embedding_dense_backward", indices, num_weights);
  return scatter_rows(grad, idx, num_weights, pad);
}

}  // namespace aclgrad
