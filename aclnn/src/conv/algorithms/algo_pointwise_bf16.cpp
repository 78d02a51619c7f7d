// pointwise_gemm on bf16 inputs with the AVX512_BF16 dot kernels of direct_grid.h (where
// bf16_dot_kernels()): the three GEMMs of algo_pointwise.cpp with fp32 accumulation, read from the
// bf16 bits, no conversion pass, no im2col, no scatter (the products land in the output rows).
//
//   forward  y[n, g]  (Cog x S)  = w[g] (Cog x Cig) * x[n, g] (Cig x S)
//   data     dx[n, g] (Cig x S)  = w[g]^T (Cig x Cog) * dy[n, g] (Cog x S)
//            both: the source's rows as pairs (2 c2, 2 c2 + 1) interleaved per column chunk,
//            x2[c2][j] = (src[2 c2][j], src[2 c2 + 1][j]), times the weights packed as the
//            matching pairs: one tap of direct_grid_forward_bf16 (T = 1, offset 0).
//   weight   dw[g]    (Cog x Cig) = sum_n dy[n, g] * x[n, g]^T
//            reduction over positions, as pairs of positions (2 p, 2 p + 1), adjacent in memory
//            already: dy transposed to channels-last dyt[p][o] (the vector operand), x read in
//            place (the broadcast one) by direct_rows_weight_bf16. An odd S is staged so that
//            every pair starts at an even element.
//
// The products of bf16 values are exact in fp32; vdpbf16ps adds them with round-to-nearest-even
// but treats denormal inputs and results as zero (README).
#include <cstring>

#include "conv/algorithms/algo_support.h"
#include "conv/kernels/grid/direct_grid.h"
#include "conv/algorithms/pointwise_bf16.h"

