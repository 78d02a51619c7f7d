// cl_direct_bf16: the data gradient of bf16 convolutions on the channel-lane vdpbf16ps row kernel
// of cl_direct_bf16.h (AVX512_BF16, where bf16_dot_kernels()): algo_cl_direct.cpp's data passes
// with the reduction over pairs of dy's channels, fp32 accumulation into dx.
//
//   dx[c][s*u + b] = sum_{o, taps with (b + pb - k*dil) divisible by s} w[o][c][k] * dy[o][u + e_k]
//   (per phase b of dx; e_k = (b + pb - k*dil) / s, tap_grid.h's decomposition)
//
// Lanes: 16 dx channels c. Reduction: dy channels o in pairs (o, o + 1), the two bf16 of one
// 32-bit unit, so vdpbf16ps adds both products per lane (oneDNN's bf16 backward-data kernels pair
// their reduction channels the same way, in blocked layouts).
//
//   task (sample, group, block of dx rows): dy of the (sample, group) [Cog, S_out] interleaved
//   into the slot as pairs dy2[Cog/2 rounded up][S_out] (a zero channel pairs an odd last one);
//   then for each phase, dx row and block of 16 dx channels, the row's tiles (<= 14 positions)
//   over the tap rows whose dy row exists, stored into dx directly: fp32 (the run_bf16
//   contract) or, where the engine passes Operands::out16 (writes_bf16), bf16 rounded in the
//   tile's store, so dx is written once at half the bytes and never read back to be narrowed.
//   Weights packed once per call and phase: [group][16-channel block][tap row][pair][row tap][16]
//   units (w[2 o2][c][q], w[2 o2 + 1][c][q]).
//
// Nothing is computed on padding (taps clipped per row, edge columns skipped), no lane is spent
// past a row, no band is built: against grid_direct's bf16 passes, the same savings as
// cl_direct's over grid_direct in fp32 (algo_cl_direct.cpp).
#include <algorithm>
#include <array>
#include <cstdint>

#include "conv/algorithms/algo_support.h"
#include "conv/engine/algorithms.h"
#include "conv/kernels/cl/cl_direct_bf16.h"
#include "conv/kernels/grid/direct_grid.h"
#include "conv/kernels/grid/tap_grid.h"

namespace aclnn_cpu::conv {
namespace {

// One spatial dim of a data phase b: tap k is in the phase when (b + pb - k*dil) is divisible
// by s, reading dy at u + e(k); output u goes to dx index s*u + b (of dst_size).
struct Axis {
  int64_t s = 1, b = 0, pb = 0, dil = 1, K = 1;
  int64_t out = 0, src = 0, dst_size = 0;

