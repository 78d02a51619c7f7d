// amx_gemm: bf16 inputs on the AMX tiles (where the bf16_amx policy is on), all three primitives
// as tile GEMMs with fp32 accumulation (gemm/amx_gemm.h), the oneDNN brgemm blocking: the weights
// packed once per call, the activations a chunk of columns at a time, through a bf16 column
// matrix only where the kernel is not 1x1 (a 1x1 input is its own column matrix):
//
//   forward         y[n, g][:, chunk] (Cog x cols) = w[g] (Cog x R) * col(x[n, g])[:, chunk]
//   backward_data   dcol (nc*K x cols) = w[g][:, c-block]^T (nc*K x Cog) * dy[n, g][:, chunk]
//                   dx[n, g, c-block] += col2im(dcol)
//   backward_weight dw[g][:, c-block] (Cog x nc*K) += dy[n, g][:, chunk] * col(x[n, g, c-block])^T
//
// with R = Cig*K. Operands are packed into tile panels (A: rows of 32 bf16 k, B: VNNI pairs of k)
// by gemm/amx_gemm.cpp's packers, zero-padded to whole tiles; every product sum runs in fp32 tiles
// and is stored to the fp32 output once per chunk (the engine rounds a bf16 output once, at the
// end). TDPBF16PS reads bf16 denormals as zero and flushes denormal sums (the README's bf16 note).
// The weight gradient packs each dy chunk once for all its c-blocks (DySteps below): in steps of
// chunks packed into shared panels, then the c-block tasks, each adding its chunks' products in
// sample and column order as before, so the results do not depend on the steps.
//
// Which tiles run is gemm::amx_tiles(): the CPU's in the shipped library, the software model in
// the test library libaclnn_amx_model, so every machine runs this file's packing and edges.
#include <cstring>

#include "conv/algorithms/algo_support.h"
#include "conv/engine/algorithms.h"
#include "conv/kernels/im2col/im2col.h"
#include "gemm/amx_gemm.h"

