// grid_direct: fp32 convolutions computed directly on a tap grid (tap_grid.h: any stride through
// phase planes, dilation, padding, 1d/2d/3d) by the register-tiled kernels of direct_grid.h
// (AVX-512): no im2col, no GEMM packing.
//
//   forward          task (sample, group, block of grid rows): the band of x it reads (all phase
//                    planes, zero-padded) in its scratch; block [Cog, rows*Wp] = the direct
//                    forward over the band with the weights packed once per call; y = its valid
//                    columns.
//   backward_data    the same per phase b of dx (tap_grid.h): source dy, the taps that reach the
//                    phase, the weights as w^T; results placed at dx[s*u + b]. Unit stride: one
//                    phase, all taps (the flipped forward, no col2im scatter).
//   backward_weight  task (batch range, group, channel block), per sample and block of grid rows:
//                    dy placed on the grid and transposed to channels-last [cols, Cog16], the
//                    band's phase planes likewise [phase][positions, cb16]; dwt [T, cb, Cog16] +=
//                    the direct weight kernel; at the end dw block = dwt transposed back.
//
// Cost rules: above ~4M multiply-adds (the scratch then pays off), at most 25% of the grid's
// columns dropped, at most 64 phase planes.
#include <cstring>

#include "conv/algo_support.h"
#include "conv/algorithms.h"
#include "conv/direct_grid.h"
#include "conv/tap_grid.h"