  // (Unit stride spelled out: the per-row tap lists would otherwise divide per tap.)
  bool member(int64_t k) const { return s == 1 || ((b + pb - k * dil) % s + s) % s == 0; }
  int64_t e(int64_t k) const { return s == 1 ? b + pb - k * dil : (b + pb - k * dil) / s; }
  int64_t taps() const {
    int64_t n = 0;
    for (int64_t k = 0; k < K; ++k) n += member(k);
    return n;
  }
  // Along rows: the i-th tap in order of increasing e (k descending).
  int64_t row_tap(int64_t i) const {
    for (int64_t k = K - 1, seen = 0; k >= 0; --k)
      if (member(k) && seen++ == i) return k;
    return 0;
  }
};

// Phase i: m = C_in/g dx channels from C = C_out/g dy channels; W(c, o, q) =
// w[grp * Cog * Cig * K + o * si + c * so + q].
struct Phase {
  std::array<Axis, 3> ax;
  int64_t m, C, so, si;
  int64_t C2() const { return ceil_div(C, 2); }
  int64_t taps() const { return ax[0].taps() * ax[1].taps() * ax[2].taps(); }
  int64_t rows() const { return ax[0].out * ax[1].out; }
  int64_t src_size() const { return ax[0].src * ax[1].src * ax[2].src; }
  int64_t dst_size() const { return ax[0].dst_size * ax[1].dst_size * ax[2].dst_size; }
};

Phase phase(const ConvGeometry& g, int64_t i) {
  const std::array<int64_t, 3> b = data_phase(g, i);
  Phase ps{{}, g.cin_g(), g.cout_g(), g.k_size(), g.cin_g() * g.k_size()};
  for (int d = 0; d < 3; ++d)
    ps.ax[d] = Axis{g.stride[d], b[d],   g.pad_before[d],
                    g.dil[d],    g.k[d], ceil_div(g.in[d] - b[d], g.stride[d]),
                    g.out[d],    g.in[d]};
  return ps;
}

int64_t blocks16(int64_t m) {
  return ceil_div(m, 16);
}
// Packed weight units of one phase, all groups.
int64_t packed_units(const Phase& ps, int64_t groups) {
  return groups * blocks16(ps.m) * 16 * ps.C2() * ps.taps();
}

// Output rows per chunk: a chunk's rows take one 16-channel block after another, so a block's
// packed weights (resnet3x3: 32 pairs x 9 taps x 64 bytes = 18 KB) are reused from L1 across its
// rows (measured: bench/RESULTS.md, design cl_direct_bf16.row-chunk).
constexpr int64_t kRowChunk = 16;

// Slot floats of a chunk's tap-row lists: per row, soff and woff (int64) per tap row (kd, kh).
int64_t list_elems(const ConvGeometry& g) {
  return 4 * g.k[0] * g.k[1] * kRowChunk;
}

Fit plan(const Problem& p) {
  Fit f;
  const ConvGeometry& g = p.g;
  if (!p.bf16 || p.fp64 || !p.avx512()) {
    f.reason = "needs bf16 inputs and the AVX512_BF16 dot kernels";
  } else if (g.out_size() <= 0 || g.cout_g() <= 0 || g.cin_g() <= 0 || g.N <= 0) {
    f.reason = "empty";
  } else if (g.dil[2] > 2 || (g.dil[2] == 2 && g.stride[2] != 1)) {
    f.reason = "dilation along rows above 2, or 2 with a stride";
  } else if (g.k[2] > kClBf16MaxKw || data_phase_count(g) > kMaxPhases) {
    f.reason = "kernel wider than 7, or more than 64 phases";
  } else {
    f.applies = true;
    f.preferred = true;
    f.reason = "16-channel row tiles of channel pairs";
    const Phase first = phase(g, 0);  // the largest
    // Slot: the tap-row lists of a chunk's rows (two int64 per tap row), then dy of one
    // (sample, group) as pairs.
    f.b.slot_elems = round16(list_elems(g)) + round16(first.C2() * first.src_size());
    for (int64_t i = 0; i < data_phase_count(g); ++i)
      f.b.shared_elems += packed_units(phase(g, i), g.groups);
    f.b.rows = block_size(first.rows(), ceil_div(pieces_wanted(p), data_phase_count(g)));
  }
  return f;
}

// Preferred like cl_direct's fp32 data gradient, where whole 16-channel tiles and a long enough
// reduction pay for the row's transpose and stores.
Fit plan_data(const Problem& p) {
  const ConvGeometry& g = p.g;
  Fit f = plan(p);
  if (!f.applies) return f;
  const char* why = g.cin_g() % 16 != 0            ? "C_in/g not a multiple of 16"
                    : g.cout_g() * g.k_size() < 32 ? "reduction (C_out/g x taps) below 32"
                    : p.macs() < double(1 << 22)   ? "below 4M multiply-adds"
                                                   : nullptr;
  if (why) f.preferred = false, f.reason = why;
  return f;
}

// packed[grp][blk][tap row][o2][i][16]: lane l = the pair (W(blk * 16 + l, 2 o2, q),
// W(blk * 16 + l, 2 o2 + 1, q)) at q = (kd, kh, row_tap(i)), zero past m or C; tap rows in order
// among the phase's taps, so a tap row's pair loop streams contiguous weights.
void pack_weights(const Phase& ps, const uint16_t* w, int64_t groups, uint32_t* packed) {
  const Axis &D = ps.ax[0], &H = ps.ax[1], &W = ps.ax[2];
  const int64_t B = blocks16(ps.m), nW = W.taps(), C2 = ps.C2(), wg = ps.m * ps.C * D.K * H.K * W.K;
  int64_t kw[kClBf16MaxKw];  // the row taps in kernel order
  for (int64_t i = 0; i < nW; ++i) kw[i] = W.row_tap(i);
  for_tasks(groups * B, [&](int64_t gb) {
    const int64_t grp = gb / B, blk = gb % B, nl = std::min<int64_t>(16, ps.m - blk * 16);
    uint32_t* dst = packed + gb * C2 * ps.taps() * 16;
    for (int64_t kd = 0; kd < D.K; ++kd)
      for (int64_t kh = 0; kh < H.K; ++kh) {
        if (!D.member(kd) || !H.member(kh)) continue;
        for (int64_t o2 = 0; o2 < C2; ++o2)
          for (int64_t i = 0; i < nW; ++i, dst += 16) {
            const int64_t o = 2 * o2, q = (kd * H.K + kh) * W.K + kw[i];
            const uint16_t* at = w + grp * wg + (blk * 16) * ps.so + o * ps.si + q;
            for (int64_t l = 0; l < 16; ++l) {
              const uint32_t lo = l < nl ? at[l * ps.so] : 0;
              const uint32_t hi = l < nl && o + 1 < ps.C ? at[l * ps.so + ps.si] : 0;
              dst[l] = lo | hi << 16;
            }
          }
      }
  });
}

// The tap rows (kd, kh) of the phase whose dy row exists for output row (ud, uh): their offsets
// in a pair plane (column 0 of the dy row) and in a channel block's packed weights. Returns how
// many.
int64_t list_tap_rows(const Phase& ps, int64_t ud, int64_t uh, int64_t* soff, int64_t* woff) {
  const Axis &D = ps.ax[0], &H = ps.ax[1];
  const int64_t per_row = ps.C2() * ps.ax[2].taps() * 16;
  int64_t n = 0, rank = 0;
  for (int64_t kd = 0; kd < D.K; ++kd) {
    if (!D.member(kd)) continue;
    const int64_t id = ud + D.e(kd);
    for (int64_t kh = 0; kh < H.K; ++kh) {
      if (!H.member(kh)) continue;
      const int64_t ih = uh + H.e(kh), r = rank++;
      if (id < 0 || id >= D.src || ih < 0 || ih >= H.src) continue;
      soff[n] = (id * H.src + ih) * ps.ax[2].src;
      woff[n++] = r * per_row;
    }
  }
  return n;
}

// The tap-row lists of a chunk's output rows [r0, r1) of a phase: row r0 + j's n[j] tap rows at
// soff / woff + j * stride (list_tap_rows), and span = the dy positions [lo, hi) they read.
// Listed once per chunk, not per row and 16-channel block (per row, list_tap_rows and its divisions
// showed in the data gradient's profile; measured: bench/RESULTS.md, design
// cl_direct_bf16.chunk-lists).
struct ChunkLists {
  int64_t *soff, *woff, stride;
  int64_t n[kRowChunk];
  std::array<int64_t, 2> span;

