// matmul and linear: libaclnn's aclnnMatmul for float32, float16 and bfloat16
// (ops/matmul_aclnn.h), a batched gemm kernel on OpenBLAS for float64, and the backward written
// with matmul.
//
//   y = a·b (after 1-d promotion, a [..., n, k], b [..., k, m], batch dims broadcast):
//   dL/da = sum_to(g·bᵀ, a's shape),  dL/db = sum_to(aᵀ·g, b's shape).
#include "ops/linear.h"

#include <cblas.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <climits>
#include <optional>

#include "autograd/function.h"
#include "ops/autocast.h"
#include "ops/elementwise.h"
#include "ops/matmul_aclnn.h"
#include "ops/reduction.h"
#include "ops/shape.h"
#include "tensor/creation.h"
#include "tensor/iter.h"

namespace aclgrad {

using autograd::make_node;
using autograd::Node;
using autograd::tensor_list;

namespace {

// ---------------------------------------------------------------------------------------------
// The gemm kernel (no autograd).

void gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int n, int m, int k, const double* a, int lda,
          const double* b, int ldb, double* c, int ldc) {
  cblas_dgemm(CblasRowMajor, ta, tb, n, m, k, 1.0, a, lda, b, ldb, 0.0, c, ldc);
}

// c [n, m] = a [n, k] · b [k, m] (row-major BLAS arguments). OpenBLAS runs single-threaded
// (libaclnn sets it so that it never competes with oneTBB), so large products are cut into tiles
// of C, each one gemm call, run as oneTBB tasks in the calling arena. The tiles depend only on
// the shape (never on the thread count), so the results do not either: column panels of
// kTileCols when m allows two, else row blocks of kTileRows.
template <typename T>
void tiled_gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int64_t n, int64_t m, int64_t k, const T* a,
                int64_t lda, const T* b, int64_t ldb, T* c) {
  constexpr int64_t kMinWork = int64_t{1} << 22;  // multiply-adds worth splitting
  constexpr int64_t kTileCols = 256, kTileRows = 32;
  auto call = [&](int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    // Row r of a: a + r * lda (NoTrans) or a + r (Trans: a is stored [k, n]); likewise columns
    // of b.
    const T* ar = a + (ta == CblasNoTrans ? r0 * lda : r0);
    const T* bc = b + (tb == CblasNoTrans ? c0 : c0 * ldb);
    gemm(ta, tb, static_cast<int>(r1 - r0), static_cast<int>(c1 - c0), static_cast<int>(k), ar,
         static_cast<int>(lda), bc, static_cast<int>(ldb), c + r0 * m + c0,
         static_cast<int>(std::max<int64_t>(m, 1)));
  };
  const bool split_cols = m >= 2 * kTileCols, split_rows = !split_cols && n >= 2 * kTileRows;
  if (n * m * k < kMinWork || (!split_cols && !split_rows)) {
    call(0, n, 0, m);
    return;
  }
  const int64_t tile = split_cols ? kTileCols : kTileRows, extent = split_cols ? m : n;
  const int64_t tiles = (extent + tile - 1) / tile;
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, tiles),
                    [&](const tbb::blocked_range<int64_t>& r) {
                      for (int64_t t = r.begin(); t < r.end(); ++t) {
                        const int64_t lo = t * tile, hi = std::min(extent, lo + tile);
                        split_cols ? call(0, n, lo, hi) : call(lo, hi, 0, m);
                      }
                    });
}

// How a [rows, cols] matrix with element strides (rs, cs) is passed to row-major BLAS: as is
// (NoTrans, leading dimension rs) or as the transpose of a row-major [cols, rows] matrix (Trans,
// leading dimension cs). nullopt when neither fits (it must be copied).
struct BlasOperand {
  CBLAS_TRANSPOSE trans;
  int64_t ld;
};
std::optional<BlasOperand> blas_operand(int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  const int64_t max_ld = INT_MAX;
  if ((cols == 1 || cs == 1) && (rows == 1 || (rs >= std::max<int64_t>(cols, 1) && rs <= max_ld)))
    return BlasOperand{CblasNoTrans, rows == 1 ? std::max<int64_t>(cols, 1) : rs};
  if ((rows == 1 || rs == 1) && (cols == 1 || (cs >= std::max<int64_t>(rows, 1) && cs <= max_ld)))
    return BlasOperand{CblasTrans, cols == 1 ? std::max<int64_t>(rows, 1) : cs};
  return std::nullopt;
}

// x itself when its last two dims can be passed to BLAS, else a contiguous copy.
Tensor blas_ready(const Tensor& x) {
  const int64_t d = x.dim();
  if (blas_operand(x.size(d - 2), x.size(d - 1), x.stride(d - 2), x.stride(d - 1))) return x;
  return x.contiguous();
}

Shape batch_of(const Tensor& x) {
  return Shape(x.sizes().begin(), x.sizes().end() - 2);
}

