// The passes of cl_direct (algo_cl_direct.cpp) and the pieces its streamed form
// (cl_direct_stream.cpp) shares with it: a pass's axes and taps, where a source row lies in the
// kernel's source, and the row driver that runs cl_direct.h's row tiles over output rows.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>

#include "conv/engine/algorithm.h"
#include "conv/engine/geometry.h"
#include "conv/kernels/grid/tap_grid.h"

namespace aclnn_cpu::conv::cl_direct {

// One spatial dim of a pass: its taps (weight tap k -> source offset e: output u reads source
// index s_in * u + e), output extent and where output u goes (dst index s_out * u + b_out, in a
// dst of extent dst_size).
struct Axis {
  bool data = false;
  int64_t s = 1, b = 0, pb = 0, dil = 1, K = 1;
  int64_t out = 0, src = 0, dst_size = 0;

  // (Unit stride spelled out: the per-row tap lists would otherwise divide per tap.)
  bool member(int64_t k) const { return !data || s == 1 || ((b + pb - k * dil) % s + s) % s == 0; }
  int64_t e(int64_t k) const {
    return !data ? k * dil - pb : s == 1 ? b + pb - k * dil : (b + pb - k * dil) / s;
  }
  int64_t taps() const {
    int64_t n = 0;
    for (int64_t k = 0; k < K; ++k) n += member(k);
    return n;
  }
  // Along rows: the i-th tap in order of increasing e (data: k descending).
  int64_t row_tap(int64_t i) const {
    for (int64_t k = data ? K - 1 : 0, seen = 0; k >= 0 && k < K; k += data ? -1 : 1)
      if (member(k) && seen++ == i) return k;
    return 0;
  }
  // How the row kernel walks this dim as the row: outputs split into `split` rows of every
  // split-th output (unit stride, dilation 2), source columns `cs` apart between outputs and taps,
  // and the taps in `residues` walks (stride 2, dilation 1: even taps, then odd ones).
  int64_t split() const { return s_in() == 1 ? dil : 1; }
  int64_t cs() const { return s_in() == 1 ? dil : s; }
  int64_t residues() const { return s_in() > 1 && dil == 1 ? s : 1; }
  // The i-th tap in the kernel's order: row_tap order, residue by residue.
  int64_t kernel_tap(int64_t i) const {
    if (residues() == 1) return row_tap(i);
    for (int64_t r = 0; r < s; ++r) {
      const int64_t n = (K - r + s - 1) / s;
      if (i < n) return r + s * i;
      i -= n;
    }
    return 0;
  }
  int64_t s_in() const { return data ? 1 : s; }
  int64_t s_out() const { return data ? s : 1; }
  int64_t b_out() const { return data ? b : 0; }
};

// A pass of one primitive: m output channels from C source channels per group; W(o, c, q) =
// w[grp * Cog * Cig * K + o * so + c * si + q].
struct ClPass {
  std::array<Axis, 3> ax;
  int64_t m, C, so, si;
  int64_t taps() const { return ax[0].taps() * ax[1].taps() * ax[2].taps(); }
  int64_t tap_rows() const { return ax[0].taps() * ax[1].taps(); }
  int64_t rows() const { return ax[0].out * ax[1].out; }
  int64_t src_size() const { return ax[0].src * ax[1].src * ax[2].src; }
  int64_t dst_size() const { return ax[0].dst_size * ax[1].dst_size * ax[2].dst_size; }
};

inline ClPass forward_pass(const ConvGeometry& g) {
  ClPass ps{{}, g.cout_g(), g.cin_g(), g.cin_g() * g.k_size(), g.k_size()};
  for (int d = 0; d < 3; ++d)
    ps.ax[d] =
        Axis{false, g.stride[d], 0, g.pad_before[d], g.dil[d], g.k[d], g.out[d], g.in[d], g.out[d]};
  return ps;
}

// Phase i of the data gradient: dx[c] (phase) = sum_{o, taps} w[o][c][q] * dy[o][u + e].
inline ClPass data_pass(const ConvGeometry& g, int64_t i) {
  const std::array<int64_t, 3> b = data_phase(g, i);
  ClPass ps{{}, g.cin_g(), g.cout_g(), g.k_size(), g.cin_g() * g.k_size()};
  for (int d = 0; d < 3; ++d)
    ps.ax[d] = Axis{true,
                    g.stride[d],
                    b[d],
                    g.pad_before[d],
                    g.dil[d],
                    g.k[d],
                    ceil_div(g.in[d] - b[d], g.stride[d]),
                    g.out[d],
                    g.in[d]};
  return ps;
}

inline int64_t passes(const Problem& p, bool data) {
  return data ? data_phase_count(p.g) : 1;
}
inline ClPass pass(const Problem& p, bool data, int64_t i) {
  return data ? data_pass(p.g, i) : forward_pass(p.g);
}

inline int64_t blocks16(int64_t m) {
  return ceil_div(m, 16);
}
// Packed weights of one pass, all groups.
inline int64_t packed_elems(const ClPass& ps, int64_t groups) {
  return groups * blocks16(ps.m) * 16 * ps.C * ps.taps();
}

// Where source row (id, ih) starts in a channel of the kernel's source: read in place (or a
// task's converted flat rows from element base on), (id * H + ih) * W - base; streamed
// (Dr > 0), in the ring (Stream).
struct RowMap {
  int64_t base = 0;
  int64_t Dr = 0, Hc = 0, ih0 = 0;
  int64_t at(int64_t id, int64_t ih, int64_t H, int64_t W) const {
    return Dr > 0 ? ((id % Dr) * Hc + ih - ih0) * W : (id * H + ih) * W - base;
  }
};

// Source runs asked for from memory while row tiles compute, per_tile cache lines before each
// tile: the next output plane's conversions when streamed (up to 8 planes of C channel runs of
// `bytes`, cstride apart).
struct RingAhead {
  const char* at[8] = {};
  int64_t planes = 0, C = 0, cstride = 0, bytes = 0;
  int64_t per_tile = 0, plane = 0, c = 0, line = 0;

