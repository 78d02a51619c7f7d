// grid_direct: unit-stride fp32 convolutions computed directly on the padded grid (padded_grid.h)
// by the register-tiled kernels of direct_grid.h (AVX-512): no im2col, no GEMM packing.
//
//   forward          per task (sample, group, block of grid rows): the band of input rows it reads,
//                    zero-padded, in its scratch; block [Cog, rows*Wp] = direct forward over the
//                    band with the weights packed once per call; y = the block's valid columns.
//   backward_weight  per task (batch range, group, channel block), per sample and block of grid
//                    rows: dy placed on the grid and transposed to channels-last [cols, Cog16],
//                    the band of x likewise [positions, cb16]; dwt [K, cb, Cog16] += the direct
//                    weight kernel over the block; at the end dw block = dwt transposed back.
//
// Cost rules: above ~4M multiply-adds (the scratch then pays off), and only where the grid's
// extra columns are at most 25% of the work.
#include <cstring>

#include "conv/algo_support.h"
#include "conv/algorithms.h"
#include "conv/direct_grid.h"
#include "conv/padded_grid.h"

namespace aclnn_cpu::conv {
namespace {

constexpr double kMinMacs = double(1 << 22);
constexpr double kMaxGridWaste = 0.25;
constexpr int64_t kWindowBytes = int64_t{24} << 10;  // forward: band window per channel chunk
constexpr int64_t kWeightCols = 128;                 // weight gradient: positions per kernel call

int64_t round16(int64_t v) {
  return ceil_div(v, 16) * 16;
}

Fit common(const Problem& p) {
  Fit f;
  const ConvGeometry& g = p.g;
  if (p.fp64 || !p.avx512) {
    f.reason = "needs fp32 and AVX-512";
  } else if (!unit_stride(g)) {
    f.reason = "needs unit stride";
  } else if (g.out_size() <= 0 || g.cout_g() <= 0 || g.cin_g() <= 0) {
    f.reason = "empty";
  } else {
    f.applies = true;
    const double waste = grid_waste(g, padded_grid(g));
    f.preferred = p.macs() >= kMinMacs && waste <= kMaxGridWaste;
    f.reason = p.macs() < kMinMacs ? "below 4M multiply-adds"
               : f.preferred ? "unit stride, grid waste " + std::to_string(int(waste * 100)) + "%"
                             : "grid waste " + std::to_string(int(waste * 100)) + "% > 25%";
  }
  return f;
}

// Tap offsets on the grid: off[t] = (kd*dil0*Hp + kh*dil1)*Wp + kw*dil2, tap order (kd, kh, kw).
void tap_offsets(const ConvGeometry& g, const PaddedGrid& pg, int64_t* off) {
  int64_t t = 0;
  for (int64_t kd = 0; kd < g.k[0]; ++kd)
    for (int64_t kh = 0; kh < g.k[1]; ++kh)
      for (int64_t kw = 0; kw < g.k[2]; ++kw)
        off[t++] = (kd * g.dil[0] * pg.Hp + kh * g.dil[1]) * pg.Wp + kw * g.dil[2];
}

// Shared scratch: the tap offsets (as int64, 2 floats each), then the packed weights.
int64_t offsets_elems(const ConvGeometry& g) {
  return round16(2 * g.k_size());
}

Fit plan_forward(const Problem& p) {
  Fit f = common(p);
  if (!f.applies) return f;
  const ConvGeometry& g = p.g;
  f.b.rows = grid_rows_per_task(g, g.cout_g(), pieces_wanted(p));
  f.b.slot_elems =
      round16(g.cout_g() * f.b.rows * padded_grid(g).Wp) + grid_scratch(g, 0, g.cin_g(), f.b.rows);
  f.b.shared_elems =
      offsets_elems(g) + g.groups * direct_packed_w_elems(g.cout_g(), g.cin_g(), g.k_size());
  // Channels per chunk: the band window of a 48-column tile (every tap row it touches, each
  // 48 + the kernel's W reach + a vector of slack) within kWindowBytes.
  const int64_t window = g.k[0] * g.k[1] * (48 + g.dil[2] * (g.k[2] - 1) + 16) * 4;
  f.b.cblock = std::clamp<int64_t>(kWindowBytes / std::max<int64_t>(window, 1), 4, g.cin_g());
  return f;
}

void forward(const Problem& p, const Blocking& b, const Operands<float>& o) {
  const ConvGeometry& g = p.g;
  const int64_t Cig = g.cin_g(), Cog = g.cout_g(), K = g.k_size();
  const int64_t S_in = g.in_size(), S_out = g.out_size();
  const PaddedGrid pg = padded_grid(g);
  int64_t* off = reinterpret_cast<int64_t*>(o.shared);
  float* wpk = o.shared + offsets_elems(g);
  const int64_t wpk_g = direct_packed_w_elems(Cog, Cig, K);
  tap_offsets(g, pg, off);
  for_tasks(g.groups, [&](int64_t grp) {
    direct_pack_weights(Cog, Cig, K, o.w + grp * Cog * Cig * K, Cig * K, wpk + grp * wpk_g);
  });
  const int64_t blocks = ceil_div(pg.rows, b.rows);
  for_tasks(g.N * g.groups * blocks, [&](int64_t t) {
    const int64_t blk = t % blocks, ng = t / blocks, grp = ng % g.groups, n = ng / g.groups;
    const int64_t r0 = blk * b.rows, r1 = std::min(pg.rows, r0 + b.rows);
    const int64_t cols = (r1 - r0) * pg.Wp;
    float* block = slot_scratch(p, b, o);                 // [Cog, cols]
    float* band = block + round16(Cog * b.rows * pg.Wp);  // then the band of x [Cig, rows, Wp]
    const PaddedGrid bp =
        pad_band(g, pg, o.x + (n * g.C_in + grp * Cig) * S_in, Cig, r0, r1 - r0, band);
    direct_grid_forward_avx512(Cog, cols, Cig, K, off, band, bp.plane, wpk + grp * wpk_g, block,
                               cols, b.cblock);
    grid_to_output(g, pg, block, Cog, r0, r1, o.out + (n * g.C_out + grp * Cog) * S_out);
  });
}

// Weight-gradient scratch of one slot, in floats: dy block on the grid and channels-last, the band
// of x and its channels-last copy, and the task's dwt.
struct WeightScratch {
  int64_t dy_grid, dy_t, band, band_t, dwt;
  int64_t total() const { return dy_grid + dy_t + band + band_t + dwt; }
};

WeightScratch weight_scratch(const ConvGeometry& g, int64_t cb, int64_t rows) {
  const PaddedGrid pg = padded_grid(g);
  const int64_t cols = rows * pg.Wp, positions = band_rows(g, pg, rows) * pg.Wp;
  const int64_t m16 = round16(g.cout_g());
  return WeightScratch{round16(g.cout_g() * cols), round16(cols * m16), round16(cb * positions),
                       round16(positions * round16(cb)), round16(g.k_size() * cb * m16)};
}

Fit plan_weight(const Problem& p) {
  Fit f = common(p);
  if (!f.applies) return f;
  const ConvGeometry& g = p.g;
  plan_weight_split(p, 4, block_size(g.cin_g(), ceil_div(2 * p.slots, g.groups)), f.b);
  f.b.rows = grid_rows_per_task(g, round16(g.cout_g()), 1);
  f.b.slot_elems = weight_scratch(g, f.b.cblock, f.b.rows).total();
  f.b.shared_elems = offsets_elems(g);
  return f;
}

void backward_weight(const Problem& p, const Blocking& b, const Operands<float>& o) {
  const ConvGeometry& g = p.g;
  const int64_t Cig = g.cin_g(), Cog = g.cout_g(), rows = g.col_rows(), K = g.k_size();
  const int64_t S_in = g.in_size(), S_out = g.out_size(), m16 = round16(Cog);
  const PaddedGrid pg = padded_grid(g);
  int64_t* off = reinterpret_cast<int64_t*>(o.shared);
  tap_offsets(g, pg, off);
  for_weight_tasks(
      p, b, o, [&](int64_t n0, int64_t n1, int64_t grp, int64_t c0, int64_t nc, float* dst) {
        const WeightScratch ws = weight_scratch(g, b.cblock, b.rows);
        float* dy_grid = slot_scratch(p, b, o);  // [Cog, cols]
        float* dy_t = dy_grid + ws.dy_grid;      // [cols, m16]
        float* band = dy_t + ws.dy_t;            // [nc, positions]
        float* band_t = band + ws.band;          // [positions, nc16]
        float* dwt = band_t + ws.band_t;         // [K, nc, m16]
        const int64_t nc16 = round16(nc);
        std::memset(dwt, 0, static_cast<size_t>(K * nc * m16) * sizeof(float));
        for (int64_t n = n0; n < n1; ++n) {
          for (int64_t r0 = 0; r0 < pg.rows; r0 += b.rows) {
            const int64_t r1 = std::min(pg.rows, r0 + b.rows), cols = (r1 - r0) * pg.Wp;
            output_to_grid(g, pg, o.y + (n * g.C_out + grp * Cog) * S_out, Cog, r0, r1, dy_grid);
            direct_transpose_avx512(dy_grid, cols, Cog, cols, dy_t, m16);
            const PaddedGrid bp =
                pad_band(g, pg, o.x + (n * g.C_in + grp * Cig + c0) * S_in, nc, r0, r1 - r0, band);
            direct_transpose_avx512(band, bp.plane, nc, bp.plane, band_t, nc16);
            for (int64_t j0 = 0; j0 < cols; j0 += kWeightCols)
              direct_grid_weight_avx512(m16, nc, K, off, band_t + j0 * nc16, nc16, dy_t + j0 * m16,
                                        m16, std::min(kWeightCols, cols - j0), dwt);
          }
        }
        for (int64_t oc = 0; oc < Cog; ++oc)  // dw[o][c*K + t] = dwt[t][c][o]
          for (int64_t c = 0; c < nc; ++c)
            for (int64_t t = 0; t < K; ++t)
              dst[oc * rows + c * K + t] = dwt[(t * nc + c) * m16 + oc];
      });
}

}  // namespace

const Algorithm kGridDirectForward{"grid_direct", Primitive::kForward, plan_forward, forward,
                                   nullptr};
const Algorithm kGridDirectWeight{"grid_direct", Primitive::kBackwardWeight, plan_weight,
                                  backward_weight, nullptr};

}  // namespace aclnn_cpu::conv
