#include "conv/algorithms/tbc_gemm.h"

#include <algorithm>
#include <cstring>
#include <optional>

#include "conv/engine/half.h"
#include "conv/engine/strided.h"
#include "conv/algorithms/tbc_rows.h"
#include "gemm/sgemm.h"

namespace aclnn_cpu::conv {
namespace {

using tbc::eff;
using tbc::parallel;
using tbc::row_ld;
using tbc::slot_of;
using tbc::weight_ld;

// Output rows per forward / backward-data task: enough for an efficient GEMM (M = rows), few
// enough for a dozen or more tasks on typical sequences.
constexpr int64_t kRowsPerTask = 512;
// Output channels per weight-gradient task (the GEMM's N; its M is all input channels). Every task
// packs all of x's chunk (the GEMM's A) once per tap, so fewer, wider tasks pack it fewer times:
// 256 rather than 128 was faster, and its B panel, 128 x 256 floats, still fits L2 (measured:
// bench/RESULTS.md, design tbc_gemm.out-channels). Threads split C_out below this.
constexpr int64_t kOutChannelsPerTask = 256;
// Weight gradient: output rows per chunk (the GEMMs' reduction depth, one sgemm K block).
constexpr int64_t kWeightRows = 256;

float* rows_of(const View5& v) {
  return reinterpret_cast<float*>(v.origin());
}

// The weight taps packed once per call in the sgemm's B panel format, so that no task re-packs
// them per tap (the data gradient's W_k^T was packed through transposes every time):
// panels[k][p][c][48] = M_k(c, 48 p + j), zero past n_out.
class PackedTaps final : public gemm::BPanels {
 public:
  PackedTaps(const float* base, int64_t n_in, int64_t n_out)
      : base_(base), n_in_(n_in), panels_(tbc::ceil_div64(n_out, gemm::kPanelCols)) {}
  static int64_t floats(int64_t taps, int64_t n_in, int64_t n_out) {
    return taps * n_in * tbc::ceil_div64(n_out, gemm::kPanelCols) * gemm::kPanelCols;
  }
  const float* tap(int64_t k) const { return base_ + k * n_in_ * panels_ * gemm::kPanelCols; }
  void select(int64_t k) { at_ = tap(k); }
  void pack(int64_t k0, int64_t kc, int64_t j0, int64_t n, float* Bp) const override {
    const int64_t p0 = j0 / gemm::kPanelCols, np = tbc::ceil_div64(n, gemm::kPanelCols);
    for (int64_t p = 0; p < np; ++p)
      std::memcpy(Bp + p * kc * gemm::kPanelCols, at_ + ((p0 + p) * n_in_ + k0) * gemm::kPanelCols,
                  static_cast<size_t>(kc * gemm::kPanelCols) * sizeof(float));
  }