  void list(const Phase& ps, int64_t r0, int64_t r1) {
    int64_t lo = ps.src_size(), hi = 0;
    for (int64_t row = r0; row < r1; ++row) {
      const int64_t j = row - r0, *so = soff + j * stride;
      n[j] = list_tap_rows(ps, row / ps.ax[1].out, row % ps.ax[1].out, soff + j * stride,
                           woff + j * stride);
      for (int64_t t = 0; t < n[j]; ++t)
        lo = std::min(lo, so[t]), hi = std::max(hi, so[t] + ps.ax[2].src);
    }
    span = {lo, std::max(lo, hi)};
  }
};

// Where dx goes: fp32 (f32) or, where the engine passes Operands::out16, bf16 bits (bf16); one
// of the two is set.
struct DxOut {
  float* f32 = nullptr;
  uint16_t* bf16 = nullptr;

  DxOut at(int64_t k) const { return {f32 ? f32 + k : nullptr, bf16 ? bf16 + k : nullptr}; }
  void zero(int64_t k) const {  // +0.0 in either
    if (bf16) {
      bf16[k] = 0;
    } else {
      f32[k] = 0.0f;
    }
  }
};

// Output rows [r0, r1) of a phase for one (sample, group): dy2 [C2, S_out] -> dx [m, S_in].
void run_rows(const Phase& ps, const uint32_t* dy2, DxOut out, int64_t r0, int64_t r1,
              const ChunkLists& L, const uint32_t* packed) {
  const Axis &D = ps.ax[0], &H = ps.ax[1], &W = ps.ax[2];
  const int64_t S_dst = ps.dst_size(), B = blocks16(ps.m), nW = W.taps();
  const int64_t e0 = nW > 0 ? W.e(W.row_tap(0)) : 0, d = W.s == 1 ? W.dil : 1;
  int64_t dst_row[kRowChunk];
  for (int64_t row = r0; row < r1; ++row) {
    const int64_t ud = row / H.out, uh = row % H.out;
    dst_row[row - r0] = ((D.s * ud + D.b) * H.dst_size + H.s * uh + H.b) * W.dst_size + W.b;
  }
  // Dilation d along rows (unit stride): outputs u = res + d*j read dy columns res + e0 +
  // d*(j + k), a row of its own per residue res; each cut into tiles of nearly equal width (the
  // first J % tiles one wider).
  int64_t J[2], tiles[2];
  for (int64_t res = 0; res < d; ++res)
    J[res] = ceil_div(W.out - res, d), tiles[res] = ceil_div(J[res], kClBf16MaxRow);
  ClRowBf16 r{dy2, nullptr, nullptr, 0, ps.C2(), ps.src_size(), nullptr, nW * 16, 0, W.src, d};
  for (int64_t blk = 0; blk < B; ++blk) {
    const int64_t nch = std::min<int64_t>(16, ps.m - blk * 16);
    r.w = packed + blk * ps.C2() * ps.taps() * 16;
    for (int64_t row = r0; row < r1; ++row) {
      const DxOut dst = out.at(dst_row[row - r0] + blk * 16 * S_dst);
      if (nW == 0) {  // no tap reaches this phase: zeros
        for (int64_t o = 0; o < nch; ++o)
          for (int64_t u = 0; u < W.out; ++u) dst.zero(o * S_dst + u * W.s);
        continue;
      }
      r.rows = L.n[row - r0];
      r.soff = L.soff + (row - r0) * L.stride, r.woff = L.woff + (row - r0) * L.stride;
      for (int64_t res = 0; res < d; ++res) {
        const int64_t q = J[res] / tiles[res], wide = J[res] % tiles[res];
        for (int64_t i = 0, j0 = 0; i < tiles[res]; ++i) {
          const int64_t width = q + (i < wide), u0 = res + d * j0;
          r.col0 = u0 + e0;
          const DxOut tile = dst.at(u0 * W.s);
          cl_direct_row_bf16(width, nW, r, tile.f32, tile.bf16, S_dst, nch, d * W.s);
          j0 += width;
        }
      }
    }
  }
}

// dy2[o2][s] = (dy[2 o2][s], dy[2 o2 + 1][s]) for o2 < C2, s in [lo, hi): a (sample, group) of dy
// [C, S] as channel pairs (zero high halves past an odd C).
void dy_pairs(const uint16_t* dy, int64_t C, int64_t S, int64_t lo, int64_t hi, uint32_t* dy2) {
  for (int64_t o2 = 0; o2 < ceil_div(C, 2) && hi > lo; ++o2) {
    const uint16_t* a = dy + 2 * o2 * S + lo;
    direct_interleave_bf16(a, 2 * o2 + 1 < C ? a + S : nullptr, hi - lo, dy2 + o2 * S + lo);
  }
}

// The positions of dy2 converted so far by a task, one interval [lo, hi): each chunk of output rows
// converts what its span adds just before its kernels read it, so dy2 is read back from L2 rather
// than from a sample-sized buffer converted up front (c3d_video: 6.4 MB of pairs per sample;
// measured: bench/RESULTS.md, design cl_direct_bf16.convert-per-chunk), and a (sample, group) cut
// into several tasks converts only each task's rows. Spans move up with the rows (and a later phase
// starts inside what the first converted); a span below lo is converted all the same.
struct Converted {
  const uint16_t* dy;  // [C, S] of the (sample, group)
  int64_t C, S;
  uint32_t* dy2;
  int64_t lo = 0, hi = 0;

