// tbc_amx (tbc_gemm.h): bf16 time-major convolutions on the AMX tiles (gemm/amx_gemm.h), fp32
// accumulation in the tiles, the activations read from the caller's [T*B, C] rows.
//
//   forward / data   one GEMM per task of output rows, every tap in it: the taps are concatenated
//                    along the reduction, each tap's C channels padded to Cp = C rounded up to 32
//                    (one tile row), so k blocks never straddle two taps:
//                      out[r0 + m][n] = sum_k sum_c A[m][k Cp + c] B[k Cp + c][n]
//                    A[m][k Cp + c] = in[r0 + m + shift_k][c] (zero where the shift leaves the
//                    rows, and past C), packed per task into A panels straight from the rows; B =
//                    the weight taps W_k (forward) or W_k^T (data), packed once per call into VNNI
//                    panels. The fp32 result (slot scratch) gets the bias and is rounded once into
//                    the output's dtype.
//   weight           per C_out block task (every tap), per chunk of 256 output rows: the block's
//                    dy rows packed once as VNNI B panels, then per tap A = X^T of the shifted x
//                    rows packed as A panels and dwt[k] [C_in][block] += A . B (accumulating
//                    GEMM). The taps' x rows overlap (tap k + 1's are tap k's moved B rows on), so
//                    where B is small enough (band_rows) the chunk's band of x rows, 256 + (K-1) B
//                    at most, is transposed once into [C_in][rows] and each tap's A panels are
//                    copied from it in runs of 32 rows; the transposition (a gather across rows)
//                    is then done once a chunk rather than K times. The A panels hold the same
//                    bytes either way. A tap whose shifted rows leave the input in a chunk (the
//                    first and last chunks, taps other than pad) runs on the rows that exist, with
//                    those dy rows packed again (a window of VNNI panels at an offset is not a
//                    panel set the kernel can read: its panels are K blocks apart). The task also
//                    sums its dy rows into the bias gradient (double, row order). Chunks and taps
//                    run in a fixed order: results do not depend on the thread count.
//
// Why the taps are concatenated rather than run as per-tap GEMMs with accumulate: one GEMM keeps
// every tap's products in the same fp32 tiles and stores each C tile once, where K accumulating
// GEMMs would store, reload and add the fp32 block K times (and round it K times); the price is
// Cp - C zero channels per tap, none when C is a multiple of 32.
//
// TDPBF16PS reads bf16 denormals as zero and flushes denormal sums (the README's bf16 note).
#include <algorithm>
#include <cstring>

#include "conv/algorithms/tbc_gemm.h"
#include "conv/algorithms/tbc_rows.h"
#include "conv/engine/half.h"
#include "conv/engine/source.h"
#include "conv/engine/strided.h"
#include "gemm/amx_gemm.h"

