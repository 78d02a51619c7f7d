// max / min, over one dim (values + int64 indices) and over all elements, with their backward.
//
// Along a dim, the gradient goes to the selected index only: scatter_along (the adjoint of
// gather_along) writes it there. The two are a differentiable pair, so double backward works.
// Over all elements the gradient is shared evenly among the tied extrema (PyTorch's rule).
#include <algorithm>
#include <cmath>
#include <limits>

#include "autograd/function.h"
#include "ops/elementwise.h"
#include "ops/kernels.h"
#include "ops/reduction.h"
#include "ops/reduction_util.h"

namespace aclgrad {

using autograd::make_node;
using autograd::Node;
using autograd::tensor_list;

namespace {

Tensor gather_along(const Tensor& x, int64_t dim, const Tensor& idx, bool keepdim,
                    const char* name);
Tensor scatter_along(const Tensor& g, int64_t dim, const Tensor& idx, const Shape& shape,
                     bool keepdim);

// y = x[..., idx, ...] along dim: dy/dx puts g back at idx (zeros elsewhere).
struct GatherAlongBackward final : Node {
  GatherAlongBackward(const char* name, int64_t dim, Tensor idx, bool keepdim)
      : Node(name), dim(dim), idx(std::move(idx)), keepdim(keepdim) {}
  int64_t dim;
  Tensor idx;  // int64, no history
  bool keepdim;
  tensor_list apply(tensor_list&& grads) override {
    return {scatter_along(grads[0], dim, idx, input_sizes(0), keepdim)};
  }
  void release_state() override { idx = Tensor(); }
};

// y = zeros with y[..., idx, ...] = g along dim: dy/dg reads back at idx.
struct ScatterAlongBackward final : Node {
  ScatterAlongBackward(int64_t dim, Tensor idx, bool keepdim)
      : Node("ScatterBackward"), dim(dim), idx(std::move(idx)), keepdim(keepdim) {}
  int64_t dim;
  Tensor idx;
  bool keepdim;
  tensor_list apply(tensor_list&& grads) override {
    return {gather_along(grads[0], dim, idx, keepdim, "GatherBackward")};
  }
  void release_state() override { idx = Tensor(); }
};

// idx: x's shape with size 1 at dim (keepdim) or without dim; values in [0, x.size(dim)).
Tensor gather_along(const Tensor& x, int64_t dim, const Tensor& idx, bool keepdim,
                    const char* name) {
  const Tensor idx_k = keepdim ? idx : idx.unsqueeze(dim);
  Tensor out = empty(idx.sizes(), x.dtype());
  const Tensor out_k = keepdim ? out : out.unsqueeze(dim);
  const int64_t step = x.stride(dim) * x.element_size();  // bytes between entries along dim
  dispatch_floating_dtype(x.dtype(), "gather", [&]<typename T>() {
    // Walk the output with x seen at index 0 of dim; each element then jumps idx entries.
    for_each_strided(out_k, {idx_k, x.narrow(dim, 0, 1)},
                     [step](int64_t n, char* o, const char* const* in, const int64_t* s) {
                       for (int64_t i = 0; i < n; ++i) {
                         const int64_t k = *reinterpret_cast<const int64_t*>(in[0] + i * s[1]);
                         *reinterpret_cast<T*>(o + i * s[0]) =
                             *reinterpret_cast<const T*>(in[1] + i * s[2] + k * step);
                       }
                     });
  });
  if (auto node = make_node<GatherAlongBackward>({x}, name, dim, idx, keepdim)) {
    node->set_history(out);
  }
  return out;
}

// Indices along dim are distinct for each output position, so plain stores suffice.
Tensor scatter_along(const Tensor& g, int64_t dim, const Tensor& idx, const Shape& shape,
                     bool keepdim) {
  const Tensor idx_k = keepdim ? idx : idx.unsqueeze(dim);
  const Tensor g_k = keepdim ? g : g.unsqueeze(dim);
  Tensor out = zeros(shape, g.dtype());
  const int64_t step = out.stride(dim) * out.element_size();
  dispatch_floating_dtype(g.dtype(), "scatter", [&]<typename T>() {
    for_each_strided(out.narrow(dim, 0, 1), {idx_k, g_k},
                     [step](int64_t n, char* o, const char* const* in, const int64_t* s) {
                       for (int64_t i = 0; i < n; ++i) {
                         const int64_t k = *reinterpret_cast<const int64_t*>(in[0] + i * s[1]);
                         *reinterpret_cast<T*>(o + i * s[0] + k * step) =
                             *reinterpret_cast<const T*>(in[1] + i * s[2]);
                       }
                     });
  });
  if (auto node = make_node<ScatterAlongBackward>({g}, dim, idx, keepdim)) node->set_history(out);
  return out;
}

// Is u a better max (IsMax) or min than the current best? NaN beats everything and then stays.
template <bool IsMax, typename C>
bool better(C u, C best) {
  return std::isnan(u) || (IsMax ? u > best : u < best);
}

// Values and first indices of the extremum along dim. x is permuted so that dim is last and made
// contiguous; each output element is then one contiguous row of length K.
template <bool IsMax>
std::tuple<Tensor, Tensor> extreme_dim(const char* op, const char* node_name, const Tensor& x,
                                       int64_t dim, bool keepdim) {
  const int64_t d = wrap_dim(dim, x.dim(), op);
  if (x.dim() == 0) return {mul(x, 1), zeros({}, Dtype::Int64)};  // one element: itself
  const int64_t K = x.size(d);
  check<IndexError>(K > 0, op, ": cannot reduce over dimension ", d, " of size 0 (input shape ",
                    x.sizes(), ")");
  Shape perm;
  for (int64_t i = 0; i < x.dim(); ++i) {
    if (i != d) perm.push_back(i);
  }
  perm.push_back(d);
  const Tensor rows = x.permute(perm).contiguous();  // [M, K]
  const Shape out_shape = reduction::reduced_shape(x.sizes(), {d}, keepdim);
  Tensor values = empty(out_shape, x.dtype());
  Tensor indices = empty(out_shape, Dtype::Int64);
  const int64_t M = values.numel();
  dispatch_floating_dtype(x.dtype(), op, [&]<typename T>() {
    using C = kernels::compute_t<T>;
    const T* p = rows.data_ptr<T>();
    T* v = values.data_ptr<T>();
    int64_t* ix = indices.data_ptr<int64_t>();
    for (int64_t m = 0; m < M; ++m) {
      const T* row = p + m * K;
      C best = convert<C>(row[0]);
      int64_t bi = 0;
      if constexpr (kernels::is_16bit_v<T>) {  // the same scan on the row widened in chunks
        constexpr int64_t kChunk = kernels::map16_detail::kChunk;
        alignas(64) float buf[kChunk];
        for (int64_t at = 1; at < K && !std::isnan(best); at += kChunk) {
          const int64_t n = std::min(kChunk, K - at);
          ops::convert16::widen(row + at, buf, n);
          for (int64_t i = 0; i < n && !std::isnan(best); ++i) {
            if (better<IsMax>(buf[i], best)) best = buf[i], bi = at + i;
          }
        }
      } else {
        for (int64_t k = 1; k < K && !std::isnan(best); ++k) {
          const C u = convert<C>(row[k]);
          if (better<IsMax>(u, best)) best = u, bi = k;
        }
      }
      v[m] = row[bi];
      ix[m] = bi;
    }
  });
  if (auto node = make_node<GatherAlongBackward>({x}, node_name, d, indices, keepdim)) {
    node->set_history(values);
  }
  return {values, indices};
}

// y = max(x) over all elements: dy/dx = 1/count on the count elements equal to y (NaN matching
// NaN), 0 elsewhere.
struct ExtremeAllBackward final : Node {
  explicit ExtremeAllBackward(const char* name) : Node(name) {}
  size_t x = 0, y = 0;
  tensor_list apply(tensor_list&& grads) override {
    const Tensor xv = saved(x), yv = saved(y);
    const Tensor hit = kernels::map_predicate("max", xv, yv, [](auto u, auto v) {
                         return u == v || (std::isnan(u) && std::isnan(v));
                       }).to(xv.dtype());
    const Shape all = [&] {
      Shape s;
      for (int64_t d = 0; d < hit.dim(); ++d) s.push_back(d);
      return s;
    }();
    const double count = reduction::sum_kernel("max", hit, all, false, 1.0).item<double>();
    return {mul(hit, div(grads[0], count))};
  }
};

template <bool IsMax>
Tensor extreme_all(const char* op, const char* node_name, const Tensor& x) {
  check<IndexError>(x.numel() > 0, op, ": expected a non-empty tensor, got shape ", x.sizes(),
                    " (use the dim overload for reductions that may be empty)");
  Shape all;
  for (int64_t d = 0; d < x.dim(); ++d) all.push_back(d);
  Tensor out = dispatch_floating_dtype(x.dtype(), op, [&]<typename T>() {
    using C = kernels::compute_t<T>;
    constexpr C init =
        IsMax ? -std::numeric_limits<C>::infinity() : std::numeric_limits<C>::infinity();
    Tensor acc = full({}, init, dtype_of<C>());
    const auto fold = [](C best, C u) {
      return !std::isnan(best) && better<IsMax>(u, best) ? u : best;
    };
    if constexpr (kernels::is_16bit_v<T>) {  // widened a chunk at a time, the same folds
      kernels::reduce16<C, T>(acc, x, all, fold);
    } else {
      reduce_elements<C, T>(acc, x, all,
                            [&fold](C best, T v) { return fold(best, convert<C>(v)); });
    }
    return acc.to(x.dtype());
  });
  if (auto node = make_node<ExtremeAllBackward>({x}, node_name)) {
    node->x = node->save(x);
    node->set_history(out);
    node->y = node->save(out);
  }
  return out;
}

}  // namespace

Tensor max(const Tensor& x) {
  return extreme_all<true>("max", "MaxBackward", x);
}

Tensor min(const Tensor& x) {
  return extreme_all<false>("min", "MinBackward", x);
}

std::tuple<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim) {
  return extreme_dim<true>("max", "MaxBackward", x, dim, keepdim);
}

std::tuple<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim) {
  return extreme_dim<false>("min", "MinBackward", x, dim, keepdim);
}

}  // namespace aclgrad