// out [batch, n, m] = a [batch_a, n, k] · b [batch_b, k, m] for T = double; a and b are
// blas_ready, out is contiguous and the batch dims are already checked to broadcast.
template <typename T>
void batched_gemm(const Tensor& a, const Tensor& b, const Tensor& out) {
  const Shape batch = batch_of(out);
  const int64_t n = a.size(-2), k = a.size(-1), m = b.size(-1);
  T* c = out.data_ptr<T>();
  if (out.numel() == 0) return;
  if (k == 0) {  // empty sum: zeros (BLAS may skip writing C)
    std::fill(c, c + out.numel(), T(0));
    return;
  }
  // b without batch (or all-1 batch) and a's batch and rows mergeable: one gemm of n * batch rows.
  Tensor a2 = a, b2 = b;
  int64_t nb = 1;
  for (int64_t s : batch) nb *= s;
  if (checked_numel(batch_of(b), "matmul") == 1 && nb > 1) {
    if (auto v = layout::try_view(a.layout(), {nb * n, k});
        v && blas_operand(nb * n, k, v->strides()[0], v->strides()[1])) {
      a2 = a.view({nb * n, k});
      b2 = b.view({k, m});
      nb = 1;
    }
  }
  const int64_t rows = a2.size(-2);
  check<ShapeError>(rows <= INT_MAX && k <= INT_MAX && m <= INT_MAX,
                    "matmul: matrix sizes exceed the BLAS int range: [", rows, ", ", k, "] and [",
                    k, ", ", m, "]");
  const BlasOperand oa = *blas_operand(rows, k, a2.stride(-2), a2.stride(-1));
  const BlasOperand ob = *blas_operand(k, m, b2.stride(-2), b2.stride(-1));
  // Broadcast batch dims seen at stride 0 (views, no copy); walk them with an odometer.
  Shape ea = batch, eb = batch;
  if (nb > 1) {
    ea.insert(ea.end(), {n, k});
    eb.insert(eb.end(), {k, m});
  }
  const Tensor ax = nb > 1 ? a2.expand(ea) : a2;
  const Tensor bx = nb > 1 ? b2.expand(eb) : b2;
  const T* pa = ax.data_ptr<T>();
  const T* pb = bx.data_ptr<T>();
  const int64_t nd = nb > 1 ? static_cast<int64_t>(batch.size()) : 0;
  Shape idx(nd, 0);
  int64_t off_a = 0, off_b = 0;
  for (int64_t t = 0; t < nb; ++t) {
    tiled_gemm<T>(oa.trans, ob.trans, rows, m, k, pa + off_a, oa.ld, pb + off_b, ob.ld,
                  c + t * rows * m);
    for (int64_t d = nd - 1; d >= 0; --d) {
      off_a += ax.stride(d), off_b += bx.stride(d);
      if (++idx[d] < batch[d]) break;
      off_a -= ax.stride(d) * batch[d], off_b -= bx.stride(d) * batch[d];
      idx[d] = 0;
    }
  }
}