namespace aclnn_cpu::conv {
namespace {

using namespace tbc;
using gemm::Bf16Mat;
using gemm::kAmxK;
using gemm::kAmxRows;

constexpr int64_t kRowsSlotBytes = int64_t{1} << 20;  // forward / data: A panels + fp32 rows
constexpr int64_t kMaxRowsPerTask = 512;
constexpr int64_t kWeightRows = 256;          // weight gradient: rows per chunk (a multiple of 32)
constexpr int64_t kOutChannelsPerTask = 128;  // weight gradient: C_out per task (at most)
constexpr int64_t kMaxBandRows = 1024;        // weight gradient: transposed x rows per chunk

// The forward (data = false) or backward_data GEMM of every task: out rows [rows_out, N] from the
// concatenated taps, K * Cp reduction channels.
struct TapGemm {
  RowsProblem rows;
  int64_t Cp;      // C rounded up to a whole tile row
  int64_t reduce;  // K * Cp
  int64_t M;       // output rows per task (a multiple of 32)
};

// Output rows per task: what fits kRowsSlotBytes, in whole pairs of tiles, at most kMaxRowsPerTask
// and no more than an even share of the rows per thread, at least 32.
TapGemm tap_gemm(const ConvJob& j, bool data, int slots) {
  TapGemm t{rows_problem(j, data), 0, 0, 0};
  t.Cp = gemm::amx_round_up(t.rows.C, kAmxK);
  t.reduce = t.rows.K * t.Cp;
  const int64_t per_row = t.reduce * 2 + t.rows.N * 4;
  const int64_t fit = std::min(kMaxRowsPerTask, kRowsSlotBytes / per_row / 32 * 32);
  const int64_t share = gemm::amx_round_up(ceil_div64(t.rows.rows_out, slots), 32);
  t.M = std::max<int64_t>(32, std::min(fit, share));
  return t;
}

// Slot bytes of a rows task: A panels [M/16][reduce/32] tiles, then the fp32 rows [M][N].
int64_t a_panel_bytes(const TapGemm& t) {
  return align64(gemm::amx_packed_a_elems(t.M, t.reduce) * 2);
}
int64_t rows_slot_bytes(const TapGemm& t) {
  return a_panel_bytes(t) + align64(t.M * t.rows.N * 4);
}
// Shared bytes of the packed weight taps, and the bias (fp32) after them.
int64_t weight_panel_bytes(const TapGemm& t) {
  return align64(gemm::amx_packed_b_elems(t.reduce, t.rows.N) * 2);
}

int64_t weight_block_of(const ConvJob& j, int slots) {
  return weight_block(j.g.C_out, slots, kOutChannelsPerTask);
}
// Weight gradient: the x rows of a chunk's taps transposed once (a band of up to 256 + (K - 1) B
// rows, every tap's window in it) where that is less than the taps' K windows of 256 and at most
// kMaxBandRows; 0: each tap's A panels are gathered from the rows themselves.
int64_t band_rows(const ConvJob& j) {
  const int64_t K = j.g.k[2], rows = kWeightRows + (K - 1) * j.g.N;
  return K > 1 && rows < K * kWeightRows && rows <= kMaxBandRows ? rows : 0;
}

// Weight-gradient slot: dwt [K][C_in][block] fp32, A panels of X^T [C_in, 256], two B panels of
// dy [256, block] (the chunk's, and the rows of a tap that leaves the input), and the band of
// transposed x rows [C_in][band_rows] (if any).
int64_t weight_slot_bytes(const ConvJob& j, int slots) {
  const int64_t ob = weight_block_of(j, slots);
  return align64(j.g.k[2] * j.g.C_in * ob * 4) +
         align64(gemm::amx_packed_a_elems(j.g.C_in, kWeightRows) * 2) +
         2 * align64(gemm::amx_packed_b_elems(kWeightRows, ob) * 2) +
         align64(j.g.C_in * band_rows(j) * 2);
}

// dst[i] = src[i] as the output's dtype (fp32, fp16 or bf16, to nearest even), i < n.
void store(const float* src, int64_t n, aclDataType dtype, char* dst) {
  if (dtype == ACL_FLOAT) {
    std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
  } else {
    narrow16(dtype == ACL_BF16, src, n, reinterpret_cast<uint16_t*>(dst));
  }
}
int64_t elem_bytes(aclDataType d) {
  return d == ACL_FLOAT ? 4 : 2;
}

// The weight taps as B panels (amx_pack_b's layout of B [K Cp, N]): B(k Cp + c, n) = W_k(c, n)
// with W_k(c, n) = w[n, c, k] (forward) or w[c, n, k] (data), zero for c >= C. Within a panel of
// 16 columns the k blocks of one tap are consecutive, so each (tap, panel) is one amx_pack_b of a
// 16-column strided view of the weight, zero-padded by it to Cp.
void pack_weight_taps(const View5& w, bool data, const TapGemm& t, uint16_t* bp) {
  const uint16_t* wp = reinterpret_cast<const uint16_t*>(w.origin());
  const int64_t s_out = eff(w, 0, 1), s_in = weight_ld(w), s_k = eff(w, 4, 0);
  const int64_t s_rc = data ? s_out : s_in, s_col = data ? s_in : s_out;
  const int64_t C = t.rows.C, N = t.rows.N, K = t.rows.K;
  const int64_t panels = ceil_div64(N, kAmxRows), blocks = t.reduce / kAmxK;
  parallel(panels * K, [&](int64_t task) {
    const int64_t jp = task / K, k = task % K, n0 = jp * kAmxRows;
    const Bf16Mat tap{wp + k * s_k + n0 * s_col, s_rc, s_col};
    uint16_t* dst = bp + (jp * blocks + k * t.Cp / kAmxK) * kAmxRows * kAmxK;
    gemm::amx_pack_b(C, std::min(kAmxRows, N - n0), tap, dst);
  });
}

// The A panels of one task (amx_pack_a's layout of A [M, K Cp]): row m of panel i is source row
// src[k][m] of tap k (null: a zero row, in the padding) for channels c < C, zero past C.
void pack_shifted_rows(const TapGemm& t, const Rows<const uint16_t>& in, int64_t r0, int64_t count,
                       bool data, uint16_t* ap) {
  const int64_t C = t.rows.C, cb = t.Cp / kAmxK, blocks = t.reduce / kAmxK;
  const int64_t panels = ceil_div64(count, kAmxRows);
  for (int64_t i = 0; i < panels; ++i)
    for (int64_t k = 0; k < t.rows.K; ++k) {
      const int64_t shift = tap_shift(data, k, t.rows.pad, t.rows.B);
      for (int64_t r = 0; r < kAmxRows; ++r) {
        const int64_t m = i * kAmxRows + r, src = r0 + m + shift;
        const bool in_rows = m < count && src >= 0 && src < t.rows.rows_in;
        const uint16_t* row = in_rows ? in.row(src) : nullptr;
        for (int64_t b = 0; b < cb; ++b) {
          uint16_t* dst = ap + ((i * blocks + k * cb + b) * kAmxRows + r) * kAmxK;
          const int64_t c0 = b * kAmxK, n = row ? std::min(kAmxK, C - c0) : 0;
          if (n > 0) std::memcpy(dst, row + c0, static_cast<size_t>(n) * 2);
          std::fill(dst + n, dst + kAmxK, uint16_t{0});
        }
      }
    }
}

// Forward (data = false) or backward_data: every task's rows in one GEMM over the concatenated
// taps, then bias and one rounding into the output.
void run_rows(const ConvJob& j, bool data, int slots, const TbcScratch& s, char* scratch) {
  const TapGemm t = tap_gemm(j, data, slots);
  const RowsProblem& p = t.rows;
  uint16_t* bp = reinterpret_cast<uint16_t*>(scratch);
  float* bias = reinterpret_cast<float*>(scratch + weight_panel_bytes(t));
  pack_weight_taps(*j.w, data, t, bp);
  if (j.bias) pack<float>(*j.bias, bias, Round::kNone);
  const Rows<const uint16_t> in = rows<const uint16_t>(p.in_v);
  const int64_t ld_out = row_ld(p.out_v) * elem_bytes(p.out_v.dtype);
  char* out = p.out_v.origin();
  char* slot_base = scratch + s.shared;
  parallel(ceil_div64(p.rows_out, t.M), [&](int64_t task) {
    const int64_t r0 = task * t.M, count = std::min(p.rows_out - r0, t.M);
    char* slot = slot_base + slot_of(slots) * s.slot;
    uint16_t* ap = reinterpret_cast<uint16_t*>(slot);
    float* acc = reinterpret_cast<float*>(slot + a_panel_bytes(t));  // [count][N]
    pack_shifted_rows(t, in, r0, count, data, ap);
    gemm::amx_gemm_bf16(count, p.N, t.reduce, ap, bp, acc, p.N, false);
    for (int64_t m = 0; m < count; ++m) {
      float* row = acc + m * p.N;
      if (j.bias)
        for (int64_t n = 0; n < p.N; ++n) row[n] += bias[n];
      store(row, p.N, p.out_v.dtype, out + (r0 + m) * ld_out);
    }
  });
}

// dW[o0 + o, c, k] = dwt[k][c][o] in dW's dtype (C_out contiguous: weight_ok).
void store_weights(const ConvJob& j, int64_t o0, int64_t no, const float* dwt) {
  const View5& dw = *j.out_w;
  const int64_t esize = elem_bytes(dw.dtype), ldw = weight_ld(dw) * esize, s_k = eff(dw, 4, 0);
  for (int64_t k = 0; k < j.g.k[2]; ++k) {
    char* dst = dw.origin() + (k * s_k + o0) * esize;
    for (int64_t c = 0; c < j.g.C_in; ++c)
      store(dwt + (k * j.g.C_in + c) * no, no, dw.dtype, dst + c * ldw);
  }
}

// xt[c * ld + r - lo] = x[r][c] for rows [lo, hi) and c < C: the transposition amx_pack_a's
// strided gather of X^T does, once for a chunk's taps; 32 rows at a time, so that the rows read
// stay in cache while the channels are written along.
void transpose_rows(const Rows<const uint16_t>& x, int64_t lo, int64_t hi, int64_t C, uint16_t* xt,
                    int64_t ld) {
  for (int64_t r0 = lo; r0 < hi; r0 += 32) {
    const int64_t n = std::min<int64_t>(32, hi - r0);
    for (int64_t c = 0; c < C; ++c) {
      uint16_t* dst = xt + c * ld + (r0 - lo);
      for (int64_t i = 0; i < n; ++i) dst[i] = x.row(r0 + i)[c];
    }
  }
}

// dW_k[:, o-block] = sum_r X[r + (k - pad) B]^T . dY[r][o-block] for every tap k of one
// output-channel block task, over chunks of kWeightRows output rows (see the top of this file).
void run_weight(const ConvJob& j, int slots, int64_t slot_bytes, char* slot_base, float* bias_out) {
  const ConvGeometry& g = j.g;
  const int64_t B = g.N, K = g.k[2], pad = g.pad_before[2], Ci = g.C_in;
  const int64_t rows_in = g.in[2] * B, rows_out = g.out[2] * B;
  const Rows<const uint16_t> x = rows<const uint16_t>(*j.x), dy = rows<const uint16_t>(*j.y);
  const int64_t ob = weight_block_of(j, slots), band_ld = band_rows(j);
  const int64_t a_bytes = align64(gemm::amx_packed_a_elems(Ci, kWeightRows) * 2);
  const int64_t b_bytes = align64(gemm::amx_packed_b_elems(kWeightRows, ob) * 2);
  parallel(ceil_div64(g.C_out, ob), [&](int64_t task) {
    const int64_t o0 = task * ob, no = std::min(g.C_out, o0 + ob) - o0;
    char* slot = slot_base + slot_of(slots) * slot_bytes;
    float* dwt = reinterpret_cast<float*>(slot);  // [K][Ci][no]
    char* panels = slot + align64(K * Ci * ob * 4);
    uint16_t* ap = reinterpret_cast<uint16_t*>(panels);                 // X^T of one tap
    uint16_t* chunk_b = reinterpret_cast<uint16_t*>(panels + a_bytes);  // dy rows of the chunk
    uint16_t* edge_b = reinterpret_cast<uint16_t*>(panels + a_bytes + b_bytes);
    uint16_t* band = reinterpret_cast<uint16_t*>(panels + a_bytes + 2 * b_bytes);  // [Ci][band_ld]
    std::fill(dwt, dwt + K * Ci * no, 0.0f);
    double db[kOutChannelsPerTask] = {};  // bias gradient: sum of dy rows, in row order
    for (int64_t r0 = 0; r0 < rows_out; r0 += kWeightRows) {
      const int64_t r1 = std::min(rows_out, r0 + kWeightRows);
      gemm::amx_pack_b(r1 - r0, no, Bf16Mat{dy.row(r0) + o0, dy.ld, 1}, chunk_b);
      if (bias_out)
        for (int64_t r = r0; r < r1; ++r) {
          const uint16_t* d = dy.row(r) + o0;
          for (int64_t o = 0; o < no; ++o) db[o] += bf16_to_float(d[o]);
        }
      // The x rows of every tap's window: [r0 + shift_0, r1 + shift_K-1) within the input.
      const int64_t lo = std::max<int64_t>(0, r0 + tap_shift(false, 0, pad, B));
      const int64_t hi = std::min(rows_in, r1 + tap_shift(false, K - 1, pad, B));
      if (band_ld > 0) transpose_rows(x, lo, hi, Ci, band, band_ld);
      for (int64_t k = 0; k < K; ++k) {
        const int64_t shift = tap_shift(false, k, pad, B);
        const int64_t a = std::max(r0, -shift), b = std::min(r1, rows_in - shift);
        if (a >= b) continue;  // every source row of the chunk in the padding
        const uint16_t* bp = chunk_b;
        if (a != r0 || b != r1) {
          gemm::amx_pack_b(b - a, no, Bf16Mat{dy.row(a) + o0, dy.ld, 1}, edge_b);
          bp = edge_b;
        }
        // A = X^T of the tap's rows: from the band (rows contiguous per channel), or gathered.
        const Bf16Mat xt = band_ld > 0 ? Bf16Mat{band + (a + shift - lo), band_ld, 1}
                                       : Bf16Mat{x.row(a + shift), 1, x.ld};
        gemm::amx_pack_a(Ci, b - a, xt, ap);
        gemm::amx_gemm_bf16(Ci, no, b - a, ap, bp, dwt + k * Ci * no, no, true);
      }
    }
    store_weights(j, o0, no, dwt);
    if (bias_out)
      for (int64_t o = 0; o < no; ++o) bias_out[o0 + o] = static_cast<float>(db[o]);
  });
}

}  // namespace

TbcScratch tbc_amx_scratch(const ConvJob& job, int slots) {
  TbcScratch s;
  for (bool data : {false, true}) {
    if (!(data ? job.out_x : job.out_y)) continue;
    const TapGemm t = tap_gemm(job, data, slots);
    s.shared = std::max(s.shared, weight_panel_bytes(t) + align64(t.rows.N * 4));
    s.slot = std::max(s.slot, rows_slot_bytes(t));
  }
  if (job.out_w) s.slot = std::max(s.slot, weight_slot_bytes(job, slots));
  return s;
}

void tbc_run_amx(const ConvJob& job, const TbcScratch& s, Primitive prim, int slots, char* scratch,
                 float* bias_out) {
  if (prim == Primitive::kForward) run_rows(job, false, slots, s, scratch);
  if (prim == Primitive::kBackwardData) run_rows(job, true, slots, s, scratch);
  if (prim == Primitive::kBackwardWeight)
    run_weight(job, slots, s.slot, scratch + s.shared, bias_out);
}

}  // namespace aclnn_cpu::conv