 private:
  const float* base_;
  int64_t n_in_, panels_;
  const float* at_ = nullptr;
};

// Writes tap k of `taps` (M_k a strided [n_in, n_out] matrix) into PackedTaps' format, each
// element rounded to fp16 where M_k is a Mat::fp16 operand (cubeMathType USE_FP16).
template <typename Tap>
void pack_taps(int64_t taps, Tap tap, int64_t n_in, int64_t n_out, float* dst) {
  const int64_t panels = tbc::ceil_div64(n_out, gemm::kPanelCols);
  parallel(taps * panels, [&](int64_t t) {
    const int64_t k = t / panels, p = t % panels;
    const gemm::Mat m = tap(k);
    float* d = dst + (k * panels + p) * n_in * gemm::kPanelCols;
    for (int64_t c = 0; c < n_in; ++c)
      for (int64_t j = 0; j < gemm::kPanelCols; ++j) {
        const int64_t col = p * gemm::kPanelCols + j;
        const float v = col < n_out ? m.p[c * m.rs + col * m.cs] : 0.0f;
        d[c * gemm::kPanelCols + j] = m.fp16 ? round_to_half(v) : v;
      }
  });
}

// Time steps of one forward / backward-data task.
int64_t task_steps(int64_t B) {
  return std::max<int64_t>(1, kRowsPerTask / B);
}

// Whether a task packs its source rows once for all taps (sgemm_packed_rows): each tap's rows
// are the same matrix shifted by whole time steps, i.e. whole 8-row panels when B is a multiple
// of 8. Floats per slot of that packing for `taps` taps over n_in source channels.
bool packs_rows_once(int64_t B) {
  return B % 8 == 0;
}
int64_t source_rows_elems(int64_t B, int64_t taps, int64_t n_in) {
  return packs_rows_once(B) ? gemm::packed_a_elems((task_steps(B) + taps - 1) * B, n_in) : 0;
}

// The rows of one shifted_row_gemms call: out [T_out * B, n_out] (row stride ld_out) = init +
// products of in [T_in * B, n_in] (in.rs; in.fp16: rounded to fp16 as packed); init = bias (a
// [1, n_out] view) in every row, or zero.
struct ShiftedRows {
  float* out;
  int64_t ld_out, n_out;
  gemm::Mat in;
  int64_t n_in;
  const View5* bias;
};
// The scratch of a run: `pack` the slots' packing scratch (slot_elems floats apart; null:
// OpenBLAS), `taps_buf` the shared packed weight taps, `slots` the executor's threads.
struct TbcGemmScratch {
  int slots;
  int64_t slot_elems;
  float* pack;
  float* taps_buf;
};

// out[t] = init + sum_k in[t + shift(k)] . M_k for t in [0, T_out) (the rows of `rw`), M_k = tap(k)
// a strided [n_in, n_out] matrix (Mat::fp16 like `in`). With our packed GEMM (`sc.pack`:
// slot_elems floats a slot, the GEMM's scratch then the source rows), the taps are packed once
// into `taps_buf` first, and where packs_rows_once a task packs the source rows of all its taps
// once (the data gradient packed dy three times per task, its rows transposed into 8-row panels
// each time; measured: bench/RESULTS.md, design tbc_gemm.pack-once).
template <typename Shift, typename Tap>
void shifted_row_gemms(int64_t B, int64_t T_out, int64_t T_in, int64_t taps, Shift shift, Tap tap,
                       const ShiftedRows& rw, const TbcGemmScratch& sc) {
  float* const out = rw.out;
  const int64_t ld_out = rw.ld_out, n_out = rw.n_out, n_in = rw.n_in;
  const gemm::Mat in = rw.in;
  const View5* const bias = rw.bias;
  const int slots = sc.slots;
  const int64_t slot_elems = sc.slot_elems;
  float* const pack = sc.pack;
  float* const taps_buf = sc.taps_buf;
  if (pack) pack_taps(taps, tap, n_in, n_out, taps_buf);
  int64_t s_lo = shift(0), s_hi = shift(0);  // the taps' extreme shifts
  for (int64_t k = 1; k < taps; ++k)
    s_lo = std::min(s_lo, shift(k)), s_hi = std::max(s_hi, shift(k));
  const int64_t steps = task_steps(B);
  parallel((T_out + steps - 1) / steps, [&](int64_t task) {
    float* pk = pack ? pack + slot_of(slots) * slot_elems : nullptr;
    float* rows_p = pk && packs_rows_once(B) ? pk + gemm::pack_elems() : nullptr;
    const int64_t t0 = task * steps, t1 = std::min(T_out, t0 + steps);
    for (int64_t r = t0 * B; r < t1 * B; ++r) {
      float* row = out + r * ld_out;
      if (bias) {
        const char* b = bias->origin();
        for (int64_t o = 0; o < n_out; ++o)
          row[o] = *reinterpret_cast<const float*>(b + o * bias->strides[1] * sizeof(float));
      } else {
        std::fill(row, row + n_out, 0.0f);
      }
    }
    // rows_p: source time steps [u0, u1), every tap's rows of this task, packed once.
    const int64_t u0 = std::max<int64_t>(0, t0 + s_lo), u1 = std::min(T_in, t1 + s_hi);
    if (rows_p && u0 < u1)
      gemm::pack_a_once((u1 - u0) * B, n_in, gemm::Mat{in.p + u0 * B * in.rs, in.rs, 1, in.fp16},
                        rows_p);
    PackedTaps packed(taps_buf, n_in, n_out);
    for (int64_t k = 0; k < taps; ++k) {
      const int64_t s = shift(k);  // in-time = out-time + s, valid while in [0, T_in)
      const int64_t a = std::max(t0, -s), b = std::min(t1, T_in - s);
      if (a >= b) continue;
      const gemm::Mat rows{in.p + (a + s) * B * in.rs, in.rs, 1, in.fp16};
      if (!pk) {
        gemm::sgemm((b - a) * B, n_out, n_in, rows, tap(k), true, out + a * B * ld_out, ld_out,
                    nullptr);
        continue;
      }
      packed.select(k);
      if (rows_p) {
        gemm::sgemm_packed_rows((b - a) * B, n_out, n_in, rows_p, (u1 - u0) * B, (a + s - u0) * B,
                                &packed, true, out + a * B * ld_out, ld_out, pk);
        continue;
      }
      gemm::sgemm_packed((b - a) * B, n_out, n_in, nullptr, &rows, nullptr, &packed, true,
                         out + a * B * ld_out, ld_out, pk);
    }
  });
}

}  // namespace

namespace {

// dW_k[:, o-block] = sum_r X[r + (k - pad) B]^T . dY[r][o-block]: one task per output-channel
// block runs every tap, a chunk of kWeightRows output rows at a time, so the taps' GEMMs find the
// chunk's x and dy rows in cache instead of streaming all of x from memory once per tap; each
// tap's GEMM covers the chunk's rows whose source row exists. With `bias_out`, the task also sums
// its dy rows into the bias gradient (in row order, as channel_sum does) just before the GEMMs
// read them, so dy comes from memory once, not once more for a separate sum.
void weight_gradient(const ConvJob& j, int slots, int64_t slot_elems, float* pack,
                     float* bias_out) {
  const ConvGeometry& g = j.g;
  const int64_t B = g.N, K = g.k[2], pad = g.pad_before[2];
  const int64_t rows_in = g.in[2] * B, rows_out = g.out[2] * B;
  const View5& dw = *j.out_w;
  float* dwp = rows_of(dw);
  const float* x = rows_of(*j.x);
  const float* dy = rows_of(*j.y);
  const int64_t ldx = row_ld(*j.x), ldy = row_ld(*j.y), ldw = weight_ld(dw), s_k = eff(dw, 4, 0);
  const int64_t ob = tbc::weight_block(g.C_out, slots, kOutChannelsPerTask);
  const bool fp16 = j.round == Round::kFp16;  // USE_FP16: x and dy rounded as the GEMM packs them
  parallel(tbc::ceil_div64(g.C_out, ob), [&](int64_t task) {
    float* pk = pack ? pack + slot_of(slots) * slot_elems : nullptr;
    const int64_t o0 = task * ob, no = std::min(g.C_out, o0 + ob) - o0;
    for (int64_t k = 0; k < K; ++k)  // a tap that never sees the input keeps a zero gradient
      for (int64_t c = 0; c < g.C_in; ++c) {
        float* row = dwp + k * s_k + c * ldw + o0;
        std::fill(row, row + no, 0.0f);
      }
    double db[kOutChannelsPerTask] = {};  // bias gradient of the block
    for (int64_t r0 = 0; r0 < rows_out; r0 += kWeightRows) {
      const int64_t r1 = std::min(rows_out, r0 + kWeightRows);
      if (bias_out)
        for (int64_t r = r0; r < r1; ++r) add_run_f32(db, dy + r * ldy + o0, no);
      for (int64_t k = 0; k < K; ++k) {
        const int64_t sh = tbc::tap_shift(false, k, pad, B);
        const int64_t a = std::max(r0, -sh), b = std::min(r1, rows_in - sh);
        if (a >= b) continue;
        gemm::sgemm(g.C_in, no, b - a, gemm::Mat{x + (a + sh) * ldx, 1, ldx, fp16},
                    gemm::Mat{dy + a * ldy + o0, ldy, 1, fp16}, true, dwp + k * s_k + o0, ldw, pk);
      }
    }
    if (bias_out)
      for (int64_t o = 0; o < no; ++o) bias_out[o0 + o] = static_cast<float>(db[o]);
  });
}

// Primitive `prim` of `j`: `pack` the slots' packing scratch (slot_elems floats apart, null:
// OpenBLAS), `taps_buf` the shared packed weight taps.
void run_f32(const ConvJob& j, Primitive prim, int slots, int64_t slot_elems, float* pack,
             float* taps_buf, float* bias_out) {
  const ConvGeometry& g = j.g;
  const TbcGemmScratch sc{slots, slot_elems, pack, taps_buf};
  const View5* bias = j.bias ? &*j.bias : nullptr;
  const int64_t B = g.N, T = g.in[2], T_out = g.out[2], K = g.k[2], pad = g.pad_before[2];
  const bool fp16 = j.round == Round::kFp16;  // USE_FP16: every operand rounded as packed
  // Weight view [C_out, C_in, 1, 1, K] (strides s0 = 1, s1, s4): W_k(c, o) = w[o, c, k].
  if (prim == Primitive::kForward) {
    const View5& w = *j.w;
    const float* wp = rows_of(w);
    shifted_row_gemms(
        B, T_out, T, K, [&](int64_t k) { return k - pad; },
        [&](int64_t k) {
          return gemm::Mat{wp + k * w.strides[4], weight_ld(w), 1, fp16};
        },
        ShiftedRows{.out = rows_of(*j.out_y),
                    .ld_out = row_ld(*j.out_y),
                    .n_out = g.C_out,
                    .in = gemm::Mat{rows_of(*j.x), row_ld(*j.x), 1, fp16},
                    .n_in = g.C_in,
                    .bias = bias},
        sc);
  }
  // dX[t'] = bias + sum_k dY[t' - k + pad] . W_k^T;  W_k^T(o, c) = w[o, c, k]. The bias is the
  // transposed forward's (ConvJob adds it to out_x there); a backward job has none.
  if (prim == Primitive::kBackwardData) {
    const View5& w = *j.w;
    const float* wp = rows_of(w);
    shifted_row_gemms(
        B, T, T_out, K, [&](int64_t k) { return pad - k; },
        [&](int64_t k) {
          return gemm::Mat{wp + k * w.strides[4], 1, weight_ld(w), fp16};
        },
        ShiftedRows{.out = rows_of(*j.out_x),
                    .ld_out = row_ld(*j.out_x),
                    .n_out = g.C_in,
                    .in = gemm::Mat{rows_of(*j.y), row_ld(*j.y), 1, fp16},
                    .n_in = g.C_out,
                    .bias = bias},
        sc);
  }
  // dW_k[:, o-block] = sum_t X[t + k - pad]^T . dY[t][:, o-block]: one GEMM per (tap, output
  // channel block) with all input channels as M, so each task packs its share of dY once.
  if (prim == Primitive::kBackwardWeight) weight_gradient(j, slots, slot_elems, pack, bias_out);
}

}  // namespace

TbcScratch tbc_gemm_scratch(const ConvJob& job, bool own_gemm) {
  TbcScratch s;
  s.pack_elems = own_gemm ? gemm::pack_elems() : 0;
  s.slot = tbc::align64(s.pack_elems * static_cast<int64_t>(sizeof(float)));
  if (s.pack_elems == 0) return s;
  const ConvGeometry& g = job.g;  // the packed weight taps and source rows of forward / data
  const int64_t B = g.N, K = g.k[2];
  int64_t taps = 0, rows = 0;
  if (job.out_y) {
    taps = PackedTaps::floats(K, g.C_in, g.C_out);
    rows = source_rows_elems(B, K, g.C_in);
  }
  if (job.out_x) {
    taps = std::max(taps, PackedTaps::floats(K, g.C_out, g.C_in));
    rows = std::max(rows, source_rows_elems(B, K, g.C_out));
  }
  s.shared = tbc::align64(taps * static_cast<int64_t>(sizeof(float)));
  s.slot = tbc::align64((s.pack_elems + rows) * static_cast<int64_t>(sizeof(float)));
  return s;
}

void tbc_run_gemm(const ConvJob& job, const TbcScratch& s, Primitive prim, int slots, char* scratch,
                  float* bias_out) {
  float* pack = s.pack_elems > 0 ? reinterpret_cast<float*>(scratch + s.shared) : nullptr;
  run_f32(job, prim, slots, s.slot / static_cast<int64_t>(sizeof(float)), pack,
          reinterpret_cast<float*>(scratch), bias_out);
}

}  // namespace aclnn_cpu::conv