// a [..., n, k] · b [..., k, m] (both at least 2-d, same dtype, shapes checked).
Tensor matmul_kernel(const Tensor& a, const Tensor& b, const Shape& batch) {
  Shape sizes = batch;
  sizes.insert(sizes.end(), {a.size(-2), b.size(-1)});
  Tensor out = empty(sizes, a.dtype());
  // float32 too: libaclnn's packed GEMM is picked by the CPU tier, where OpenBLAS may not know
  // the CPU (measured: bench/RESULTS.md, design linear.fp32-on-aclnn).
  if (a.dtype() != Dtype::Float64) {
    detail::matmul_aclnn(a, b, out);  // libaclnn: converted while packed, fp32 sums, one rounding
    return out;
  }
  batched_gemm<double>(blas_ready(a), blas_ready(b), out);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Autograd. The node sees the original (possibly 1-d) operands; apply() promotes them the same
// way as the forward, with recorded ops, so its result is differentiable again.

struct MatmulBackward final : Node {
  MatmulBackward() : Node("MatmulBackward") {}
  size_t a = 0, b = 0;
  Shape out2;  // the product's shape before the promoted 1-d dims are removed
  tensor_list apply(tensor_list&& grads) override {
    const Tensor g = reshape(grads[0], out2);
    Tensor ga, gb;
    if (needs_grad(0)) {  // dL/da = g·bᵀ, summed over broadcast batch dims
      const Tensor bv = saved(b);
      const Tensor b2 = bv.dim() == 1 ? unsqueeze(bv, -1) : bv;
      const Shape& as = input_sizes(0);
      const Shape a2 = as.size() == 1 ? Shape{1, as[0]} : as;
      ga = reshape(sum_to(matmul(g, transpose(b2, -1, -2)), a2), as);
    }
    if (needs_grad(1)) {  // dL/db = aᵀ·g, summed over broadcast batch dims
      const Tensor av = saved(a);
      const Tensor a2 = av.dim() == 1 ? unsqueeze(av, 0) : av;
      const Shape& bs = input_sizes(1);
      const Shape b2 = bs.size() == 1 ? Shape{bs[0], 1} : bs;
      if (a2.dim() > 2 && bs.size() <= 2) {
        // b has no batch (e.g. linear on [B, T, in]): fold a's batch into its rows, one gemm
        // [k, B·n]·[B·n, m] instead of B gemms and a sum.
        const int64_t k = a2.size(-1), m = g.size(-1);
        gb = reshape(matmul(transpose(reshape(a2, {-1, k}), 0, 1), reshape(g, {-1, m})), bs);
      } else {
        gb = reshape(sum_to(matmul(transpose(a2, -1, -2), g), b2), bs);
      }
    }
    return {ga, gb};
  }
};

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
  if (autocast::is_active()) {
    const autocast::OpInputs in(AutocastOp::kMatmul, {a, b});
    return matmul(in[0], in[1]);
  }
  check<ShapeError>(a.dim() >= 1 && b.dim() >= 1,
                    "matmul: both arguments need to be at least 1D, but they are ", a.dim(),
                    "D and ", b.dim(), "D");
  check<DtypeError>(a.dtype() == b.dtype(),
                    "matmul: expected both operands to have the same dtype, got ", a.dtype(),
                    " and ", b.dtype());
  check<DtypeError>(a.is_floating_point(), "matmul: expected a floating point dtype, got ",
                    a.dtype());
  const Tensor a2 = a.dim() == 1 ? a.unsqueeze(0) : a;   // [1, k]
  const Tensor b2 = b.dim() == 1 ? b.unsqueeze(-1) : b;  // [k, 1]
  if (a.dim() == 1 && b.dim() == 1) {
    check<ShapeError>(a.size(0) == b.size(0), "matmul: 1D tensors expected to have the same size, ",
                      "got ", a.sizes(), " and ", b.sizes(), " (", a.size(0), " != ", b.size(0),
                      ")");
  }
  check<ShapeError>(a2.size(-1) == b2.size(-2), "matmul: shapes ", a.sizes(), " and ", b.sizes(),
                    " cannot be multiplied (", a2.size(-1), " != ", b2.size(-2), ")");
  const Shape ba = batch_of(a2), bb = batch_of(b2);
  const size_t nd = std::max(ba.size(), bb.size());
  for (size_t i = 0; i < nd; ++i) {  // i counts from the innermost batch dim
    const int64_t sa = i < ba.size() ? ba[ba.size() - 1 - i] : 1;
    const int64_t sb = i < bb.size() ? bb[bb.size() - 1 - i] : 1;
    check<ShapeError>(sa == sb || sa == 1 || sb == 1, "matmul: batch dimensions ", ba, " and ", bb,
                      " of shapes ", a.sizes(), " and ", b.sizes(), " cannot be broadcast");
  }
  const Shape batch = broadcast_shapes(ba, bb);
  const Tensor out2 = matmul_kernel(a2, b2, batch);
  // Drop the promoted dims: [..., 1, m] -> [..., m], [..., n, 1] -> [..., n].
  Shape sizes = out2.sizes();
  if (b.dim() == 1) sizes.erase(sizes.end() - 1);
  if (a.dim() == 1) sizes.erase(sizes.end() - (b.dim() == 1 ? 1 : 2));
  Tensor out = out2.view(sizes);
  if (auto node = make_node<MatmulBackward>({a, b})) {
    if (node->needs_grad(0)) node->b = node->save(b);
    if (node->needs_grad(1)) node->a = node->save(a);
    node->out2 = out2.sizes();
    node->set_history(out);
  }
  return out;
}

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  if (autocast::is_active()) {
    const autocast::OpInputs in(AutocastOp::kLinear, {x, weight, bias});
    return linear(in[0], in[1], in[2]);
  }
  check<ShapeError>(weight.dim() == 2,
                    "linear: expected weight of 2 dims [out_features, in_features], got shape ",
                    weight.sizes());
  check<ShapeError>(x.dim() >= 1, "linear: expected input with at least 1 dim, got shape ",
                    x.sizes());
  check<ShapeError>(x.size(-1) == weight.size(1), "linear: input shape ", x.sizes(),
                    " does not match weight shape ", weight.sizes(), " (in_features ", x.size(-1),
                    " != ", weight.size(1), ")");
  if (bias.defined()) {
    check<ShapeError>(bias.dim() == 1 && bias.size(0) == weight.size(0),
                      "linear: expected bias of shape [", weight.size(0),
                      "] (out_features), got shape ", bias.sizes());
  }
  // x·weightᵀ: the transposed weight goes to BLAS as a transposed operand (no copy).
  const Tensor y = matmul(x, transpose(weight, 0, 1));
  return bias.defined() ? add(y, bias) : y;
}

}  // namespace aclgrad
