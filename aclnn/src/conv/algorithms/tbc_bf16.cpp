// tbc_bf16 (tbc_gemm.h): bf16 time-major convolutions on the AVX512_BF16 pair kernels, fp32
// accumulation, the activations read where they lie.
//
//   forward / data   per task of 512 output rows, per 64-column block, per tile of 6 rows: the
//                    taps' source rows (a zero row in the padding) times the weight taps packed
//                    once per call as channel pairs, bp[block][k][c2][64] (tbc_kernels.h), all
//                    taps summed in registers; the fp32 tile is rounded to the output's dtype.
//   weight           the reduction runs over rows, so pairs of rows (r, r + 1) are the units:
//                    per C_out block task (every tap) and chunk of 256 output rows, dy2[p][o]
//                    interleaves the two dy rows of each pair and x2[p][c] the two x rows, once
//                    per parity for a group of taps (a zero row in the padding); then
//                    direct_grid_weight_bf16 adds dwt[k][c][o] += x2[p + shift][c] . dy2[p][o].
//                    An odd last row is added on its own; the task also sums its dy rows into
//                    the bias gradient.
//
// The products of bf16 values are exact in fp32; vdpbf16ps adds them with round-to-nearest-even
// but treats denormal inputs and results as zero (README).
#include <algorithm>
#include <cstring>

#include "conv/kernels/grid/direct_grid.h"
#include "conv/engine/half.h"
#include "conv/algorithms/tbc_gemm.h"
#include "conv/kernels/tbc/tbc_kernels.h"
#include "conv/algorithms/tbc_rows.h"

