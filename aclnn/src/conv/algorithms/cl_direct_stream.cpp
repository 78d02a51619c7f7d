// cl_direct's streamed pass (cl_direct_pass.h: Stream): converting 3d passes read their source
// rows through a ring of converted planes instead of converting a slab per task.
#include <algorithm>
#include <cstdint>

#include "conv/algorithms/algo_support.h"
#include "conv/kernels/cl/cl_direct.h"
#include "conv/algorithms/cl_direct_pass.h"

namespace aclnn_cpu::conv::cl_direct {
namespace {

// The span of source offsets of an axis's taps, and its least offset.
int64_t e_span(const Axis& a, int64_t* e_min) {
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (int64_t k = 0; k < a.K; ++k)
    if (a.member(k)) lo = std::min(lo, a.e(k)), hi = std::max(hi, a.e(k));
  *e_min = lo;
  return hi - lo + 1;
}

// Row tiles of output rows [h0, h1) of one plane: for RingAhead's spread.
int64_t row_tiles(const ClPass& ps, int64_t rows) {
  const Axis& W = ps.ax[2];
  int64_t tiles = 0;
  for (int64_t res = 0; res < W.split(); ++res)
    tiles += ceil_div(ceil_div(W.out - res, W.split()), cl_row_kernel(W.taps()).max_row);
  return rows * blocks16(ps.m) * tiles;
}

}  // namespace

bool streams(const Problem& p, bool data) {
  return p.converts && passes(p, data) == 1 && pass(p, data, 0).ax[0].out > 1;
}

// hc: as many output rows as keep the ring within kRingBytes (at least 1); then near-equal chunks,
// and ranges of planes for twice pieces_wanted tasks per (sample, group): ct3d's 2 samples x 4
// chunks were 8 tasks of 8 planes, and on a shared 2-core machine a thread slowed by another
// process left the other idle at the end; 16 tasks were faster (measured: bench/RESULTS.md, design
// cl_direct_stream.tasks). A range's first plane converts all its source planes, the later ones
// only the new ones.
Stream stream_of(const Problem& p, bool data) {
  const ClPass ps = pass(p, data, 0);
  const Axis &D = ps.ax[0], &H = ps.ax[1];
  Stream st;
  int64_t ed0 = 0;
  st.Dr = e_span(D, &ed0);
  const int64_t hspan = e_span(H, &st.eh0);
  st.sh = H.s_in(), st.W = ps.ax[2].src;
  const int64_t budget = block_budget(kRingBytes) / (4 * ps.C * st.Dr * st.W);
  // At least as many as keep the source rows two chunks share (hspan - s) within a third of a
  // chunk's own (s * hc): c3d_video's 64 channels take 6 output rows (8 source rows, a 344 KB
  // ring); 3 rows converted 5 at a time were slower (measured: bench/RESULTS.md, design
  // cl_direct_stream.least-rows).
  const int64_t least =
      small_blocks() ? 1 : ceil_div(3 * std::max<int64_t>(0, hspan - st.sh), st.sh);
  st.hc = std::clamp<int64_t>(std::max((budget - hspan) / st.sh + 1, least), 1, H.out);
  st.nhb = ceil_div(H.out, st.hc);
  st.hc = ceil_div(H.out, st.nhb);
  st.Hc = st.sh * (st.hc - 1) + hspan;
  st.ndb = std::clamp<int64_t>(ceil_div(2 * pieces_wanted(p), st.nhb), 1, D.out);
  return st;
}

// The streamed pass (Stream): task (sample, group, chunk of rows, range of planes); per output
// plane the source planes not yet in the ring converted, the next plane's asked for, then the
// chunk's rows.
void run_streamed(const Problem& p, const Blocking& b, const Operands<float>& o, bool data,
                  const float* packed) {
  const ConvGeometry& g = p.g;
  const Stream st = stream_of(p, data);
  const ClPass ps = pass(p, data, 0);
  const Axis &D = ps.ax[0], &H = ps.ax[1];
  const Source& src = data ? o.ysrc : o.xsrc;
  const int64_t S_src = ps.src_size(), C = ps.C, W = st.W, ldc = st.Dr * st.Hc * W;
  const int64_t src_sample = data ? g.C_out * g.out_size() : g.C_in * g.in_size();
  const int64_t per_group = blocks16(ps.m) * ps.C * ps.taps() * 16, per = st.nhb * st.ndb;
  for_tasks(g.N * g.groups * per, [&](int64_t t) {
    const int64_t ng = t / per, hb = t % per / st.ndb, db = t % st.ndb;
    const int64_t n = ng / g.groups, grp = ng % g.groups;
    const int64_t h0 = hb * st.hc, h1 = std::min(H.out, h0 + st.hc);
    const int64_t d0 = D.out * db / st.ndb, d1 = D.out * (db + 1) / st.ndb;
    int64_t* soff = reinterpret_cast<int64_t*>(slot_scratch(p, b, o));
    int64_t* woff = soff + g.k[0] * g.k[1];
    float* ring = reinterpret_cast<float*>(woff + g.k[0] * g.k[1]);  // [C][Dr][Hc][W]
    const Source s = src.at(n * src_sample + grp * C * S_src);       // [C, S_src]
    const RowMap m{0, st.Dr, st.Hc, st.sh * h0 + st.eh0};
    const int64_t lo = std::max<int64_t>(0, m.ih0), hi = std::min(H.src, m.ih0 + st.Hc);
    // fn(id) for the source planes output plane ud reads that are not in the ring yet.
    const auto new_planes = [&](int64_t ud, auto&& fn) {
      for (int64_t kd = 0; kd < D.K; ++kd) {
        const int64_t id = D.s_in() * ud + D.e(kd);
        if (!D.member(kd) || id < 0 || id >= D.src) continue;
        bool held = false;
        for (int64_t k = 0; k < D.K && ud > d0; ++k)
          held = held || (D.member(k) && D.s_in() * (ud - 1) + D.e(k) == id);
        if (!held) fn(id);
      }
    };
    // (A chunk whose rows all lie in the padding converts nothing; its rows are stored zero.)
    for (int64_t ud = d0; ud < d1; ++ud) {
      new_planes(ud, [&](int64_t id) {
        for (int64_t c = 0; c < C; ++c)
          s.at(c * S_src + (id * H.src + lo) * W)
              .convert((hi - lo) * W, 1, ring + c * ldc + m.at(id, lo, H.src, W));
      });
      RingAhead ahead;
      if (ud + 1 < d1 && hi > lo) {
        const int64_t eb = static_cast<int64_t>(s.elem_bytes());
        ahead.C = C, ahead.cstride = S_src * eb, ahead.bytes = (hi - lo) * W * eb;
        new_planes(ud + 1, [&](int64_t id) {
          if (ahead.planes < 8)
            ahead.at[ahead.planes++] = static_cast<const char*>(s.at((id * H.src + lo) * W).data);
        });
        ahead.per_tile = ceil_div(ahead.lines(), row_tiles(ps, h1 - h0));
      }
      run_rows(ps, {.src = ring,
                    .map = m,
                    .ldc = ldc,
                    .out = o.out + ng * ps.m * ps.dst_size(),
                    .r0 = ud * H.out + h0,
                    .r1 = ud * H.out + h1,
                    .soff = soff,
                    .woff = woff,
                    .packed = packed + grp * per_group,
                    .ahead = &ahead});
    }
  });
}

}  // namespace aclnn_cpu::conv::cl_direct
