// What the three time-major forms of tbc_gemm.h share: the views as row matrices, the weight view
// as per-tap matrices, thread slots and task loops.
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include "conv/engine/engine.h"
#include "conv/engine/strided.h"

namespace aclnn_cpu::conv::tbc {

// The stride of a dim, or `fallback` when the dim has size 1 (its stride is then meaningless).
inline int64_t eff(const View5& v, int d, int64_t fallback) {
  return v.dims[d] == 1 ? fallback : v.strides[d];
}

// Row stride (elements) of a time-major activation view [B, C, 1, 1, T]: row r = t * B + b.
inline int64_t row_ld(const View5& v) {
  return v.dims[0] > 1 ? v.strides[0] : eff(v, 4, v.dims[1]);
}

// An activation view whose memory is [T, B, C] rows: C contiguous, and the time stride is B rows,
// so row r = t * B + b sits at origin + r * ld.
inline bool time_major(const View5& v) {
  if (v.numel() == 0 || eff(v, 1, 1) != 1) return false;
  const int64_t ld = row_ld(v);
  return ld >= v.dims[1] && (v.dims[0] == 1 || v.dims[4] == 1 || v.strides[4] == v.dims[0] * ld);
}

// Weight view [C_out, C_in, 1, 1, K] with C_out contiguous; W_k(c, o) = w[o, c, k] as a matrix
// with row stride ld_in (between input channels).
inline int64_t weight_ld(const View5& w) {
  return eff(w, 1, w.dims[0]);
}
inline bool weight_ok(const View5& w) {
  return w.numel() > 0 && eff(w, 0, 1) == 1 && weight_ld(w) >= w.dims[0];
}

// A time-major view as rows of `E` elements: row(r) = origin + r * ld.
template <typename E>
struct Rows {
  E* p = nullptr;
  int64_t ld = 0;
  E* row(int64_t r) const { return p + r * ld; }
};
template <typename E>
Rows<E> rows(const View5& v) {
  return {reinterpret_cast<E*>(v.origin()), row_ld(v)};
}

// A forward (data = false) or backward_data job as the row problem of the row forms (tbc_bf16,
// tbc_convert): out rows [rows_out, N] from in rows [rows_in, C] (row r = t * B + b), through K
// taps whose source rows are shifted by tap_shift(data, k, pad, B).
struct RowsProblem {
  const View5& in_v;   // x (forward) or dy (data)
  const View5& out_v;  // y (forward) or dx (data)
  int64_t B, K, pad;
  int64_t C, N;  // in and out channels
  int64_t rows_in, rows_out;
};
inline RowsProblem rows_problem(const ConvJob& j, bool data) {
  const ConvGeometry& g = j.g;
  const int64_t B = g.N;
  return {.in_v = data ? *j.y : *j.x,
          .out_v = data ? *j.out_x : *j.out_y,
          .B = B,
          .K = g.k[2],
          .pad = g.pad_before[2],
          .C = data ? g.C_out : g.C_in,
          .N = data ? g.C_in : g.C_out,
          .rows_in = (data ? g.out[2] : g.in[2]) * B,
          .rows_out = (data ? g.in[2] : g.out[2]) * B};
}

inline int slot_of(int slots) {
  const int s = tbb::this_task_arena::current_thread_index();
  if (s < 0 || s >= slots) throw std::logic_error("tbc_run ran outside its task arena");
  return s;
}

template <typename Body>
void parallel(int64_t count, Body&& body) {
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, count, 1),
                    [&](const tbb::blocked_range<int64_t>& r) {
                      for (int64_t t = r.begin(); t != r.end(); ++t) body(t);
                    });
}

inline int64_t ceil_div64(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}
inline int64_t align64(int64_t bytes) {
  return ceil_div64(bytes, 64) * 64;
}

// The shift (in rows) of tap k's source rows: forward / backward_weight read x at
// r + (k - pad) B, backward_data reads dy at r + (pad - k) B.
inline int64_t tap_shift(bool data, int64_t k, int64_t pad, int64_t B) {
  return (data ? pad - k : k - pad) * B;
}

// Output channels per weight-gradient task (a task runs every tap of its block): about one block
// per thread, multiples of 16, at most `cap`.
inline int64_t weight_block(int64_t C_out, int slots, int64_t cap) {
  const int64_t per_slot = ceil_div64(ceil_div64(C_out, slots), 16) * 16;
  return std::min({cap, per_slot, C_out});
}

// Taps whose source rows one packing of a weight-gradient chunk covers: their shifts differ by at
// most kMaxSpanRows rows.
inline constexpr int64_t kMaxSpanRows = 256;
inline int64_t tap_group(int64_t B, int64_t K) {
  return B > kMaxSpanRows ? 1 : std::min(K, kMaxSpanRows / B + 1);
}

}  // namespace aclnn_cpu::conv::tbc