namespace aclnn_cpu::conv {
namespace {

using gemm::amx_packed_a_elems;
using gemm::amx_packed_b_elems;
using gemm::Bf16Mat;

// Floats of scratch that hold `n` bf16, in whole 64-byte lines (tile rows stay aligned).
int64_t halves(int64_t n) {
  return round16(ceil_div(n, 2));
}
uint16_t* as_bf16(float* p) {
  return reinterpret_cast<uint16_t*>(p);
}

// Columns per chunk: the budget's, in whole tiles of 16 (the k blocks of 32 for the weight
// gradient, whose chunk is the reduction), at most the total.
int64_t tile_columns(int64_t budget_cols, int64_t total, int64_t multiple) {
  const int64_t c = std::max<int64_t>(multiple, budget_cols / multiple * multiple);
  return std::max<int64_t>(1, std::min(c, total));
}

// The conditions every primitive shares; false with the reason in `f`.
bool amx_applies(const Problem& p, Fit& f) {
  if (!p.bf16 || !p.bf16_amx || p.fp64) {
    f.reason = "bf16 inputs on the AMX tiles only (policy bf16_amx)";
    return false;
  }
  f.applies = true;
  // One channel a group: the depthwise kernels do one multiply-add per product without tiles.
  f.preferred = p.g.cin_g() > 1 || p.g.cout_g() > 1;
  f.reason = f.preferred ? "bf16 tile GEMMs on AMX (fp32 accumulation)"
                         : "depthwise: one channel a group fills no tile";
  return true;
}

Fit plan_forward(const Problem& p) {
  Fit f;
  if (!amx_applies(p, f)) return f;
  const ConvGeometry& g = p.g;
  const int64_t R = g.col_rows(), S = g.out_size();
  f.b.cols = tile_columns(chunk_columns(p, R, S, 4, pieces_wanted(p)), S, gemm::kAmxRows);
  f.b.slot_elems =
      (g.pointwise() ? 0 : halves(R * f.b.cols)) + halves(amx_packed_b_elems(R, f.b.cols));
  f.b.shared_elems = g.groups * halves(amx_packed_a_elems(g.cout_g(), R));
  return f;
}

void forward(const Problem& p, const Blocking& b, const Operands<float>& o) {
  const ConvGeometry& g = p.g;
  const int64_t Cig = g.cin_g(), Cog = g.cout_g(), R = g.col_rows();
  const int64_t S_in = g.in_size(), S_out = g.out_size(), chunks = ceil_div(S_out, b.cols);
  const int64_t wstride = 2 * halves(amx_packed_a_elems(Cog, R));  // bf16 per group
  uint16_t* wp = as_bf16(o.shared);                                // [groups][A panels]
  for_tasks(g.groups, [&](int64_t grp) {
    gemm::amx_pack_a(Cog, R, Bf16Mat{o.w16 + grp * Cog * R, R, 1}, wp + grp * wstride);
  });
  for_tasks(g.N * g.groups * chunks, [&](int64_t t) {
    const int64_t chunk = t % chunks, ng = t / chunks, grp = ng % g.groups, n = ng / g.groups;
    const int64_t j0 = chunk * b.cols, j1 = std::min(S_out, j0 + b.cols), cols = j1 - j0;
    const uint16_t* xg = o.x16 + (n * g.C_in + grp * Cig) * S_in;  // [Cig, S_in]
    uint16_t* slot = as_bf16(slot_scratch(p, b, o));
    Bf16Mat col{xg + j0, S_in, 1};  // [R, cols]: a 1x1 input as it is
    uint16_t* bp = slot;            // B panels of col
    if (!g.pointwise()) {
      im2col(g, xg, Cig, j0, j1, slot);
      col = Bf16Mat{slot, cols, 1};
      bp = slot + 2 * halves(R * b.cols);
    }
    gemm::amx_pack_b(R, cols, col, bp);
    gemm::amx_gemm_bf16(Cog, cols, R, wp + grp * wstride, bp,
                        o.out + (n * g.C_out + grp * Cog) * S_out + j0, S_out, false);
  });
}

Fit plan_data(const Problem& p) {
  Fit f;
  if (!amx_applies(p, f)) return f;
  const ConvGeometry& g = p.g;
  const int64_t K = g.k_size(), Cog = g.cout_g(), Cig = g.cin_g();
  f.b.cblock = block_size(Cig, pieces_wanted(p));
  const int64_t rows = f.b.cblock * K, blocks = ceil_div(std::max<int64_t>(Cig, 1), f.b.cblock);
  f.b.cols =
      tile_columns(chunk_columns(p, rows + Cog, g.out_size(), 4, 1), g.out_size(), gemm::kAmxRows);
  f.b.slot_elems = halves(amx_packed_b_elems(Cog, f.b.cols)) + round16(rows * f.b.cols);
  f.b.shared_elems = g.groups * blocks * halves(amx_packed_a_elems(rows, Cog));
  return f;
}

void backward_data(const Problem& p, const Blocking& b, const Operands<float>& o) {
  const ConvGeometry& g = p.g;
  const int64_t Cig = g.cin_g(), Cog = g.cout_g(), R = g.col_rows(), K = g.k_size();
  const int64_t S_in = g.in_size(), S_out = g.out_size();
  const int64_t blocks = ceil_div(std::max<int64_t>(Cig, 1), b.cblock);
  const int64_t wstride = 2 * halves(amx_packed_a_elems(b.cblock * K, Cog));  // bf16 per block
  uint16_t* wp = as_bf16(o.shared);  // [groups][blocks][A panels of w^T rows]
  // w[g]^T rows c0*K .. (c0 + nc)*K: element (r, o) = w[g][o][c0*K + r].
  for_tasks(g.groups * blocks, [&](int64_t t) {
    const int64_t grp = t / blocks, c0 = t % blocks * b.cblock, nc = std::min(Cig - c0, b.cblock);
    gemm::amx_pack_a(nc * K, Cog, Bf16Mat{o.w16 + grp * Cog * R + c0 * K, 1, R}, wp + t * wstride);
  });
  for_tasks(g.N * g.groups * blocks, [&](int64_t t) {
    const int64_t blk = t % blocks, ng = t / blocks, grp = ng % g.groups, n = ng / g.groups;
    const int64_t c0 = blk * b.cblock, nc = std::min(Cig - c0, b.cblock);
    const uint16_t* dy = o.y16 + (n * g.C_out + grp * Cog) * S_out;  // [Cog, S_out]
    float* dxg = o.out + (n * g.C_in + grp * Cig + c0) * S_in;       // [nc, S_in]
    float* slot = slot_scratch(p, b, o);
    uint16_t* bp = as_bf16(slot);                                  // B panels of the dy chunk
    float* dcol = slot + halves(amx_packed_b_elems(Cog, b.cols));  // [nc*K, cols]
    std::memset(dxg, 0, static_cast<size_t>(nc * S_in) * sizeof(float));
    for (int64_t j0 = 0; j0 < S_out; j0 += b.cols) {
      const int64_t j1 = std::min(S_out, j0 + b.cols), cols = j1 - j0;
      gemm::amx_pack_b(Cog, cols, Bf16Mat{dy + j0, S_out, 1}, bp);
      gemm::amx_gemm_bf16(nc * K, cols, Cog, wp + (grp * blocks + blk) * wstride, bp, dcol, cols,
                          false);
      col2im(g, dcol, nc, j0, j1, dxg);
    }
  });
}

// The weight gradient's dy chunks, the A panels of its products: unit u of a batch range is
// sample n0 + u / chunks, columns chunk u % chunks. Every input-channel block of a (range, group)
// multiplies the same units, so with several blocks the run goes in steps: each packs the next
// `units` units of every (range, group) once into the shared scratch, then every channel-block
// task multiplies them (a task packing its own would pack each chunk `blocks` times). With one
// block, or where one step's panels alone would pass the budget (many groups of few output
// channels), each task packs each unit itself, just before its product, into its slot (and the
// chunks are packed once a block).
struct DySteps {
  int64_t chunks = 0;    // column chunks per sample
  int64_t panel = 0;     // bf16 of one chunk's A panels (Cog x b.cols), whole 64-byte lines
  bool in_task = false;  // each task packs its units, into one panel in its slot
  int64_t units = 1;     // units per (range, group) in a step
  int64_t steps = 1;     // steps (at least one: it zeroes the outputs)
};

// Units a step packs: their panels within about 2 MiB a thread, so that a step's products
// outweigh its two joins, and within a quarter of the largest tensor's bf16 bytes, so that the
// workspace stays within twice them (tests/aclnn/test_conv_workspace.cpp: mnist2 and ct2d_decoder
// go past at a half); at least one unit (else in_task).
// ACLNN_CPU_SMALL_BLOCKS=1: one unit a step, so the sweeps' small shapes run many steps.
DySteps dy_steps(const Problem& p, const Blocking& b) {
  const ConvGeometry& g = p.g;
  DySteps d;
  d.chunks = ceil_div(g.out_size(), b.cols);
  d.panel = 2 * halves(amx_packed_a_elems(g.cout_g(), b.cols));
  const int64_t per_range = ceil_div(g.N, b.ranges) * d.chunks;  // the largest range's units
  const int64_t largest = std::max(
      {g.N * g.C_in * g.in_size(), g.N * g.C_out * g.out_size(), g.C_out * g.cin_g() * g.k_size()});
  const int64_t budget = std::min<int64_t>(p.slots * (int64_t{2} << 20), largest / 2);
  const int64_t step_bytes = 2 * d.panel * b.ranges * g.groups;  // one unit a (range, group)
  d.in_task = ceil_div(std::max<int64_t>(g.cin_g(), 1), b.cblock) == 1 || step_bytes > budget;
  if (d.in_task) {
    d.units = std::max<int64_t>(per_range, 1);
    return d;
  }
  d.units =
      std::clamp<int64_t>(block_budget(budget) / step_bytes, 1, std::max<int64_t>(per_range, 1));
  d.steps = std::max<int64_t>(1, ceil_div(per_range, d.units));
  return d;
}

Fit plan_weight(const Problem& p) {
  Fit f;
  if (!amx_applies(p, f)) return f;
  const ConvGeometry& g = p.g;
  const int64_t K = g.k_size(), Cog = g.cout_g();
  plan_weight_split(p, 4, gemm_weight_cblock(p), f.b);
  const int64_t rows = f.b.cblock * K;
  f.b.cols =
      tile_columns(chunk_columns(p, rows + Cog, g.out_size(), 4, 1), g.out_size(), gemm::kAmxK);
  f.b.slot_elems =
      (g.pointwise() ? 0 : halves(rows * f.b.cols)) + halves(amx_packed_b_elems(f.b.cols, rows));
  const DySteps d = dy_steps(p, f.b);
  if (d.in_task) {
    f.b.slot_elems += halves(d.panel);
  } else {
    f.b.shared_elems = halves(f.b.ranges * g.groups * d.units * d.panel);
  }
  return f;
}

// Packs unit u (of the range starting at sample n0) of group grp's dy into A panels `ap`.
void pack_dy_unit(const Problem& p, const Blocking& b, const Operands<float>& o, const DySteps& d,
                  int64_t n0, int64_t u, int64_t grp, uint16_t* ap) {
  const ConvGeometry& g = p.g;
  const int64_t Cog = g.cout_g(), S_out = g.out_size();
  const int64_t n = n0 + u / d.chunks, j0 = u % d.chunks * b.cols;
  const uint16_t* dy = o.y16 + (n * g.C_out + grp * Cog) * S_out;  // [Cog, S_out]
  gemm::amx_pack_a(Cog, std::min(S_out - j0, b.cols), Bf16Mat{dy + j0, S_out, 1}, ap);
}

// Units [u0, u1) of one weight-gradient task: dst (Cog x nc*K, row stride R) += the products of
// the dy chunks (A panels `ap`, unit u0's first; in_task: packed here into the slot) and the
// columns of samples n0 + u / chunks.
void weight_units(const Problem& p, const Blocking& b, const Operands<float>& o, const DySteps& d,
                  int64_t n0, int64_t u0, int64_t u1, const uint16_t* ap, int64_t grp, int64_t c0,
                  int64_t nc, float* dst) {
  const ConvGeometry& g = p.g;
  const int64_t Cig = g.cin_g(), R = g.col_rows(), K = g.k_size();
  const int64_t S_in = g.in_size(), S_out = g.out_size();
  float* slot = slot_scratch(p, b, o);
  uint16_t* col = as_bf16(slot);  // [nc*K, cols] (not for 1x1)
  if (!g.pointwise()) slot += halves(b.cblock * K * b.cols);
  uint16_t* bp = as_bf16(slot);  // B panels of col^T
  uint16_t* own =                // in_task: the A panels of the unit, after the B panels
      d.in_task ? as_bf16(slot + halves(amx_packed_b_elems(b.cols, b.cblock * K))) : nullptr;
  for (int64_t u = u0; u < u1; ++u) {
    const int64_t n = n0 + u / d.chunks, j0 = u % d.chunks * b.cols;
    const int64_t j1 = std::min(S_out, j0 + b.cols), cols = j1 - j0;
    const uint16_t* x = o.x16 + (n * g.C_in + grp * Cig + c0) * S_in;  // [nc, S_in]
    if (d.in_task) pack_dy_unit(p, b, o, d, n0, u, grp, own);
    // B (cols x nc*K) = col^T: element (j, r) = col[r][j]; a 1x1 input is col itself.
    Bf16Mat colt{x + j0, 1, S_in};
    if (!g.pointwise()) {
      im2col(g, x, nc, j0, j1, col);
      colt = Bf16Mat{col, 1, cols};
    }
    gemm::amx_pack_b(cols, nc * K, colt, bp);
    const uint16_t* a = d.in_task ? own : ap + (u - u0) * d.panel;
    gemm::amx_gemm_bf16(g.cout_g(), nc * K, cols, a, bp, dst, R, true);
  }
}

// for_weight_tasks' tasks and partials (the same dst per task, the same sums in the same order:
// per output element the chunks' tile sums added in sample and column order, then the ranges'
// partials in range order), with the dy chunks packed once (DySteps); its own loop, as
// for_weight_tasks zeroes each task's dst on every call.
void backward_weight(const Problem& p, const Blocking& b, const Operands<float>& o) {
  const ConvGeometry& g = p.g;
  const int64_t Cig = g.cin_g(), Cog = g.cout_g(), rows = g.col_rows(), K = g.k_size();
  const int64_t R = b.ranges, blocks = ceil_div(std::max<int64_t>(Cig, 1), b.cblock);
  const DySteps d = dy_steps(p, b);
  uint16_t* panels = as_bf16(o.shared);  // [R][groups][d.units] A panels (not in_task)
  auto first_sample = [&](int64_t r) { return g.N * r / R; };
  auto range_units = [&](int64_t r) { return (first_sample(r + 1) - first_sample(r)) * d.chunks; };
  for (int64_t step = 0; step < d.steps; ++step) {
    const int64_t u0 = step * d.units;
    if (!d.in_task) {
      for_tasks(R * g.groups * d.units, [&](int64_t t) {
        const int64_t u = u0 + t % d.units, rg = t / d.units, r = rg / g.groups;
        if (u < range_units(r))
          pack_dy_unit(p, b, o, d, first_sample(r), u, rg % g.groups, panels + t * d.panel);
      });
    }
    for_tasks(R * g.groups * blocks, [&](int64_t t) {
      const int64_t blk = t % blocks, rg = t / blocks, grp = rg % g.groups, r = rg / g.groups;
      const int64_t c0 = blk * b.cblock;
      const int64_t nc = std::max<int64_t>(0, std::min(Cig, c0 + b.cblock) - c0);
      float* dst =
          (r == 0 ? o.out : o.partials + (r - 1) * b.partial_elems) + grp * Cog * rows + c0 * K;
      if (step == 0)
        for (int64_t i = 0; i < Cog; ++i) std::fill(dst + i * rows, dst + i * rows + nc * K, 0.0f);
      const int64_t u1 = std::min(u0 + d.units, range_units(r));
      if (nc > 0 && u0 < u1)
        weight_units(p, b, o, d, first_sample(r), u0, u1,
                     d.in_task ? nullptr : panels + rg * d.units * d.panel, grp, c0, nc, dst);
    });
  }
  add_weight_partials(p, b, o);
}

}  // namespace

const Algorithm kAmxGemmForward{"amx_gemm",
                                Primitive::kForward,
                                plan_forward,
                                /*run_f32=*/nullptr,
                                /*run_f64=*/nullptr,
                                forward,
                                /*reads_sources=*/false,
                                /*needs=*/{},
                                /*writes_bf16=*/false,
                                Bf16Engine::kAmx};
const Algorithm kAmxGemmData{"amx_gemm",
                             Primitive::kBackwardData,
                             plan_data,
                             /*run_f32=*/nullptr,
                             /*run_f64=*/nullptr,
                             backward_data,
                             /*reads_sources=*/false,
                             /*needs=*/{},
                             /*writes_bf16=*/false,
                             Bf16Engine::kAmx};
const Algorithm kAmxGemmWeight{"amx_gemm",
                               Primitive::kBackwardWeight,
                               plan_weight,
                               /*run_f32=*/nullptr,
                               /*run_f64=*/nullptr,
                               backward_weight,
                               /*reads_sources=*/false,
                               /*needs=*/{},
                               /*writes_bf16=*/false,
                               Bf16Engine::kAmx};

}  // namespace aclnn_cpu::conv
