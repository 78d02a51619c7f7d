// What the fp32 and bf16 runs of grid_direct (algo_grid_direct*.cpp) share: the blocking rules
// and the scratch layouts they plan with.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "conv/algorithms/algo_support.h"
#include "conv/engine/algorithm.h"
#include "conv/kernels/grid/direct_grid.h"
#include "conv/kernels/grid/tap_grid.h"

namespace aclnn_cpu::conv::grid_direct {

constexpr double kMinMacs = double(1 << 22);
constexpr int64_t kMinReduction = 32;  // forward: input channels per group x taps
constexpr double kMaxGridWaste = 0.25;
constexpr int64_t kBlockBytes = int64_t{512} << 10;  // a task's output block, about half of L2
constexpr int64_t kWindowBytes = int64_t{24} << 10;  // forward: band window per channel chunk
constexpr int64_t kWeightCols = 128;                 // weight gradient: positions per kernel call
// ... when it reads x in place (AVX-512): no band lines to keep in L1, so longer calls amortise the
// accumulators' loads and stores; the band path (AVX2) did not gain (measured: bench/RESULTS.md,
// design grid_direct_plan.cols-in-place).
constexpr int64_t kWeightColsInPlace = 256;
// ... in bf16 (pairs of positions, the band channels-last): the accumulators' loads and stores from
// L2 amortised over twice the positions. Only where the register tiles are whole: mnist1's
// one-channel tiles lost (measured: bench/RESULTS.md, design grid_direct_plan.cols-bf16).
constexpr int64_t kWeightColsBf16 = 256;
constexpr int64_t kWeightChannels = 96;  // weight gradient: most input channels per task

// Grid rows per task for an m-channel output block, with about `want` tasks per grid.
inline int64_t rows_per_task(const TapGrid& tg, int64_t m, int64_t want) {
  const int64_t by_budget =
      std::max<int64_t>(1, block_budget(kBlockBytes) / (std::max<int64_t>(m, 1) * tg.Wp() * 4));
  return std::clamp<int64_t>(std::min(by_budget, ceil_div(tg.rows(), std::max<int64_t>(want, 1))),
                             1, std::max<int64_t>(tg.rows(), 1));
}

// Phase stride of a band of `rows` grid rows (a multiple of 16 floats).
inline int64_t band_plane(const TapGrid& tg, int64_t rows) {
  return round16(tg.band_rows(rows) * tg.Wp());
}

// Channels per chunk: the band window of a 48-column tile (every tap row it touches, each 48 + the
// kernel's W reach + a vector of slack) within kWindowBytes.
inline int64_t channel_chunk(const TapGrid& tg, const ConvGeometry& g, int64_t channels) {
  const int64_t rows = ceil_div(tg.taps, std::max<int64_t>(g.k[2], 1));
  const int64_t window = rows * (48 + (tg.ext[2] - tg.out[2]) + 16) * 4;
  return std::clamp<int64_t>(kWindowBytes / std::max<int64_t>(window, 1), 4,
                             std::max<int64_t>(channels, 4));
}

inline Fit applies(const Problem& p, double waste) {
  Fit f;
  const ConvGeometry& g = p.g;
  if (p.fp64 || !p.packed_gemm()) {
    f.reason = "needs fp32 and AVX2 or AVX-512";
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

// A cost rule on top of applies(): `reluctant` names why the direct form loses to the GEMM
// lowerings here (measured), and drops the preference.
inline void prefer_not(Fit& f, bool reluctant, const char* why) {
  if (f.applies && f.preferred && reluctant) f.preferred = false, f.reason = why;
}

// Shared scratch of a pass: the taps (3 int64 each), their band offsets and weight taps (int64
// each), then the packed weights.
inline int64_t taps_elems(int64_t taps) {
  return round16(10 * taps);
}

// Shared scratch of the weight gradient's tap boxes (TapBox: 6 int64 each), after the taps.
inline int64_t boxes_elems(int64_t taps) {
  return round16(12 * taps);
}

// Shared scratch of the weight gradient: the taps, their boxes and source offsets (fp32 x in
// place); gradBias's per-range sums follow where the pass makes them (bias_sums_elems).
inline int64_t weight_shared_elems(int64_t taps) {
  return taps_elems(taps) + boxes_elems(taps) + round16(2 * taps);
}

// The taps of `tg` and their offsets into a band of phase stride `plane`, written to `at`.
inline const GridTap* load_taps(const ConvGeometry& g, const TapGrid& tg, int64_t plane, float* at,
                                const int64_t** off) {
  GridTap* taps = reinterpret_cast<GridTap*>(at);
  int64_t* offs = reinterpret_cast<int64_t*>(taps + tg.taps);
  grid_taps(g, tg, taps);
  for (int64_t t = 0; t < tg.taps; ++t) offs[t] = taps[t].phase * plane + taps[t].shift;
  *off = offs;
  return taps;
}

// A forward-form pass (forward, or one phase of the data gradient) over one tap grid: m output
// channels from C source channels per group (Src: float, or uint16_t bf16 bits); weights
// W(o, c, q) = w[o * so + c * si + q] (group grp at w + grp * wg). Tasks (sample, group, row
// block) of `rows` grid rows; source channels in chunks of `cchunk`.
// Src is an input as the pass reads it: a Source (converted to fp32 in the bands), or bf16 bits
// (const uint16_t*, for the bf16 dot kernels); advance() moves either by elements.
template <typename Src>
struct Pass {
  const ConvGeometry& g;
  const TapGrid& tg;
  int64_t m, C, rows, cchunk;
  Src src;  // sample 0, group 0 source channel 0
  int64_t src_sample, src_group, src_cstride;
  float* dst;
  int64_t dst_sample, dst_group, dst_cstride;
  Src w;
  int64_t wg, so, si;
};

inline Source advance(const Source& s, int64_t elems) {
  return s.at(elems);
}
inline const uint16_t* advance(const uint16_t* s, int64_t elems) {
  return s + elems;
}

// Per-slot scratch of a pass: its [m, rows*Wp] block, the band (fp32: C channels; bf16: C/2 pairs
// of 32 bits), and one band row of two channels (bf16 staging).
inline int64_t pass_slot_elems(const TapGrid& tg, int64_t m, int64_t C, int64_t rows) {
  return round16(m * rows * tg.Wp()) + C * tg.phases() * band_plane(tg, rows) +
         round16(tg.phases() * tg.Wp());
}
// Shared scratch of a pass: its taps, then the packed weights of every group.
inline int64_t pass_shared_elems(const TapGrid& tg, int64_t m, int64_t C, int64_t groups) {
  return taps_elems(tg.taps) + groups * direct_packed_w_elems(m, C, tg.taps);
}

// A pass of m output channels from C source channels a group: src [N, groups * C, src_plane],
// dst [N, groups * m, dst_plane], w with m * C * K elements a group, `so` apart between output
// channels and `si` between source channels.
template <typename Src>
Pass<Src> grouped_pass(const Problem& p, const Blocking& b, const TapGrid& tg, int64_t m, int64_t C,
                       Src src, int64_t src_plane, float* dst, int64_t dst_plane, Src w, int64_t so,
                       int64_t si) {
  const int64_t G = p.g.groups, K = p.g.k_size();
  return Pass<Src>{.g = p.g,
                   .tg = tg,
                   .m = m,
                   .C = C,
                   .rows = b.rows,
                   .cchunk = b.cblock,
                   .src = src,
                   .src_sample = G * C * src_plane,
                   .src_group = C * src_plane,
                   .src_cstride = src_plane,
                   .dst = dst,
                   .dst_sample = G * m * dst_plane,
                   .dst_group = m * dst_plane,
                   .dst_cstride = dst_plane,
                   .w = w,
                   .wg = m * C * K,
                   .so = so,
                   .si = si};
}

// The forward's pass: y [N, C_out, S_out] from x [N, C_in, S_in] and w [C_out, Cig, K].
template <typename Src>
Pass<Src> forward_pass(const Problem& p, const Blocking& b, const TapGrid& tg, Src x, Src w,
                       float* y) {
  const ConvGeometry& g = p.g;
  const int64_t Cig = g.cin_g(), K = g.k_size();
  return grouped_pass(p, b, tg, g.cout_g(), Cig, x, g.in_size(), y, g.out_size(), w, Cig * K, K);
}

// The data gradient's pass over the phase grid tg of dx (tap_grid.h):
// dx[c] (phase) = sum_{o, t} w[o][c][q_t] * dy[o][shifted]: W(c, o, q) = w[o*Cig*K + c*K + q].
template <typename Src>
Pass<Src> data_pass(const Problem& p, const Blocking& b, const TapGrid& tg, Src dy, Src w,
                    float* dx) {
  const ConvGeometry& g = p.g;
  const int64_t Cig = g.cin_g(), K = g.k_size();
  return grouped_pass(p, b, tg, Cig, g.cout_g(), dy, g.out_size(), dx, g.in_size(), w, K, Cig * K);
}

// Zeroes the dx positions of a phase no tap reaches (dx fp32, or bf16 bits stored by the bf16
// passes).
template <typename T>
void zero_phase(const ConvGeometry& g, const TapGrid& tg, T* dx) {
  for_tasks(g.N, [&](int64_t n) {
    zero_outputs(tg, g.C_in, dx + n * g.C_in * g.in_size(), g.in_size());
  });
}

// The data gradient's passes, one per phase of dx: run(pass, shared) with the shared scratch of
// each phase after the previous one's; phases no tap reaches are zeroed.
template <typename Src, typename Run>
void for_data_passes(const Problem& p, const Blocking& b, Src dy, Src w, float* dx, float* shared,
                     Run&& run) {
  const ConvGeometry& g = p.g;
  for (int64_t i = 0; i < data_phase_count(g); ++i) {
    const TapGrid tg = data_grid(g, data_phase(g, i));
    if (tg.empty()) {
      zero_phase(g, tg, dx);
      continue;
    }
    run(data_pass(p, b, tg, dy, w, dx), shared);
    shared += pass_shared_elems(tg, g.cin_g(), g.cout_g(), g.groups);
  }
}

// Whether the bf16 weight gradient builds its pair band through a staged 16-channel band
// (band_pairs): W strides above 2; up to 2 it is built straight from x (band_pairs_direct).
inline bool bf16_band_staged(const TapGrid& tg) {
  return tg.src_stride[2] > 2;
}

// backward_weight scratch of one slot, in floats. fp32: dy of a block in channels-last form, the
// band's phase planes likewise, one band row of 16 channels (staging for the transposes), and
// dwt. bf16 (pairs of positions): dy of the block as pairs channels-last; the band of 16
// channels where bf16_band_staged; the band's two parities of pairs channels-last; and dwt.
struct WeightScratch {
  int64_t dy_t, band, band_t, dwt;
  int64_t total() const { return dy_t + band + band_t + dwt; }
};

inline WeightScratch weight_scratch(const ConvGeometry& g, const TapGrid& tg, int64_t cb,
                                    int64_t rows, bool bf16) {
  const int64_t plane = band_plane(tg, rows), m16 = round16(g.cout_g()), cols = rows * tg.Wp();
  const int64_t dwt = round16(tg.taps * cb * m16), P = tg.phases();
  if (!bf16)
    return WeightScratch{round16(cols * m16), round16(16 * P * tg.Wp()), P * plane * round16(cb),
                         dwt};
  const int64_t staged = bf16_band_staged(tg) ? round16(8 * P * plane) : 0;
  return WeightScratch{round16(ceil_div(cols, 2) * m16), staged, P * plane * round16(cb), dwt};
}

// The bf16 weight gradient's grid: the forward grid with an even row pitch (one more zero column
// where Wp is odd), so that every grid row is whole pairs of positions and the kernel skips the
// extra columns (stride2's 14 outputs a row: 7 pairs, not 7.5).
inline TapGrid weight_grid_bf16(const ConvGeometry& g) {
  TapGrid tg = forward_grid(g);
  tg.ext[2] += tg.ext[2] % 2;
  return tg;
}

// The bf16 runs (algo_grid_direct_bf16.cpp): Operands' x16/w16/y16 inputs.
void forward_bf16(const Problem& p, const Blocking& b, const Operands<float>& o);
void backward_data_bf16(const Problem& p, const Blocking& b, const Operands<float>& o);
void backward_weight_bf16(const Problem& p, const Blocking& b, const Operands<float>& o);

}  // namespace aclnn_cpu::conv::grid_direct