namespace aclnn_cpu::conv {
namespace {

constexpr double kMinMacs = double(1 << 22);
constexpr double kMaxGridWaste = 0.25;
constexpr int64_t kBlockBytes = int64_t{512} << 10;  // a task's output block, about half of L2
constexpr int64_t kWindowBytes = int64_t{24} << 10;  // forward: band window per channel chunk
constexpr int64_t kWeightCols = 128;                 // weight gradient: positions per kernel call
constexpr int64_t kWeightChannels = 96;  // weight gradient: most input channels per task

int64_t round16(int64_t v) {
  return ceil_div(v, 16) * 16;
}

// Grid rows per task for an m-channel output block, with about `want` tasks per grid.
int64_t rows_per_task(const TapGrid& tg, int64_t m, int64_t want) {
  const int64_t by_budget =
      std::max<int64_t>(1, kBlockBytes / (std::max<int64_t>(m, 1) * tg.Wp() * 4));
  return std::clamp<int64_t>(std::min(by_budget, ceil_div(tg.rows(), std::max<int64_t>(want, 1))),
                             1, std::max<int64_t>(tg.rows(), 1));
}

// Phase stride of a band of `rows` grid rows (a multiple of 16 floats).
int64_t band_plane(const TapGrid& tg, int64_t rows) {
  return round16(tg.band_rows(rows) * tg.Wp());
}

// Channels per chunk: the band window of a 48-column tile (every tap row it touches, each 48 + the
// kernel's W reach + a vector of slack) within kWindowBytes.
int64_t channel_chunk(const TapGrid& tg, const ConvGeometry& g, int64_t channels) {
  const int64_t rows = ceil_div(tg.taps, std::max<int64_t>(g.k[2], 1));
  const int64_t window = rows * (48 + (tg.ext[2] - tg.out[2]) + 16) * 4;
  return std::clamp<int64_t>(kWindowBytes / std::max<int64_t>(window, 1), 4,
                             std::max<int64_t>(channels, 4));
}

Fit applies(const Problem& p, double waste) {
  Fit f;
  const ConvGeometry& g = p.g;
  if (p.fp64 || !p.avx512) {
    f.reason = "needs fp32 and AVX-512";
  } else if (g.out_size() <= 0 || g.cout_g() <= 0 || g.cin_g() <= 0 || g.N <= 0) {
    f.reason = "empty";
  } else if (forward_phases(g) > kMaxPhases || data_phase_count(g) > kMaxPhases) {
    f.reason = "more than 64 stride phases";
  } else {
    f.applies = true;
    f.preferred = p.macs() >= kMinMacs && waste <= kMaxGridWaste;
    f.reason = p.macs() < kMinMacs ? "below 4M multiply-adds"
               : f.preferred       ? "grid waste " + std::to_string(int(waste * 100)) + "%"
                                   : "grid waste " + std::to_string(int(waste * 100)) + "% > 25%";
  }
  return f;
}

// Shared scratch of a pass: the taps (3 int64 each), their band offsets and weight taps (int64
// each), then the packed weights.
int64_t taps_elems(int64_t taps) {
  return round16(10 * taps);
}

// The taps of `tg` and their offsets into a band of phase stride `plane`, written to `at`.
const GridTap* load_taps(const ConvGeometry& g, const TapGrid& tg, int64_t plane, float* at,
                         const int64_t** off) {
  GridTap* taps = reinterpret_cast<GridTap*>(at);
  int64_t* offs = reinterpret_cast<int64_t*>(taps + tg.taps);
  grid_taps(g, tg, taps);
  for (int64_t t = 0; t < tg.taps; ++t) offs[t] = taps[t].phase * plane + taps[t].shift;
  *off = offs;
  return taps;
}

// A forward-form pass (forward, or one phase of the data gradient) over one tap grid: m output
// channels from C source channels per group; weights W(o, c, q) = w[o * so + c * si + q] (group
// grp at w + grp * wg). Tasks (sample, group, row block); `slot` and `shared` scratch as planned.
struct Pass {
  const ConvGeometry& g;
  const TapGrid& tg;
  int64_t m, C, rows, cchunk;
  const float* src;  // sample 0, group 0 source channel 0
  int64_t src_sample, src_group, src_cstride;
  float* dst;
  int64_t dst_sample, dst_group, dst_cstride;
  const float* w;
  int64_t wg, so, si;
};

int64_t pass_slot_elems(const TapGrid& tg, int64_t m, int64_t C, int64_t rows) {
  return round16(m * rows * tg.Wp()) + C * tg.phases() * band_plane(tg, rows);
}
int64_t pass_shared_elems(const TapGrid& tg, int64_t m, int64_t C, int64_t groups) {
  return taps_elems(tg.taps) + groups * direct_packed_w_elems(m, C, tg.taps);
}

template <typename SlotFn>
void run_pass(const Pass& ps, float* shared, SlotFn slot_of) {
  const ConvGeometry& g = ps.g;
  const TapGrid& tg = ps.tg;
  const int64_t plane = band_plane(tg, ps.rows), T = tg.taps;
  const int64_t* off = nullptr;
  const GridTap* taps = load_taps(g, tg, plane, shared, &off);
  float* packed = shared + taps_elems(T);
  const int64_t pk_g = direct_packed_w_elems(ps.m, ps.C, T);
  // The packing reads the weight tap of every tap: q of tap t, contiguous for the packer.
  int64_t* q = const_cast<int64_t*>(off) + T;  // after the offsets (within taps_elems)
  for (int64_t t = 0; t < T; ++t) q[t] = taps[t].q;
  for_tasks(g.groups, [&](int64_t grp) {
    direct_pack_weights(ps.m, ps.C, T, q, ps.w + grp * ps.wg, ps.so, ps.si, packed + grp * pk_g);
  });
  const int64_t blocks = ceil_div(tg.rows(), ps.rows);
  for_tasks(g.N * g.groups * blocks, [&](int64_t t) {
    const int64_t blk = t % blocks, ng = t / blocks, grp = ng % g.groups, n = ng / g.groups;
    const int64_t r0 = blk * ps.rows, r1 = std::min(tg.rows(), r0 + ps.rows);
    const int64_t cols = (r1 - r0) * tg.Wp();
    float* block = slot_of();                                 // [m, cols]
    float* band = block + round16(ps.m * ps.rows * tg.Wp());  // [C][phase][plane]
    build_band(tg, ps.src + n * ps.src_sample + grp * ps.src_group, ps.src_cstride, ps.C, r0,
               r1 - r0, plane, band);
    direct_grid_forward_avx512(ps.m, cols, ps.C, T, off, band, tg.phases() * plane,
                               packed + grp * pk_g, block, cols, ps.cchunk);
    scatter_block(tg, block, cols, ps.m, r0, r1, ps.dst + n * ps.dst_sample + grp * ps.dst_group,
                  ps.dst_cstride);
  });
}

Fit plan_forward(const Problem& p) {
  const ConvGeometry& g = p.g;
  const TapGrid tg = forward_grid(g);
  Fit f = applies(p, tg.waste());
  if (!f.applies) return f;
  f.b.rows = rows_per_task(tg, g.cout_g(), pieces_wanted(p));
  f.b.slot_elems = pass_slot_elems(tg, g.cout_g(), g.cin_g(), f.b.rows);
  f.b.shared_elems = pass_shared_elems(tg, g.cout_g(), g.cin_g(), g.groups);
  f.b.cblock = channel_chunk(tg, g, g.cin_g());
  return f;
}

void forward(const Problem& p, const Blocking& b, const Operands<float>& o) {
  const ConvGeometry& g = p.g;
  const TapGrid tg = forward_grid(g);
  const int64_t Cig = g.cin_g(), Cog = g.cout_g(), K = g.k_size();
  const Pass ps{g,
                tg,
                Cog,
                Cig,
                b.rows,
                b.cblock,
                o.x,
                g.C_in * g.in_size(),
                Cig * g.in_size(),
                g.in_size(),
                o.out,
                g.C_out * g.out_size(),
                Cog * g.out_size(),
                g.out_size(),
                o.w,
                Cog * Cig * K,
                Cig * K,
                K};
  run_pass(ps, o.shared, [&] { return slot_scratch(p, b, o); });
}

// backward_data: the phases of dx, each a pass with its own tap grid; the shared scratch holds
// every phase's taps and packed weights one after another, the slot fits the largest pass.
Fit plan_data(const Problem& p) {
  const ConvGeometry& g = p.g;
  double waste = 0;
  for (int64_t i = 0; i < data_phase_count(g) && data_phase_count(g) <= kMaxPhases; ++i) {
    const TapGrid tg = data_grid(g, data_phase(g, i));
    if (!tg.empty()) waste = std::max(waste, tg.waste());
  }
  Fit f = applies(p, waste);
  if (!f.applies) return f;
  const int64_t want = ceil_div(pieces_wanted(p), data_phase_count(g));
  const TapGrid first = data_grid(g, {0, 0, 0});  // the largest phase
  f.b.rows = rows_per_task(first, g.cin_g(), want);
  for (int64_t i = 0; i < data_phase_count(g); ++i) {
    const TapGrid tg = data_grid(g, data_phase(g, i));
    if (tg.empty()) continue;
    f.b.slot_elems = std::max(f.b.slot_elems, pass_slot_elems(tg, g.cin_g(), g.cout_g(), f.b.rows));
    f.b.shared_elems += pass_shared_elems(tg, g.cin_g(), g.cout_g(), g.groups);
  }
  f.b.cblock = channel_chunk(first, g, g.cout_g());
  return f;
}

void backward_data(const Problem& p, const Blocking& b, const Operands<float>& o) {
  const ConvGeometry& g = p.g;
  const int64_t Cig = g.cin_g(), Cog = g.cout_g(), K = g.k_size();
  float* shared = o.shared;
  for (int64_t i = 0; i < data_phase_count(g); ++i) {
    const TapGrid tg = data_grid(g, data_phase(g, i));
    float* dx = o.out;
    if (tg.empty()) {  // no tap reaches this phase of dx
      for_tasks(g.N, [&](int64_t n) {
        zero_outputs(tg, g.C_in, dx + n * g.C_in * g.in_size(), g.in_size());
      });
      continue;
    }
    // dx[c] (phase) = sum_{o, t} w[o][c][q_t] * dy[o][shifted]: W(c, o, q) = w[o*Cig*K + c*K + q].
    const Pass ps{g,
                  tg,
                  Cig,
                  Cog,
                  b.rows,
                  b.cblock,
                  o.y,
                  g.C_out * g.out_size(),
                  Cog * g.out_size(),
                  g.out_size(),
                  dx,
                  g.C_in * g.in_size(),
                  Cig * g.in_size(),
                  g.in_size(),
                  o.w,
                  Cog * Cig * K,
                  K,
                  Cig * K};
    run_pass(ps, shared, [&] { return slot_scratch(p, b, o); });
    shared += pass_shared_elems(tg, Cig, Cog, g.groups);
  }
}

// backward_weight scratch of one slot, in floats: dy of a block in channels-last form, the band's
// phase planes likewise, one band row of 16 channels (staging for the transposes), and dwt.
struct WeightScratch {
  int64_t dy_t, band_t, row, dwt;
  int64_t total() const { return dy_t + band_t + row + dwt; }
};

WeightScratch weight_scratch(const ConvGeometry& g, const TapGrid& tg, int64_t cb, int64_t rows) {
  const int64_t plane = band_plane(tg, rows), m16 = round16(g.cout_g());
  return WeightScratch{round16(rows * tg.Wp() * m16), tg.phases() * plane * round16(cb),
                       round16(16 * tg.phases() * tg.Wp()), round16(tg.taps * cb * m16)};
}

Fit plan_weight(const Problem& p) {
  const ConvGeometry& g = p.g;
  const TapGrid tg = forward_grid(g);
  Fit f = applies(p, tg.waste());
  if (!f.applies) return f;
  // Whole groups' channels per task where they fit a few tiles (the kernel's tiles are 12 wide,
  // narrower ones waste loads); threads then split the batch.
  plan_weight_split(p, 4, std::min<int64_t>(g.cin_g(), kWeightChannels), f.b);
  f.b.rows = rows_per_task(tg, round16(g.cout_g()), 1);
  f.b.slot_elems = weight_scratch(g, tg, f.b.cblock, f.b.rows).total();
  f.b.shared_elems = taps_elems(tg.taps);
  return f;
}

// dy_t[(r - r0) * Wp + col][o] = dy[o] at the output position of grid column (r, col), zero in
// the grid's extra columns and past Cog.
void dy_channels_last(const TapGrid& tg, const float* dy, int64_t S_out, int64_t Cog, int64_t r0,
                      int64_t r1, int64_t m16, float* dy_t) {
  const int64_t Wp = tg.Wp(), n = tg.out[2];
  for (int64_t r = r0; r < r1; ++r) {
    float* dst = dy_t + (r - r0) * Wp * m16;
    const int64_t o0 = r / tg.Hp(), o1 = r % tg.Hp();
    const int64_t valid = o1 < tg.out[1] ? n : 0;  // rows between 3d planes are all padding
    if (valid > 0)
      direct_transpose_avx512(dy + (o0 * tg.out[1] + o1) * n, S_out, Cog, n, dst, m16, m16);
    std::memset(dst + valid * m16, 0, static_cast<size_t>((Wp - valid) * m16) * sizeof(float));
  }
}

// band_t[phase][i * Wp + col][c] for the band rows of grid rows [r0, r1): channels-last copies of
// the band's phase planes, built 16 channels of one row at a time through `row`.
void band_channels_last(const TapGrid& tg, const float* x, int64_t S_in, int64_t nc, int64_t r0,
                        int64_t r1, int64_t plane, int64_t cb16, float* row, float* band_t) {
  const int64_t Wp = tg.Wp(), P = tg.phases();
  for (int64_t i = 0; i < tg.band_rows(r1 - r0); ++i)
    for (int64_t c = 0; c < nc; c += 16) {
      const int64_t cnt = std::min<int64_t>(16, nc - c);
      build_band_row(tg, x + c * S_in, S_in, cnt, r0 + i, row, P * Wp, Wp);
      for (int64_t ph = 0; ph < P; ++ph)
        direct_transpose_avx512(row + ph * Wp, P * Wp, cnt, Wp,
                                band_t + (ph * plane + i * Wp) * cb16 + c, cb16, 16);
    }
}

void backward_weight(const Problem& p, const Blocking& b, const Operands<float>& o) {
  const ConvGeometry& g = p.g;
  const TapGrid tg = forward_grid(g);
  const int64_t Cig = g.cin_g(), Cog = g.cout_g(), rows = g.col_rows(), T = tg.taps;
  const int64_t S_in = g.in_size(), S_out = g.out_size(), m16 = round16(Cog);
  const int64_t plane = band_plane(tg, b.rows), cb16 = round16(b.cblock);
  // Tap offsets into the channels-last band [phase][position][cb16], in elements.
  const int64_t* off = nullptr;
  const GridTap* taps = load_taps(g, tg, plane, o.shared, &off);
  int64_t* eoff = const_cast<int64_t*>(off);
  for (int64_t t = 0; t < T; ++t) eoff[t] = (taps[t].phase * plane + taps[t].shift) * cb16;
  for_weight_tasks(
      p, b, o, [&](int64_t n0, int64_t n1, int64_t grp, int64_t c0, int64_t nc, float* dst) {
        const WeightScratch ws = weight_scratch(g, tg, b.cblock, b.rows);
        float* dy_t = slot_scratch(p, b, o);  // [cols, m16]
        float* band_t = dy_t + ws.dy_t;       // [phase][plane][cb16]
        float* row = band_t + ws.band_t;      // [16][phase][Wp]
        float* dwt = row + ws.row;            // [T, nc, m16]
        std::memset(dwt, 0, static_cast<size_t>(T * nc * m16) * sizeof(float));
        for (int64_t n = n0; n < n1; ++n) {
          for (int64_t r0 = 0; r0 < tg.rows(); r0 += b.rows) {
            const int64_t r1 = std::min(tg.rows(), r0 + b.rows), cols = (r1 - r0) * tg.Wp();
            dy_channels_last(tg, o.y + (n * g.C_out + grp * Cog) * S_out, S_out, Cog, r0, r1, m16,
                             dy_t);
            band_channels_last(tg, o.x + (n * g.C_in + grp * Cig + c0) * S_in, S_in, nc, r0, r1,
                               plane, cb16, row, band_t);
            for (int64_t j0 = 0; j0 < cols; j0 += kWeightCols)
              direct_grid_weight_avx512(m16, nc, T, off, band_t + j0 * cb16, cb16, dy_t + j0 * m16,
                                        m16, std::min(kWeightCols, cols - j0), dwt);
          }
        }
        for (int64_t oc = 0; oc < Cog; ++oc)  // dw[o][c*K + q_t] = dwt[t][c][o]
          for (int64_t c = 0; c < nc; ++c)
            for (int64_t t = 0; t < T; ++t)
              dst[oc * rows + c * g.k_size() + taps[t].q] = dwt[(t * nc + c) * m16 + oc];
      });
}

}  // namespace

const Algorithm kGridDirectForward{"grid_direct", Primitive::kForward, plan_forward, forward,
                                   nullptr};
const Algorithm kGridDirectData{"grid_direct", Primitive::kBackwardData, plan_data, backward_data,
                                nullptr};
const Algorithm kGridDirectWeight{"grid_direct", Primitive::kBackwardWeight, plan_weight,
                                  backward_weight, nullptr};

}  // namespace aclnn_cpu::conv