  void cover(std::array<int64_t, 2> span) {
    if (span[1] <= span[0]) return;
    if (hi <= lo) {
      dy_pairs(dy, C, S, span[0], span[1], dy2);
      lo = span[0], hi = span[1];
      return;
    }
    if (span[0] < lo) dy_pairs(dy, C, S, span[0], lo, dy2), lo = span[0];
    if (span[1] > hi) dy_pairs(dy, C, S, hi, span[1], dy2), hi = span[1];
  }
};

void backward_data_bf16(const Problem& p, const Blocking& b, const Operands<float>& o) {
  const ConvGeometry& g = p.g;
  const int64_t P = data_phase_count(g), nb = ceil_div(phase(g, 0).rows(), b.rows);
  uint32_t* packed_all = reinterpret_cast<uint32_t*>(o.shared);
  for (int64_t i = 0, at = 0; i < P; ++i) {
    const Phase ps = phase(g, i);
    pack_weights(ps, o.w16, g.groups, packed_all + at);
    at += packed_units(ps, g.groups);
  }
  for_tasks(g.N * g.groups * nb, [&](int64_t t) {
    const int64_t ng = t / nb, blk = t % nb, grp = ng % g.groups;
    float* slot = slot_scratch(p, b, o);
    const int64_t T = g.k[0] * g.k[1];  // tap rows at most
    int64_t* lists_at = reinterpret_cast<int64_t*>(slot);
    ChunkLists lists{lists_at, lists_at + T * kRowChunk, T, {}, {}};
    uint32_t* dy2 = reinterpret_cast<uint32_t*>(slot + round16(list_elems(g)));
    const int64_t C = g.cout_g(), S = g.out_size();
    Converted done{o.y16 + ng * C * S, C, S, dy2};  // dy [N, groups, Cog, S_out]
    const uint32_t* packed = packed_all;
    for (int64_t i = 0; i < P; ++i) {
      const Phase ps = phase(g, i);
      const int64_t R = ps.rows(), per_group = blocks16(ps.m) * ps.C2() * ps.taps() * 16;
      for (int64_t r0 = R * blk / nb, r1 = R * (blk + 1) / nb; r0 < r1; r0 += kRowChunk) {
        const int64_t e = std::min(r1, r0 + kRowChunk);
        lists.list(ps, r0, e);
        done.cover(lists.span);
        const DxOut dx = DxOut{o.out, o.out16}.at(ng * ps.m * ps.dst_size());  // [N, g, Cig, S_in]
        run_rows(ps, dy2, dx, r0, e, lists, packed + grp * per_group);
      }
      packed += packed_units(ps, g.groups);
    }
  });
}

}  // namespace

// bf16 only (run_f32 null: the planner reaches it through run_bf16 where Problem::bf16).
const Algorithm kClDirectBf16Data{"cl_direct_bf16",
                                  Primitive::kBackwardData,
                                  plan_data,
                                  nullptr,
                                  nullptr,
                                  backward_data_bf16,
                                  /*reads_sources=*/false,
                                  /*needs=*/cpu::kAvx512Bf16Features,
                                  /*writes_bf16=*/true};

}  // namespace aclnn_cpu::conv
