// strided_direct.h's AVX2 + FMA kernels. The forward tile is 3 vectors of output channels x 4
// positions (12 accumulators): per (channel, tap) 3 weight loads and 4 broadcasts for 12 FMAs,
// oneDNN's jit_avx2 forward balance; fewer channel vectors take more positions (2 x 6, 1 x 12). No
// standard-library template is instantiated inside the target region.
#include <immintrin.h>

#include <cstdint>

#include "conv/kernels/strided/strided_direct.h"
#include "int_math.h"

#include "gemm/target_avx2_begin.h"

#include "gemm/avx2_util.h"

namespace aclnn_cpu::conv {
namespace {

constexpr int kMaxV = 3;  // vectors of 8 output channels per tile

template <int V, int P>
void forward_tile(int64_t C, int64_t T, const int64_t* off, const float* x, int64_t cstride,
                  int64_t xstep, const float* w, int64_t ob_stride, float* yt, int64_t ldy,
                  bool add) {
  __m256 acc[V][P];
#pragma GCC unroll 16
  for (int v = 0; v < V; ++v)
#pragma GCC unroll 16
    for (int p = 0; p < P; ++p)
      acc[v][p] = add ? _mm256_loadu_ps(yt + p * ldy + 8 * v) : _mm256_setzero_ps();
  for (int64_t c = 0; c < C; ++c, x += cstride, w += T * 8) {
    for (int64_t t = 0; t < T; ++t) {
      const float* xp = x + off[t];
      __m256 wv[V];
#pragma GCC unroll 16
      for (int v = 0; v < V; ++v) wv[v] = _mm256_loadu_ps(w + v * ob_stride + t * 8);
#pragma GCC unroll 16
      for (int p = 0; p < P; ++p) {
        const __m256 b = _mm256_broadcast_ss(xp + p * xstep);
#pragma GCC unroll 16
        for (int v = 0; v < V; ++v) acc[v][p] = _mm256_fmadd_ps(wv[v], b, acc[v][p]);
      }
    }
  }
#pragma GCC unroll 16
  for (int v = 0; v < V; ++v)
#pragma GCC unroll 16
    for (int p = 0; p < P; ++p) _mm256_storeu_ps(yt + p * ldy + 8 * v, acc[v][p]);
}

using Tile = void (*)(int64_t, int64_t, const int64_t*, const float*, int64_t, int64_t,
                      const float*, int64_t, float*, int64_t, bool);

// Positions per tile by vectors of output channels: 12 accumulators each (3 x 4, 2 x 6, 1 x 12),
// enough independent FMAs to cover their latency.
constexpr int kPositions[kMaxV + 1] = {0, 12, 6, 4};

template <int V, int... P>
constexpr Tile kTileList[] = {nullptr, forward_tile<V, P>...};
constexpr const Tile* kTiles[kMaxV + 1] = {
    nullptr, kTileList<1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12>, kTileList<2, 1, 2, 3, 4, 5, 6>,
    kTileList<3, 1, 2, 3, 4>};

}  // namespace

void strided_forward_avx2(const StridedForward& a) {
  const int64_t blocks = a.blocks, n = a.n, C = a.C, T = a.T, cstride = a.cstride;
  const int64_t xstep = a.xstep, ob_stride = a.ob_stride, ldy = a.ldy;
  const int64_t* off = a.off;
  const float *x = a.x, *packed = a.packed;
  float* yt = a.yt;
  const bool add = a.add;
  // Blocks in nearly equal groups of at most 3 (4 -> 2 + 2, not 3 + 1).
  const int64_t groups = (blocks + kMaxV - 1) / kMaxV;
  for (int64_t gi = 0, ob = 0; gi < groups; ++gi) {
    const int nv = static_cast<int>(blocks / groups + (gi < blocks % groups));
    const int64_t step = kPositions[nv];
    for (int64_t p0 = 0; p0 < n; p0 += step) {
      const int np = static_cast<int>(min64(step, n - p0));
      kTiles[nv][np](C, T, off, x + p0 * xstep, cstride, xstep, packed + ob * ob_stride, ob_stride,
                     yt + p0 * ldy + ob * 8, ldy, add);
    }
    ob += nv;
  }
}

void positions_to_channels_avx2(const float* src, int64_t ld_src, int64_t n, int64_t m, float* dst,
                                int64_t ld_dst) {
  for (int64_t p0 = 0; p0 < n; p0 += 8) {
    const int64_t np = min64(8, n - p0);
    const __m256i pm = gemm::first_lanes8(np);
    for (int64_t o0 = 0; o0 < m; o0 += 8) {
      const int64_t no = min64(8, m - o0);
      __m256 v[8];
      if (np == 8 && no == 8) {  // whole 8 x 8 blocks: plain loads and stores
        for (int i = 0; i < 8; ++i) v[i] = _mm256_loadu_ps(src + (p0 + i) * ld_src + o0);
        gemm::transpose8(v);
        for (int i = 0; i < 8; ++i) _mm256_storeu_ps(dst + (o0 + i) * ld_dst + p0, v[i]);
        continue;
      }
      const __m256i om = gemm::first_lanes8(no);
      for (int i = 0; i < 8; ++i)
        v[i] = i < np ? _mm256_maskload_ps(src + (p0 + i) * ld_src + o0, om) : _mm256_setzero_ps();
      gemm::transpose8(v);  // v[i] = channel o0 + i over positions p0..p0+7
      for (int64_t i = 0; i < no; ++i) _mm256_maskstore_ps(dst + (o0 + i) * ld_dst + p0, pm, v[i]);
    }
  }
}

void channels_last_sums_avx2(const float* t, int64_t rows, int64_t n, int64_t pitch, int64_t m16,
                             int64_t cnt, double* sums) {
  constexpr int64_t kRun = 16;             // positions added in fp32 before widening
  for (int64_t o = 0; o < cnt; o += 16) {  // channels o .. o + 15: one cache line a position
    __m256d acc[4] = {_mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd(),
                      _mm256_setzero_pd()};  // lanes 0-3, 4-7, 8-11, 12-15
    for (int64_t r = 0; r < rows; ++r) {
      const float* row = t + r * pitch * m16 + o;
      for (int64_t j0 = 0; j0 < n; j0 += kRun) {
        const int64_t j1 = min64(n, j0 + kRun);
        __m256 lo[4], hi[4];  // [position % 4]
        for (int i = 0; i < 4; ++i) lo[i] = hi[i] = _mm256_setzero_ps();
        int64_t j = j0;
        for (; j + 4 <= j1; j += 4)
          for (int i = 0; i < 4; ++i) {
            lo[i] = _mm256_add_ps(lo[i], _mm256_loadu_ps(row + (j + i) * m16));
            hi[i] = _mm256_add_ps(hi[i], _mm256_loadu_ps(row + (j + i) * m16 + 8));
          }
        for (; j < j1; ++j) {
          lo[0] = _mm256_add_ps(lo[0], _mm256_loadu_ps(row + j * m16));
          hi[0] = _mm256_add_ps(hi[0], _mm256_loadu_ps(row + j * m16 + 8));
        }
        const __m256 l = _mm256_add_ps(_mm256_add_ps(lo[0], lo[1]), _mm256_add_ps(lo[2], lo[3]));
        const __m256 h = _mm256_add_ps(_mm256_add_ps(hi[0], hi[1]), _mm256_add_ps(hi[2], hi[3]));
        acc[0] = _mm256_add_pd(acc[0], _mm256_cvtps_pd(_mm256_castps256_ps128(l)));
        acc[1] = _mm256_add_pd(acc[1], _mm256_cvtps_pd(_mm256_extractf128_ps(l, 1)));
        acc[2] = _mm256_add_pd(acc[2], _mm256_cvtps_pd(_mm256_castps256_ps128(h)));
        acc[3] = _mm256_add_pd(acc[3], _mm256_cvtps_pd(_mm256_extractf128_ps(h, 1)));
      }
    }
    alignas(32) double lanes[16];
    for (int i = 0; i < 4; ++i) _mm256_store_pd(lanes + 4 * i, acc[i]);
    for (int64_t i = 0; i < min64(16, cnt - o); ++i) sums[o + i] += lanes[i];
  }
}

}  // namespace aclnn_cpu::conv

#include "gemm/target_end.h"
