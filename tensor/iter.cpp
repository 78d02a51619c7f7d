#include "tensor/iter.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cstdlib>

namespace aclgrad {

namespace {

// Operands over a common shape: strides in bytes, stored dim-major ([d * nops + k]) so the
// innermost dim's strides are one contiguous array for the loop body.
struct StridedPlan {
  int64_t nops = 0;
  Shape sizes;                   // outer -> inner
  std::vector<int64_t> strides;  // [d * nops + k], bytes
  std::vector<char*> bases;
};

// Should dim a (currently outside b) go inside b? Decided by the first operand whose strides
// differ and are both non-zero: the smaller stride goes inside.
bool goes_inside(const StridedPlan& p, const Shape& all_strides, int64_t ndim, int64_t a,
                 int64_t b) {
  for (int64_t k = 0; k < p.nops; ++k) {
    const int64_t sa = all_strides[k * ndim + a];
    const int64_t sb = all_strides[k * ndim + b];
    if (sa == 0 || sb == 0 || sa == sb) continue;
    return sa < sb;
  }
  return false;
}

// sizes: common shape; strides: [k * ndim + d] in bytes.
StridedPlan make_plan(const Shape& sizes, const Shape& strides, std::vector<char*> bases) {
  StridedPlan p;
  p.nops = static_cast<int64_t>(bases.size());
  p.bases = std::move(bases);
  const int64_t ndim = static_cast<int64_t>(sizes.size());
  // Size-1 dims do not move anything; drop them.
  std::vector<int64_t> order;
  for (int64_t d = 0; d < ndim; ++d) {
    if (sizes[d] != 1) order.push_back(d);
  }
  // Insertion sort (stable, and well-defined for this partial order): smallest strides inside.
  for (size_t i = 1; i < order.size(); ++i) {
    for (size_t j = i; j > 0 && goes_inside(p, strides, ndim, order[j - 1], order[j]); --j) {
      std::swap(order[j - 1], order[j]);
    }
  }
  // Coalesce: an outer dim whose strides equal inner stride * inner size for every operand
  // merges with the inner one.
  for (int64_t d : order) {
    const int64_t n = static_cast<int64_t>(p.sizes.size());
    bool merge = n > 0;
    for (int64_t k = 0; merge && k < p.nops; ++k) {
      merge = p.strides[(n - 1) * p.nops + k] == strides[k * ndim + d] * sizes[d];
    }
    if (merge) {
      p.sizes.back() *= sizes[d];
      for (int64_t k = 0; k < p.nops; ++k) p.strides[(n - 1) * p.nops + k] = strides[k * ndim + d];
    } else {
      p.sizes.push_back(sizes[d]);
      for (int64_t k = 0; k < p.nops; ++k) p.strides.push_back(strides[k * ndim + d]);
    }
  }
  return p;
}

// Calls loop over the elements [begin, end) of the plan (row-major over p.sizes), one call per
// (part of an) innermost run.
void run_range(const StridedPlan& p, int64_t begin, int64_t end, StridedLoop loop) {
  const int64_t nd = static_cast<int64_t>(p.sizes.size());
  std::vector<char*> ptr = p.bases;
  const char* const* ins = ptr.data() + 1;
  if (nd == 0) {  // a single element
    const std::vector<int64_t> zeros(p.nops, 0);
    loop(1, ptr[0], ins, zeros.data());
    return;
  }
  // Start position: begin as an odometer reading.
  std::vector<int64_t> counter(nd, 0);
  for (int64_t d = nd - 1, rest = begin; d >= 0; --d) {
    counter[d] = rest % p.sizes[d];
    rest /= p.sizes[d];
    for (int64_t k = 0; k < p.nops; ++k) ptr[k] += counter[d] * p.strides[d * p.nops + k];
  }
  const int64_t n = p.sizes[nd - 1];
  const int64_t* inner = &p.strides[(nd - 1) * p.nops];
  for (int64_t i = begin; true;) {
    const int64_t len = std::min(n - counter[nd - 1], end - i);
    loop(len, ptr[0], ins, inner);
    i += len;
    if (i >= end) return;
    // The run ended at the end of the innermost dim: back to its start, then the odometer over
    // the outer dims; pointers never leave the operands' ranges.
    for (int64_t k = 0; k < p.nops; ++k) ptr[k] -= inner[k] * counter[nd - 1];
    counter[nd - 1] = 0;
    for (int64_t d = nd - 2; d >= 0; --d) {
      const int64_t* s = &p.strides[d * p.nops];
      if (counter[d] + 1 < p.sizes[d]) {
        ++counter[d];
        for (int64_t k = 0; k < p.nops; ++k) ptr[k] += s[k];
        break;
      }
      for (int64_t k = 0; k < p.nops; ++k) ptr[k] -= s[k] * (p.sizes[d] - 1);
      counter[d] = 0;
    }
  }
}

// Addresses [lo, hi) operand k can touch.
std::pair<uintptr_t, uintptr_t> address_range(const StridedPlan& p, int64_t k, int64_t es) {
  int64_t lo = 0, hi = es;
  for (size_t d = 0; d < p.sizes.size(); ++d) {
    const int64_t extent = p.strides[d * p.nops + k] * (p.sizes[d] - 1);
    (extent < 0 ? lo : hi) += extent;
  }
  const auto base = reinterpret_cast<uintptr_t>(p.bases[k]);
  return {base + static_cast<uintptr_t>(lo), base + static_cast<uintptr_t>(hi)};
}

// May disjoint element ranges of the plan run concurrently? Only if every output element has its
// own address (sorted by stride, each dim steps over the whole extent of the smaller ones) and
// no input overlaps the output except exactly (same base and strides: an in-place op).
bool splittable(const StridedPlan& p, const std::vector<int64_t>& element_sizes) {
  const size_t nd = p.sizes.size();
  std::vector<std::pair<int64_t, int64_t>> dims;  // (|stride|, size) of the output
  for (size_t d = 0; d < nd; ++d) dims.emplace_back(std::abs(p.strides[d * p.nops]), p.sizes[d]);
  std::sort(dims.begin(), dims.end());
  int64_t extent = element_sizes[0];
  for (const auto& [stride, size] : dims) {
    if (stride < extent) return false;
    extent = stride * size;
  }
  const auto [out_lo, out_hi] = address_range(p, 0, element_sizes[0]);
  for (int64_t k = 1; k < p.nops; ++k) {
    const auto [lo, hi] = address_range(p, k, element_sizes[k]);
    if (lo >= out_hi || out_lo >= hi) continue;
    bool same = p.bases[k] == p.bases[0] && element_sizes[k] == element_sizes[0];
    for (size_t d = 0; same && d < nd; ++d)
      same = p.strides[d * p.nops + k] == p.strides[d * p.nops];
    if (!same) return false;
  }
  return true;
}

void run_plan(const StridedPlan& p, const std::vector<int64_t>& element_sizes, StridedLoop loop,
              Parallel parallel) {
  int64_t total = 1;
  for (int64_t s : p.sizes) total *= s;
  const int64_t tasks = total / kParallelGrain;
  if (parallel == Parallel::No || tasks < 2 || tbb::this_task_arena::max_concurrency() < 2 ||
      !splittable(p, element_sizes)) {
    run_range(p, 0, total, loop);
    return;
  }
  // Task t covers elements [t, t + 1) * kParallelGrain; the last one also takes the remainder.
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, tasks),
                    [&](const tbb::blocked_range<int64_t>& r) {
                      const int64_t end = r.end() == tasks ? total : r.end() * kParallelGrain;
                      run_range(p, r.begin() * kParallelGrain, end, loop);
                    });
}

