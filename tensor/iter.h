// Strided iteration: the one place that walks arbitrary strides. copy_, fill_, elementwise ops
// and reductions are all written on it.
//
// The iterator takes the operands' sizes and strides, drops size-1 dims, orders dims so the one
// with the smallest strides is innermost (memory order, even for transposed tensors), merges
// dims that are contiguous w.r.t. each other (so a contiguous tensor of any rank is a single run),
// and then calls the loop body once per innermost run with the run length and each operand's
// byte stride along it. Broadcast inputs have stride 0. A body that checks
// `byte_strides[k] == sizeof(T)` gets the contiguous fast path (plain, vectorisable loop).
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <utility>
#include <vector>

#include "tensor/function_ref.h"
#include "tensor/tensor.h"

namespace aclgrad {

/// Body of a strided loop over one run of n elements. out points at the run's first output
/// element, ins[k] at input k's; byte_strides[0] is the output's step in bytes, byte_strides[1 + k]
/// input k's (0 for a broadcast input or a reduced output).
using StridedLoop =
    FunctionRef<void(int64_t n, char* out, const char* const* ins, const int64_t* byte_strides)>;

/// PyTorch broadcasting: shapes aligned at the trailing dim; each pair of sizes must be equal or
/// one of them 1. ShapeError otherwise, naming both shapes and the dimension.
Shape broadcast_shapes(const Shape& a, const Shape& b);

/// Whether for_each_strided may call the loop body from several threads at once.
enum class Parallel : bool { No, Yes };

/// Elements per task of a parallel for_each_strided; with fewer than two tasks' worth of
/// elements the loop stays on the calling thread (waking workers would cost more than the work).
inline constexpr int64_t kParallelGrain = int64_t{1} << 15;

/// Calls loop over every element of out, with each input broadcast to out's shape (ShapeError if
/// it cannot be). Operands may have any dtypes; the body interprets the bytes.
///
/// Parallel::No runs serially in memory order. Parallel::Yes is for bodies that compute each
/// output element from the input elements at the same index only (no state shared between calls,
/// no order): then out's elements are split into disjoint ranges of kParallelGrain elements
/// (aligned to it) that run as oneTBB tasks in the calling arena, so every element gets exactly
/// the value a serial run gives, for any thread count. It falls back to the serial loop for fewer
/// than 2 * kParallelGrain elements, a single-thread arena, an output with several elements at
/// one address, or an input overlapping out other than exactly (in-place ops, input identical to
/// out, are fine either way).
void for_each_strided(const Tensor& out, std::span<const Tensor> ins, StridedLoop loop,
                      Parallel parallel = Parallel::No);
inline void for_each_strided(const Tensor& out, std::initializer_list<Tensor> ins, StridedLoop loop,
                             Parallel parallel = Parallel::No) {
  for_each_strided(out, std::span<const Tensor>(ins.begin(), ins.size()), loop, parallel);
}

/// Reduction: calls loop over every element of in, with out seen at stride 0 along the reduced
/// dims (negative dims allowed; an empty list reduces nothing). out must have in's shape with the
/// reduced dims removed or kept as size 1. out is not initialised here: fill it with the
/// identity first; the body accumulates, e.g. `o[i * s0] += x[i * s1]` (s0 may be 0).
void for_each_reduce(const Tensor& out, const Tensor& in, const Shape& dims, StridedLoop loop);

namespace detail {
void check_operand_dtypes(const char* op, const Tensor& out, std::span<const Tensor> ins,
                          std::span<const Dtype> expected);
}

/// Typed elementwise map out[i] = f(ins[0][i], ins[1][i], ...) with broadcasting; the element
/// types are given explicitly and checked (DtypeError), e.g.
///   map_elementwise<float, float, float>(out, {a, b}, [](float x, float y) { return x + y; });
/// f must be a pure function of its arguments: large maps run in parallel (Parallel::Yes).
template <Element Out, Element... Ins, typename F>
void map_elementwise(const Tensor& out, std::initializer_list<Tensor> ins, F f) {
  const std::array<Dtype, 1 + sizeof...(Ins)> dtypes{dtype_of<Out>(), dtype_of<Ins>()...};
  const std::span<const Tensor> in_span(ins.begin(), ins.size());
  detail::check_operand_dtypes("map_elementwise", out, in_span, dtypes);
  for_each_strided(
      out, in_span,
      [&](int64_t n, char* o, const char* const* in, const int64_t* s) {
        [&]<size_t... K>(std::index_sequence<K...>) {
          if (s[0] == sizeof(Out) && ((s[1 + K] == sizeof(Ins)) && ...)) {
            Out* op = reinterpret_cast<Out*>(o);
            for (int64_t i = 0; i < n; ++i) op[i] = f(reinterpret_cast<const Ins*>(in[K])[i]...);
          } else {
            for (int64_t i = 0; i < n; ++i) {
              *reinterpret_cast<Out*>(o + i * s[0]) =
                  f(*reinterpret_cast<const Ins*>(in[K] + i * s[1 + K])...);
            }
          }
        }
        (std::index_sequence_for<Ins...>{});
      },
      Parallel::Yes);
}

/// Typed reduction acc = f(acc, x) over dims into out (dtype Acc), which the caller has
/// initialised with the identity; e.g. a sum: reduce_elements<float, float>(out, in, {1}, plus).
template <Element Acc, Element In, typename F>
void reduce_elements(const Tensor& out, const Tensor& in, const Shape& dims, F f) {
  const std::array<Dtype, 2> dtypes{dtype_of<Acc>(), dtype_of<In>()};
  detail::check_operand_dtypes("reduce_elements", out, std::span<const Tensor>(&in, 1), dtypes);
  for_each_reduce(out, in, dims, [&](int64_t n, char* o, const char* const* x, const int64_t* s) {
    if (s[0] == 0) {  // all n inputs fold into one output element
      Acc acc = *reinterpret_cast<Acc*>(o);
      for (int64_t i = 0; i < n; ++i) acc = f(acc, *reinterpret_cast<const In*>(x[0] + i * s[1]));
      *reinterpret_cast<Acc*>(o) = acc;
    } else {
      for (int64_t i = 0; i < n; ++i) {
        Acc& acc = *reinterpret_cast<Acc*>(o + i * s[0]);
        acc = f(acc, *reinterpret_cast<const In*>(x[0] + i * s[1]));
      }
    }
  });
}

}  // namespace aclgrad
