// tbc_convert (tbc_gemm.h): time-major convolutions whose operands are not fp32 as computed (fp16,
// bf16 without the dot kernels, cubeMathType USE_FP16 / HF32 rounding), on our fp32 sgemm (OpenBLAS
// at tier none, where sgemm leaves the slot's packing part unused and the conversions are the
// scalar ones). Nothing
// is converted whole: each task converts the rows it is about to multiply (Source::convert, the
// vector conversions with the operand rounding) into fp32 panels of its scratch slot, and rounds
// its fp32 results into the output's dtype as it writes them.
//
//   forward / data   per task of 512 output rows: out_p [rows][N] = bias; per tap k, the source
//                    rows in_p [rows][C] converted, out_p += in_p . W_k (W_k converted once per
//                    call into the shared region, laid out so each GEMM reads it row by row).
//   weight           per C_out block task (every tap), per chunk of 256 output rows: dy_p
//                    [rows][block] converted once, x_p [rows + span][C_in] once per group of
//                    taps, dwt[k] [C_in][block] += x_p[shifted]^T . dy_p over the rows whose
//                    source exists; the task also sums its dy rows into the bias gradient.
#include <algorithm>
#include <cstring>

#include "conv/kernels/grid/direct_grid.h"
#include "conv/engine/half.h"
#include "conv/engine/source.h"
#include "conv/engine/strided.h"
#include "conv/algorithms/tbc_gemm.h"
#include "conv/algorithms/tbc_rows.h"
#include "gemm/sgemm.h"