namespace aclnn_cpu::conv::pointwise_bf16 {
namespace {

constexpr int64_t kPanelBytes = int64_t{256} << 10;  // a task's pairs panel [C2, cols]
constexpr int64_t kTileCols = 48;                    // the forward kernel's tile width
constexpr int64_t kChunkPairs = 96;   // channel pairs per kernel pass (a 48-column tile: 18 KB)
constexpr int64_t kWeightPairs = 64;  // weight gradient: position pairs per kernel call
constexpr int64_t kZeroOffset[1] = {0};

// One GEMM per (sample, group): out[m, S] = W[m, C] * src[C, S], W(i, c) = w[i * so + c * si].
struct Gemm {
  int64_t m, C, S;
  const uint16_t* src;
  int64_t src_sample, src_group;
  float* out;
  int64_t out_sample, out_group;
  const uint16_t* w;
  int64_t so, si;
};

Gemm forward_gemm(const ConvGeometry& g, const Operands<float>& o) {
  const int64_t Cig = g.cin_g(), Cog = g.cout_g(), S = g.out_size();
  return {Cog, Cig, S, o.x16, g.C_in * S, Cig * S, o.out, g.C_out * S, Cog * S, o.w16, Cig, 1};
}

Gemm data_gemm(const ConvGeometry& g, const Operands<float>& o) {
  const int64_t Cig = g.cin_g(), Cog = g.cout_g(), S = g.in_size();
  return {Cig, Cog, S, o.y16, g.C_out * S, Cog * S, o.out, g.C_in * S, Cig * S, o.w16, 1, Cig};
}

// Columns per task for a C-row source: a pairs panel of about kPanelBytes (whole 48-column
// tiles), fewer where that leaves a thread without several tasks.
void plan_gemm(const Problem& p, int64_t m, int64_t C, int64_t S, Blocking& b) {
  const int64_t C2 = ceil_div(C, 2);
  const int64_t by_budget =
      std::max<int64_t>(kTileCols, kPanelBytes / (C2 * 4) / kTileCols * kTileCols);
  const int64_t by_tasks = round16(block_size(S, pieces_wanted(p)));
  b.cols = std::max<int64_t>(1, std::min({by_budget, by_tasks, S}));
  b.slot_elems = C2 * b.cols;
  b.shared_elems = p.g.groups * direct_packed_w_elems(m, C2, 1);
}

// packed[ob][c2][8] = the pair (W(o, 2 c2), W(o, 2 c2 + 1)), zero past m or C.
void pack_pairs(const Gemm& gm, const uint16_t* w, uint32_t* packed) {
  const int64_t C2 = ceil_div(gm.C, 2);
  for (int64_t o0 = 0; o0 < gm.m; o0 += kDirectOcBlock)
    for (int64_t c2 = 0; c2 < C2; ++c2, packed += kDirectOcBlock)
      for (int64_t i = 0; i < kDirectOcBlock; ++i) {
        const int64_t o = o0 + i, c = 2 * c2;
        const uint32_t lo = o < gm.m ? w[o * gm.so + c * gm.si] : 0;
        const uint32_t hi = o < gm.m && c + 1 < gm.C ? w[o * gm.so + (c + 1) * gm.si] : 0;
        packed[i] = lo | hi << 16;
      }
}

void run_gemm(const Problem& p, const Blocking& b, const Operands<float>& o, const Gemm& gm) {
  const ConvGeometry& g = p.g;
  const int64_t C2 = ceil_div(gm.C, 2), pk = direct_packed_w_elems(gm.m, C2, 1), S = gm.S;
  uint32_t* packed = reinterpret_cast<uint32_t*>(o.shared);  // [groups][pk]
  for_tasks(g.groups, [&](int64_t grp) {
    pack_pairs(gm, gm.w + grp * g.cout_g() * g.cin_g(), packed + grp * pk);
  });
  const int64_t chunks = ceil_div(S, b.cols);
  for_tasks(g.N * g.groups * chunks, [&](int64_t t) {
    const int64_t chunk = t % chunks, ng = t / chunks, grp = ng % g.groups, n = ng / g.groups;
    const int64_t j0 = chunk * b.cols, cols = std::min(S, j0 + b.cols) - j0;
    const uint16_t* src = gm.src + n * gm.src_sample + grp * gm.src_group + j0;  // [C, S]
    uint32_t* x2 = reinterpret_cast<uint32_t*>(slot_scratch(p, b, o));           // [C2, cols]
    for (int64_t c2 = 0; c2 < C2; ++c2) {
      const uint16_t* a = src + 2 * c2 * S;
      if (2 * c2 + 1 < gm.C) {
        direct_interleave_bf16(a, a + S, cols, x2 + c2 * cols);
      } else {  // an odd last channel pairs with zero
        for (int64_t j = 0; j < cols; ++j) x2[c2 * cols + j] = a[j];
      }
    }
    // One block of 8 output rows across the whole panel at a time: 8 output streams rather than m
    // (measured: bench/RESULTS.md, design pointwise_bf16.row-block).
    for (int64_t o0 = 0; o0 < gm.m; o0 += kDirectOcBlock)
      direct_grid_forward_bf16(
          {.m = std::min(kDirectOcBlock, gm.m - o0),
           .n = cols,
           .C = C2,
           .T = 1,
           .off = kZeroOffset,
           .x = x2,
           .plane = cols,
           .packed = packed + grp * pk + o0 * C2,
           .out = gm.out + n * gm.out_sample + grp * gm.out_group + j0 + o0 * S,
           .ldo = S,
           .c_chunk = std::min(C2, kChunkPairs),
           .row_len = 0,
           .pitch = 0});
  });
}

// Rows [rows][L] of src (row stride ld) as rows of position pairs: src itself (*ld2 = ld / 2)
// when every pair starts at an even element, else copied to `stage` (*ld2 = ceil(L / 2)) with a
// zero past an odd L.
const uint32_t* pair_rows(const uint16_t* src, int64_t ld, int64_t rows, int64_t L, uint16_t* stage,
                          int64_t* ld2) {
  if (ld % 2 == 0 && L % 2 == 0) {
    *ld2 = ld / 2;
    return reinterpret_cast<const uint32_t*>(src);
  }
  const int64_t pairs = ceil_div(L, 2);
  for (int64_t r = 0; r < rows; ++r) {
    std::memcpy(stage + r * 2 * pairs, src + r * ld, static_cast<size_t>(L) * sizeof(uint16_t));
    if (L % 2) stage[r * 2 * pairs + L] = 0;
  }
  *ld2 = pairs;
  return reinterpret_cast<const uint32_t*>(stage);
}

}  // namespace

void plan_forward(const Problem& p, Blocking& b) {
  plan_gemm(p, p.g.cout_g(), p.g.cin_g(), p.g.out_size(), b);
}

void plan_data(const Problem& p, Blocking& b) {
  plan_gemm(p, p.g.cin_g(), p.g.cout_g(), p.g.in_size(), b);
}

// Slot: dyt [kWeightPairs][m16], dwt [cb16][m16], and two staging areas (odd S) of Cog and
// cblock rows x 2 kWeightPairs bf16.
void plan_weight(const Problem& p, Blocking& b) {
  const int64_t m16 = round16(p.g.cout_g()), cb16 = round16(b.cblock);
  b.pack_elems = 0;
  b.slot_elems = kWeightPairs * m16 + cb16 * m16 + (m16 + cb16) * kWeightPairs;
}

void forward(const Problem& p, const Blocking& b, const Operands<float>& o) {
  run_gemm(p, b, o, forward_gemm(p.g, o));
}

void backward_data(const Problem& p, const Blocking& b, const Operands<float>& o) {
  run_gemm(p, b, o, data_gemm(p.g, o));
}

void backward_weight(const Problem& p, const Blocking& b, const Operands<float>& o) {
  const ConvGeometry& g = p.g;
  const int64_t Cig = g.cin_g(), Cog = g.cout_g(), S = g.in_size();
  const int64_t m16 = round16(Cog), cb16 = round16(b.cblock);
  for_weight_tasks(
      p, b, o, [&](int64_t n0, int64_t n1, int64_t grp, int64_t c0, int64_t nc, float* dst) {
        float* base = slot_scratch(p, b, o);
        uint32_t* dyt = reinterpret_cast<uint32_t*>(base);                   // [pairs][m16]
        float* dwt = base + kWeightPairs * m16;                              // [nc][m16]
        uint16_t* dy_stage = reinterpret_cast<uint16_t*>(dwt + cb16 * m16);  // [Cog][2 pairs]
        uint16_t* x_stage = dy_stage + 2 * m16 * kWeightPairs;               // [nc][2 pairs]
        std::memset(dwt, 0, static_cast<size_t>(nc * m16) * sizeof(float));
        for (int64_t n = n0; n < n1; ++n) {
          const uint16_t* dy = o.y16 + (n * g.C_out + grp * Cog) * S;     // [Cog, S]
          const uint16_t* x = o.x16 + (n * g.C_in + grp * Cig + c0) * S;  // [nc, S]
          for (int64_t s0 = 0; s0 < S; s0 += 2 * kWeightPairs) {
            const int64_t L = std::min(2 * kWeightPairs, S - s0), pairs = ceil_div(L, 2);
            int64_t ld_dy = 0, ld_x = 0;
            const uint32_t* dy2 = pair_rows(dy + s0, S, Cog, L, dy_stage, &ld_dy);  // [Cog][pairs]
            const uint32_t* x2 = pair_rows(x + s0, S, nc, L, x_stage, &ld_x);       // [nc][pairs]
            direct_transpose_avx512(reinterpret_cast<const float*>(dy2), ld_dy, Cog, pairs,
                                    reinterpret_cast<float*>(dyt), m16, m16);
            // dwt[c][o] += sum_p dyt[p][o] . x2[c][p]
            direct_rows_weight_bf16(m16, nc, x2, ld_x, dyt, m16, pairs, dwt);
          }
        }
        for (int64_t oc = 0; oc < Cog; ++oc)  // dw[o][c] = dwt[c][o]
          for (int64_t c = 0; c < nc; ++c) dst[oc * Cig + c] = dwt[c * m16 + oc];
      });
}

}  // namespace aclnn_cpu::conv::pointwise_bf16