bool broadcastable_to(const Shape& from, const Shape& to) {
  if (from.size() > to.size()) return false;
  const size_t lead = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i) {
    if (from[i] != to[lead + i] && from[i] != 1) return false;
  }
  return true;
}

void run(const Shape& sizes, const std::vector<const Layout*>& layouts,
         const std::vector<const Tensor*>& tensors, StridedLoop loop,
         Parallel parallel = Parallel::No) {
  const int64_t ndim = static_cast<int64_t>(sizes.size());
  for (int64_t s : sizes) {
    if (s == 0) return;
  }
  Shape strides;
  std::vector<char*> bases;
  std::vector<int64_t> element_sizes;
  for (size_t k = 0; k < layouts.size(); ++k) {
    const int64_t es = tensors[k]->element_size();
    for (int64_t d = 0; d < ndim; ++d) strides.push_back(layouts[k]->strides()[d] * es);
    bases.push_back(static_cast<char*>(tensors[k]->data_ptr()));
    element_sizes.push_back(es);
  }
  const StridedPlan plan = make_plan(sizes, strides, std::move(bases));
  run_plan(plan, element_sizes, loop, parallel);
}

}  // namespace

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  const size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {  // i counts from the trailing dim
    const int64_t sa = i < a.size() ? a[a.size() - 1 - i] : 1;
    const int64_t sb = i < b.size() ? b[b.size() - 1 - i] : 1;
    check<ShapeError>(sa >= 0 && sb >= 0, "broadcast_shapes: shapes ", a, " and ", b,
                      " contain a negative size");
    check<ShapeError>(sa == sb || sa == 1 || sb == 1, "broadcast_shapes: the size ", sa,
                      " of shape ", a, " must match the size ", sb, " of shape ", b,
                      " at non-singleton dimension ", n - 1 - i, " (sizes must be equal or 1)");
    out[n - 1 - i] = sa == 1 ? sb : sa;
  }
  return out;
}