  int64_t lines() const { return planes * C * (bytes / 64 + 2); }
  void ask() {
    for (int64_t k = per_tile; k > 0 && plane < planes;) {
      const uintptr_t start = reinterpret_cast<uintptr_t>(at[plane] + c * cstride);
      const uintptr_t first = start & ~uintptr_t{63};
      const int64_t n = static_cast<int64_t>((start + bytes - first + 63) / 64);
      for (; line < n && k > 0; ++line, --k)
        __builtin_prefetch(reinterpret_cast<const char*>(first) + 64 * line);
      if (line < n) return;
      line = 0;
      if (++c < C) continue;
      c = 0, ++plane;
    }
  }
};

// Output rows [r0, r1) of a pass for one (sample, group): src [C][ldc] -> out [m][S_dst].
struct PassRows {
  const float* src = nullptr;     // [C][ldc] the source, its rows placed as `map` says
  RowMap map;                     // where source row (id, ih) lies in src
  int64_t ldc = 0;                // channel stride of src
  float* out = nullptr;           // [m][S_dst] the pass's output for this (sample, group)
  int64_t r0 = 0, r1 = 0;         // the output rows (d * H.out + h) computed
  int64_t* soff = nullptr;        // scratch [k0 * k1]: a row's taps' source row offsets
  int64_t* woff = nullptr;        // scratch [k0 * k1]: ... and their packed weight offsets
  const float* packed = nullptr;  // [blocks16(m)][C][taps][16] this group's packed weights
  RingAhead* ahead = nullptr;     // asked for before each row tile (null: none)
};
void run_rows(const ClPass& ps, const PassRows& a);

// Converting 3d passes (other dtypes; one pass: the forward, or a unit-stride data gradient) are
// streamed: a task takes a chunk of hc output rows of each plane of a range of output planes,
// planes inner, and holds the source rows they read converted in a ring [C][Dr][Hc][W]: source
// plane id in slot id mod Dr (Dr: the planes' span over the taps), its rows from ih0 = s * h0 +
// min e (the chunk's first row h0). The next output plane reads planes the one before converted
// (ct3d, stride 2: one of its three), and those stay in their slots; its new planes are asked for
// from memory while the plane before computes. Converting whole planes per task instead (a slab of
// 3 planes of 16 x 56 x 56 for ct3d: 600 KB) redid a third of them and left the conversion waiting
// on memory, as the slab does not stay in L2 (measured: bench/RESULTS.md, design
// cl_direct_pass.stream-ring).
constexpr int64_t kRingBytes = int64_t{192} << 10;

struct Stream {
  int64_t hc = 1, nhb = 1, ndb = 1;  // rows per chunk; chunks per plane; ranges of planes
  int64_t Dr = 1, Hc = 1, W = 1;     // ring: planes, rows per plane, columns
  int64_t eh0 = 0, sh = 1;           // rows: min e and the stride along H
  int64_t ring_elems(int64_t C) const { return C * Dr * Hc * W; }
};

// Whether pass 0 of `p` is streamed (a converting 3d pass of one pass), and how (Stream).
bool streams(const Problem& p, bool data);
Stream stream_of(const Problem& p, bool data);
// The streamed pass: task (sample, group, chunk of rows, range of planes), run_rows on the ring.
void run_streamed(const Problem& p, const Blocking& b, const Operands<float>& o, bool data,
                  const float* packed);

}  // namespace aclnn_cpu::conv::cl_direct