namespace aclnn_cpu::conv {
namespace {

using namespace tbc;

constexpr int64_t kRowsPerTask = 512;
constexpr int64_t kWeightPairs = 128;         // row pairs per weight-gradient chunk
constexpr int64_t kOutChannelsPerTask = 128;  // weight gradient: C_out per task (at most)
constexpr int64_t kZeroOffset[1] = {0};

// Units of one primitive's packed weights: C reduction channels, N output columns, K taps.
int64_t packed_units(int64_t C, int64_t N, int64_t K) {
  return ceil_div64(N, kTbcBlockCols) * K * ceil_div64(C, 2) * kTbcBlockCols;
}

// The shared region: packed weights, the bias (fp32, padded to whole blocks), a zero row.
struct Shared {
  uint32_t* packed;
  float* bias;
  uint16_t* zero;
};
int64_t widest(const ConvJob& j) {
  return std::max(j.g.C_in, j.g.C_out);
}
// Byte offsets of the bias and the zero row in the shared region, and its size.
struct SharedLayout {
  int64_t bias, zero, bytes;
};
SharedLayout shared_layout(const ConvJob& j) {
  const ConvGeometry& g = j.g;
  int64_t units = 0;
  if (j.out_y) units = std::max(units, packed_units(g.C_in, g.C_out, g.k[2]));
  if (j.out_x) units = std::max(units, packed_units(g.C_out, g.C_in, g.k[2]));
  const int64_t cols = ceil_div64(widest(j), kTbcBlockCols) * kTbcBlockCols;
  const int64_t bias = align64(units * 4), zero = bias + align64(cols * 4);
  return {bias, zero, zero + align64((widest(j) + 2) * 2)};
}
Shared carve(const ConvJob& j, char* scratch) {
  const SharedLayout l = shared_layout(j);
  return {reinterpret_cast<uint32_t*>(scratch), reinterpret_cast<float*>(scratch + l.bias),
          reinterpret_cast<uint16_t*>(scratch + l.zero)};
}

int64_t bf16_weight_block(const ConvJob& j, int slots) {
  return weight_block(j.g.C_out, slots, kOutChannelsPerTask);
}
int64_t span_pairs() {
  return kWeightPairs + kMaxSpanRows / 2 + 1;
}

// Weight gradient slot: dy2 [kWeightPairs][m16], x2 [2 parities][span_pairs()][C_in] (units),
// dwt [K][C_in][m16] fp32.
int64_t weight_slot_bytes(const ConvJob& j, int slots) {
  const int64_t m16 = ceil_div64(bf16_weight_block(j, slots), 16) * 16;
  return align64(kWeightPairs * m16 * 4) + align64(2 * span_pairs() * j.g.C_in * 4) +
         align64(j.g.k[2] * j.g.C_in * m16 * 4);
}

// Writes n fp32 values as the output's dtype (fp32 or bf16).
void store(const float* src, int64_t n, bool bf16, void* dst) {
  if (bf16) {
    direct_narrow_avx512(true, src, n, static_cast<uint16_t*>(dst));
  } else {
    std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
  }
}

// bp[block][k][c2][64]: unit j = (W(2 c2, col), W(2 c2 + 1, col)), col = block * 64 + j, zero
// past C or N; W(rc, col) = w[col, rc, k] (forward) or w[rc, col, k] (data).
void pack_weights(const View5& w, bool data, int64_t C, int64_t N, int64_t K, uint32_t* bp) {
  const uint16_t* wp = reinterpret_cast<const uint16_t*>(w.origin());
  const int64_t s_out = eff(w, 0, 1), s_in = weight_ld(w), s_k = eff(w, 4, 0);
  const int64_t s_rc = data ? s_out : s_in, s_col = data ? s_in : s_out;
  const int64_t C2 = ceil_div64(C, 2), blocks = ceil_div64(N, kTbcBlockCols);
  parallel(blocks * K, [&](int64_t task) {
    const int64_t nb = task / K, k = task % K;
    uint32_t* dst = bp + (nb * K + k) * C2 * kTbcBlockCols;
    for (int64_t c2 = 0; c2 < C2; ++c2)
      for (int64_t j = 0; j < kTbcBlockCols; ++j) {
        const int64_t col = nb * kTbcBlockCols + j, c = 2 * c2;
        uint32_t unit = 0;
        if (col < N) {
          const uint16_t* e = wp + col * s_col + c * s_rc + k * s_k;
          unit = e[0] | (c + 1 < C ? uint32_t{e[s_rc]} << 16 : 0u);
        }
        dst[c2 * kTbcBlockCols + j] = unit;
      }
  });
}

// Forward (data = false) or backward_data: out rows [rows_out, N] from in rows [rows_in, C].
void run_rows(const ConvJob& j, bool data, const Shared& sh) {
  const RowsProblem p = rows_problem(j, data);
  pack_weights(*j.w, data, p.C, p.N, p.K, sh.packed);
  const int64_t blocks = ceil_div64(p.N, kTbcBlockCols);
  std::fill(sh.bias, sh.bias + blocks * kTbcBlockCols, 0.0f);
  if (j.bias) pack<float>(*j.bias, sh.bias, Round::kNone);
  std::fill(sh.zero, sh.zero + widest(j) + 2, uint16_t{0});
  const Rows<const uint16_t> in = rows<const uint16_t>(p.in_v);
  const Rows<char> out{p.out_v.origin(), row_ld(p.out_v) * (p.out_v.dtype == ACL_BF16 ? 2 : 4)};
  const bool bf16_out = p.out_v.dtype == ACL_BF16;
  const int64_t C2 = ceil_div64(p.C, 2);
  parallel(ceil_div64(p.rows_out, kRowsPerTask), [&](int64_t task) {
    const int64_t r0 = task * kRowsPerTask, r1 = std::min(p.rows_out, r0 + kRowsPerTask);
    const uint16_t* a[kTbcTileRows * 256];  // [K][rows] source rows of one tile (K <= 255)
    alignas(64) float tile[kTbcTileRows * kTbcBlockCols];
    for (int64_t nb = 0; nb < blocks; ++nb) {
      const int64_t width = std::min(kTbcBlockCols, p.N - nb * kTbcBlockCols);
      const TbcPairTaps w{p.K, p.C, sh.packed + nb * p.K * C2 * kTbcBlockCols,
                          j.bias ? sh.bias + nb * kTbcBlockCols : nullptr};
      for (int64_t i0 = r0; i0 < r1; i0 += kTbcTileRows) {
        const int rows_here = static_cast<int>(std::min<int64_t>(kTbcTileRows, r1 - i0));
        for (int64_t k = 0; k < p.K; ++k) {
          const int64_t s = tap_shift(data, k, p.pad, p.B);
          for (int i = 0; i < rows_here; ++i) {
            const int64_t src = i0 + i + s;
            a[k * rows_here + i] = src >= 0 && src < p.rows_in ? in.row(src) : sh.zero;
          }
        }
        tbc_bf16_tile(w, rows_here, static_cast<int>(ceil_div64(width, 16)), a, tile);
        for (int i = 0; i < rows_here; ++i)
          store(tile + i * kTbcBlockCols, width, bf16_out,
                out.row(i0 + i) + nb * kTbcBlockCols * (bf16_out ? 2 : 4));
      }
    }
  });
}

// The odd last output row r: dwt[k][c][o] += x[r + (k - pad) B][c] * dy[r][o0 + o] (exact
// products of bf16 values, added in fp32).
void add_last_row(const ConvJob& j, int64_t o0, int64_t no, int64_t m16, float* dwt) {
  const ConvGeometry& g = j.g;
  const int64_t B = g.N, rows_in = g.in[2] * B, r = g.out[2] * B - 1, Ci = g.C_in;
  const uint16_t* d = rows<const uint16_t>(*j.y).row(r) + o0;
  for (int64_t k = 0; k < g.k[2]; ++k) {
    const int64_t xr = r + tap_shift(false, k, g.pad_before[2], B);
    if (xr < 0 || xr >= rows_in) continue;
    const uint16_t* xv = rows<const uint16_t>(*j.x).row(xr);
    for (int64_t c = 0; c < Ci; ++c) {
      float* acc = dwt + (k * Ci + c) * m16;
      const float xc = bf16_to_float(xv[c]);
      for (int64_t o = 0; o < no; ++o) acc[o] += xc * bf16_to_float(d[o]);
    }
  }
}

// dW[o0 + o, c, k] = dwt[k][c][o] in dW's dtype (C_out contiguous: weight_ok).
void store_weights(const ConvJob& j, int64_t o0, int64_t no, int64_t m16, const float* dwt) {
  const View5& dw = *j.out_w;
  const bool bf16_out = dw.dtype == ACL_BF16;
  const int64_t esize = bf16_out ? 2 : 4, ldw = weight_ld(dw), s_k = eff(dw, 4, 0);
  for (int64_t k = 0; k < j.g.k[2]; ++k) {
    char* dst = dw.origin() + (k * s_k + o0) * esize;
    for (int64_t c = 0; c < j.g.C_in; ++c)
      store(dwt + (k * j.g.C_in + c) * m16, no, bf16_out, dst + c * ldw * esize);
  }
}

// dW_k[c][o0 + j] for every tap k over one output-channel block task, reduced over the rows in
// pairs: per chunk of output rows, dy2 is packed once, and x2 once per parity for a group of taps
// (tap k reads x row r + (k - pad) B: its pairs start (k - k0) B rows into the group's packing).
// x rows outside the input are the zero padding. An odd last row is added on its own.
void run_weight(const ConvJob& j, int slots, int64_t slot_bytes, char* slot_base, const Shared& sh,
                float* bias_out) {
  const ConvGeometry& g = j.g;
  const int64_t B = g.N, K = g.k[2], pad = g.pad_before[2], Ci = g.C_in;
  const int64_t rows_in = g.in[2] * B, rows_out = g.out[2] * B, rows_even = rows_out / 2 * 2;
  const Rows<const uint16_t> x = rows<const uint16_t>(*j.x), dy = rows<const uint16_t>(*j.y);
  const int64_t ob = bf16_weight_block(j, slots), blocks = ceil_div64(g.C_out, ob);
  const int64_t group = tap_group(B, K);
  std::fill(sh.zero, sh.zero + widest(j) + 2, uint16_t{0});
  auto x_row = [&](int64_t r) { return r >= 0 && r < rows_in ? x.row(r) : sh.zero; };
  parallel(blocks, [&](int64_t task) {
    const int64_t o0 = task * ob, no = std::min(g.C_out, o0 + ob) - o0;
    const int64_t m16 = ceil_div64(no, 16) * 16;
    char* slot = slot_base + slot_of(slots) * slot_bytes;
    uint32_t* dy2 = reinterpret_cast<uint32_t*>(slot);  // [kWeightPairs][m16]
    uint32_t* x2 = reinterpret_cast<uint32_t*>(slot + align64(kWeightPairs * m16 * 4));
    float* dwt = reinterpret_cast<float*>(reinterpret_cast<char*>(x2) +
                                          align64(2 * span_pairs() * Ci * 4));  // [K][Ci][m16]
    std::fill(dwt, dwt + K * Ci * m16, 0.0f);
    double db[kOutChannelsPerTask] = {};  // bias gradient: sum of dy rows, in row order
    for (int64_t p0 = 0; p0 < rows_even; p0 += 2 * kWeightPairs) {
      const int64_t P = std::min(2 * kWeightPairs, rows_even - p0) / 2;
      for (int64_t p = 0; p < P; ++p) {
        const uint16_t *d0 = dy.row(p0 + 2 * p) + o0, *d1 = dy.row(p0 + 2 * p + 1) + o0;
        direct_interleave_bf16(d0, d1, no, dy2 + p * m16);
        if (bias_out) tbc_sum_rows_bf16(d0, d1, no, db);
      }
      for (int64_t k0 = 0; k0 < K; k0 += group) {
        const int64_t k1 = std::min(K, k0 + group), base = p0 + tap_shift(false, k0, pad, B);
        const int64_t pairs = P + ((k1 - 1 - k0) * B + 1) / 2;
        for (int par = 0; par < (B % 2 && k1 - k0 > 1 ? 2 : 1); ++par)
          for (int64_t q = 0; q < pairs; ++q) {
            const int64_t r = base + par + 2 * q;
            direct_interleave_bf16(x_row(r), x_row(r + 1), Ci, x2 + (par * span_pairs() + q) * Ci);
          }
        for (int64_t k = k0; k < k1; ++k) {
          const int64_t d = (k - k0) * B, par = d % 2;
          direct_grid_weight_bf16(m16, Ci, 1, kZeroOffset, &kAnyPosition,
                                  x2 + (par * span_pairs() + (d - par) / 2) * Ci, Ci, dy2, m16,
                                  WeightRuns{1, P, P, 0, 0, 0}, dwt + k * Ci * m16);
        }
      }
    }
    if (rows_even < rows_out) add_last_row(j, o0, no, m16, dwt);
    store_weights(j, o0, no, m16, dwt);
    if (!bias_out) return;
    if (rows_even < rows_out) tbc_sum_rows_bf16(dy.row(rows_even) + o0, sh.zero, no, db);
    for (int64_t o = 0; o < no; ++o) bias_out[o0 + o] = static_cast<float>(db[o]);
  });
}

}  // namespace

TbcScratch tbc_bf16_scratch(const ConvJob& job, int slots) {
  TbcScratch s;
  s.shared = shared_layout(job).bytes;
  if (job.out_w) s.slot = weight_slot_bytes(job, slots);
  return s;
}

void tbc_run_bf16(const ConvJob& job, const TbcScratch& s, Primitive prim, int slots, char* scratch,
                  float* bias_out) {
  const Shared sh = carve(job, scratch);
  if (prim == Primitive::kForward) run_rows(job, false, sh);
  if (prim == Primitive::kBackwardData) run_rows(job, true, sh);
  if (prim == Primitive::kBackwardWeight)
    run_weight(job, slots, s.slot, scratch + s.shared, sh, bias_out);
}

}  // namespace aclnn_cpu::conv