void for_each_strided(const Tensor& out, std::span<const Tensor> ins, StridedLoop loop,
                      Parallel parallel) {
  std::vector<Layout> expanded;
  expanded.reserve(ins.size());
  for (size_t k = 0; k < ins.size(); ++k) {
    check(ins[k].defined(), "for_each_strided: input ", k, " is undefined");
    check<ShapeError>(broadcastable_to(ins[k].sizes(), out.sizes()), "for_each_strided: input ", k,
                      " of shape ", ins[k].sizes(), " cannot be broadcast to the output shape ",
                      out.sizes());
    expanded.push_back(layout::expand(ins[k].layout(), out.sizes()));
  }
  std::vector<const Layout*> layouts{&out.layout()};
  std::vector<const Tensor*> tensors{&out};
  for (size_t k = 0; k < ins.size(); ++k) {
    layouts.push_back(&expanded[k]);
    tensors.push_back(&ins[k]);
  }
  run(out.sizes(), layouts, tensors, loop, parallel);
}

void for_each_reduce(const Tensor& out, const Tensor& in, const Shape& dims, StridedLoop loop) {
  const int64_t ndim = in.dim();
  std::vector<bool> reduced(std::max<int64_t>(ndim, 1), false);
  for (int64_t dim : dims) {
    const int64_t d = wrap_dim(dim, ndim, "for_each_reduce");
    check<ShapeError>(!reduced[d], "for_each_reduce: dimension ", d, " repeats in dims ", dims);
    reduced[d] = true;
  }
  Shape kept_shape, squeezed_shape;
  for (int64_t d = 0; d < ndim; ++d) {
    kept_shape.push_back(reduced[d] ? 1 : in.sizes()[d]);
    if (!reduced[d]) squeezed_shape.push_back(in.sizes()[d]);
  }
  const bool kept = out.sizes() == kept_shape;
  check<ShapeError>(kept || out.sizes() == squeezed_shape, "for_each_reduce: output shape ",
                    out.sizes(), " does not match input shape ", in.sizes(), " reduced over dims ",
                    dims, " (expected ", kept_shape, " or ", squeezed_shape, ")");
  // Re-insert the removed dims, then broadcast: the output has stride 0 along reduced dims.
  Layout l = out.layout();
  for (int64_t d = 0; d < ndim && !kept; ++d) {
    if (reduced[d]) l = layout::unsqueeze(l, d);
  }
  const Layout out_view = layout::expand(l, in.sizes());
  run(in.sizes(), {&out_view, &in.layout()}, {&out, &in}, loop);
}

namespace detail {

void check_operand_dtypes(const char* op, const Tensor& out, std::span<const Tensor> ins,
                          std::span<const Dtype> expected) {
  check(ins.size() + 1 == expected.size(), op, ": got ", ins.size(), " inputs, expected ",
        expected.size() - 1);
  check<DtypeError>(out.dtype() == expected[0], op, ": output has dtype ", out.dtype(),
                    ", expected ", expected[0]);
  for (size_t k = 0; k < ins.size(); ++k) {
    check<DtypeError>(ins[k].dtype() == expected[k + 1], op, ": input ", k, " has dtype ",
                      ins[k].dtype(), ", expected ", expected[k + 1]);
  }
}

}  // namespace detail
}  // namespace aclgrad