namespace aclnn_cpu::conv {
namespace {

using namespace tbc;

constexpr int64_t kRowsPerTask = 512;         // forward / data: output rows per task (GEMM M)
constexpr int64_t kWeightRows = 256;          // weight gradient: rows per chunk (GEMM K)
constexpr int64_t kOutChannelsPerTask = 128;  // weight gradient: C_out per task (at most)

Source source_of(const View5& v, Round round, int64_t elem) {
  SrcKind kind = SrcKind::kF32;
  src_kind_of(v.dtype, round, &kind);
  const Source s{v.origin(), kind};
  return s.at(elem);
}

int64_t elem_bytes(aclDataType d) {
  return d == ACL_FLOAT ? 4 : 2;
}

// dst[i] = src[i] as the output's dtype (fp32, fp16 or bf16, to nearest even), i < n.
void store(const float* src, int64_t n, aclDataType dtype, char* dst) {
  if (dtype == ACL_FLOAT) {
    std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
  } else {
    narrow16(dtype == ACL_BF16, src, n, reinterpret_cast<uint16_t*>(dst));
  }
}

// Floats of one slot: GEMM packing, then the primitive's panels (the largest of the requested).
int64_t slot_floats(const ConvJob& j, int slots, int64_t pack) {
  const ConvGeometry& g = j.g;
  const int64_t ob = weight_block(g.C_out, slots, kOutChannelsPerTask);
  int64_t panels = 0;
  if (j.out_y || j.out_x) panels = kRowsPerTask * (g.C_in + g.C_out);
  if (j.out_w)
    panels = std::max(
        panels, g.k[2] * g.C_in * ob + (kWeightRows + kMaxSpanRows) * g.C_in + kWeightRows * ob);
  return ceil_div64(pack, 16) * 16 + panels;
}

// Shared: the weight taps (K * C_in * C_out floats), then the bias (max(C_in, C_out) floats).
int64_t weight_floats(const ConvJob& j) {
  return (j.out_y || j.out_x) ? ceil_div64(j.g.k[2] * j.g.C_in * j.g.C_out, 16) * 16 : 0;
}

// wk[k][rc][col] = W_k(rc, col) converted and rounded: forward W_k(c, o) = w[o, c, k] (rc = c),
// data W_k^T(o, c) = w[o, c, k] (rc = o). Every run of w over o is contiguous (weight_ok).
void convert_weights(const ConvJob& j, bool data, float* wk) {
  const View5& w = *j.w;
  const int64_t Co = j.g.C_out, Ci = j.g.C_in, K = j.g.k[2];
  const int64_t s_in = weight_ld(w), s_k = eff(w, 4, 0);
  constexpr int64_t kBlock = 16;  // input channels per task (data: transposed through `run`)
  parallel(K * ceil_div64(Ci, kBlock), [&](int64_t task) {
    const int64_t k = task % K, c0 = task / K * kBlock, nc = std::min(Ci, c0 + kBlock) - c0;
    float* tap = wk + k * Ci * Co;
    if (!data) {
      for (int64_t c = c0; c < c0 + nc; ++c)
        source_of(w, j.round, c * s_in + k * s_k).convert(Co, 1, tap + c * Co);
      return;
    }
    constexpr int64_t kRun = 256;
    float run[kBlock][kRun];
    for (int64_t o0 = 0; o0 < Co; o0 += kRun) {
      const int64_t no = std::min(Co, o0 + kRun) - o0;
      for (int64_t c = 0; c < nc; ++c)
        source_of(w, j.round, (c0 + c) * s_in + k * s_k + o0).convert(no, 1, run[c]);
      for (int64_t o = 0; o < no; ++o)
        for (int64_t c = 0; c < nc; ++c) tap[(o0 + o) * Ci + c0 + c] = run[c][o];
    }
  });
}

// Forward (data = false) or backward_data on converted row panels.
void run_rows(const ConvJob& j, bool data, const TbcScratch& s, int slots, char* scratch) {
  const RowsProblem p = rows_problem(j, data);
  float* wk = reinterpret_cast<float*>(scratch);  // [K][C][N]
  float* bias = wk + weight_floats(j);            // [N]
  convert_weights(j, data, wk);
  if (j.bias) pack<float>(*j.bias, bias, Round::kNone);
  const int64_t ld_in = row_ld(p.in_v), ld_out = row_ld(p.out_v) * elem_bytes(p.out_v.dtype);
  char* out = p.out_v.origin();
  const int64_t stride = s.slot / static_cast<int64_t>(sizeof(float));
  float* slot_base = reinterpret_cast<float*>(scratch + s.shared);
  parallel(ceil_div64(p.rows_out, kRowsPerTask), [&](int64_t task) {
    const int64_t r0 = task * kRowsPerTask, r1 = std::min(p.rows_out, r0 + kRowsPerTask);
    float* pk = slot_base + slot_of(slots) * stride;
    float* in_p = pk + ceil_div64(s.pack_elems, 16) * 16;  // [rows][C]
    float* out_p = in_p + kRowsPerTask * p.C;              // [rows][N]
    for (int64_t r = r0; r < r1; ++r) {
      float* row = out_p + (r - r0) * p.N;
      if (j.bias) {
        std::memcpy(row, bias, static_cast<size_t>(p.N) * sizeof(float));
      } else {
        std::fill(row, row + p.N, 0.0f);
      }
    }
    for (int64_t k = 0; k < p.K; ++k) {
      const int64_t sh = tap_shift(data, k, p.pad, p.B);
      const int64_t a = std::max(r0, -sh), b = std::min(r1, p.rows_in - sh);
      if (a >= b) continue;
      for (int64_t r = a; r < b; ++r)
        source_of(p.in_v, j.round, (r + sh) * ld_in).convert(p.C, 1, in_p + (r - a) * p.C);
      gemm::sgemm(b - a, p.N, p.C, gemm::Mat{in_p, p.C, 1}, gemm::Mat{wk + k * p.C * p.N, p.N, 1},
                  true, out_p + (a - r0) * p.N, p.N, pk);
    }
    for (int64_t r = r0; r < r1; ++r)
      store(out_p + (r - r0) * p.N, p.N, p.out_v.dtype, out + r * ld_out);
  });
}

// dW_k[:, o-block] = sum_r X[r + (k - pad) B]^T . dY[r][o-block] for every tap k of one
// output-channel block task: per chunk of output rows, dy_p is converted once, and x_p once for
// a group of taps (tap k's rows start (k - k0) B rows into it); each tap's GEMM runs on the rows
// whose source exists.
void run_weight(const ConvJob& j, const TbcScratch& s, int slots, char* scratch, float* bias_out) {
  const ConvGeometry& g = j.g;
  const int64_t B = g.N, K = g.k[2], pad = g.pad_before[2], Ci = g.C_in;
  const int64_t rows_in = g.in[2] * B, rows_out = g.out[2] * B;
  const View5 &x = *j.x, &dy = *j.y, &dw = *j.out_w;
  const int64_t ldx = row_ld(x), ldy = row_ld(dy), esize = elem_bytes(dw.dtype);
  const int64_t ldw = weight_ld(dw) * esize, s_k = eff(dw, 4, 0);
  const int64_t ob = weight_block(g.C_out, slots, kOutChannelsPerTask);
  const int64_t group = tap_group(B, K);
  const int64_t stride = s.slot / static_cast<int64_t>(sizeof(float));
  float* slot_base = reinterpret_cast<float*>(scratch + s.shared);
  parallel(ceil_div64(g.C_out, ob), [&](int64_t task) {
    const int64_t o0 = task * ob, no = std::min(g.C_out, o0 + ob) - o0;
    float* pk = slot_base + slot_of(slots) * stride;
    float* dwt = pk + ceil_div64(s.pack_elems, 16) * 16;  // [K][Ci][no]
    float* xp = dwt + K * Ci * ob;                        // [rows + span][Ci]
    float* dyp = xp + (kWeightRows + kMaxSpanRows) * Ci;  // [rows][no]
    std::fill(dwt, dwt + K * Ci * no, 0.0f);
    double db[kOutChannelsPerTask] = {};  // bias gradient: sum of dy rows, in row order
    for (int64_t r0 = 0; r0 < rows_out; r0 += kWeightRows) {
      const int64_t L = std::min(kWeightRows, rows_out - r0);
      for (int64_t r = 0; r < L; ++r) {
        float* row = dyp + r * no;
        source_of(dy, j.round, (r0 + r) * ldy + o0).convert(no, 1, row);
        // The bias gradient sums dy as stored, without the operand rounding (x_p is free here).
        if (bias_out && j.round != Round::kNone)
          source_of(dy, Round::kNone, (r0 + r) * ldy + o0).convert(no, 1, row = xp);
        if (bias_out) add_run_f32(db, row, no);
      }
      for (int64_t k0 = 0; k0 < K; k0 += group) {
        const int64_t k1 = std::min(K, k0 + group), base = r0 + tap_shift(false, k0, pad, B);
        const int64_t xa = std::max<int64_t>(base, 0);
        const int64_t xb = std::min(rows_in, base + L + (k1 - 1 - k0) * B);
        for (int64_t r = xa; r < xb; ++r)
          source_of(x, j.round, r * ldx).convert(Ci, 1, xp + (r - base) * Ci);
        for (int64_t k = k0; k < k1; ++k) {
          const int64_t d = (k - k0) * B;  // x_p row of output row r0 + i: d + i
          const int64_t a = std::max<int64_t>(0, xa - base - d);
          const int64_t b = std::min(L, xb - base - d);
          if (a >= b) continue;
          gemm::sgemm(Ci, no, b - a, gemm::Mat{xp + (d + a) * Ci, 1, Ci},
                      gemm::Mat{dyp + a * no, no, 1}, true, dwt + k * Ci * no, no, pk);
        }
      }
    }
    if (bias_out)
      for (int64_t o = 0; o < no; ++o) bias_out[o0 + o] = static_cast<float>(db[o]);
    for (int64_t k = 0; k < K; ++k) {
      char* dst = dw.origin() + (k * s_k + o0) * esize;
      for (int64_t c = 0; c < Ci; ++c) store(dwt + (k * Ci + c) * no, no, dw.dtype, dst + c * ldw);
    }
  });
}

}  // namespace

TbcScratch tbc_convert_scratch(const ConvJob& job, int slots) {
  TbcScratch s;
  s.pack_elems = gemm::pack_elems();
  s.shared = align64((weight_floats(job) + std::max(job.g.C_in, job.g.C_out)) * 4);
  s.slot = align64(slot_floats(job, slots, s.pack_elems) * 4);
  return s;
}

void tbc_run_convert(const ConvJob& job, const TbcScratch& s, Primitive prim, int slots,
                     char* scratch, float* bias_out) {
  if (prim == Primitive::kForward) run_rows(job, false, s, slots, scratch);
  if (prim == Primitive::kBackwardData) run_rows(job, true, s, slots, scratch);
  if (prim == Primitive::kBackwardWeight) run_weight(job, s, slots, scratch, bias_out);
}

}  // namespace aclnn_cpu::conv
