// flip_<forward algorithm>: the data gradient of a unit-stride convolution as a forward
// convolution. With unit stride, dx[c, i] = sum_{o, q} w[o, c, q] * dy[o, i + pb - q*dil];
// reversing every kernel dim (q' = K-1-q) makes it a regular conv of dy with the tap-reversed
// weights w'[c, o, q'] = w[o, c, K-1-q'] and padding pb' = dil*(k-1) - pb (flipped_for_data), so
// any forward algorithm computes it, with no col2im scatter and no zeroing of dx. The flipped
// weights go first in the shared scratch, the forward algorithm's own shared scratch after them.
//
// Cost rules: the forward algorithm's own, and for the gathered-panel lowerings (implicit and
// explicit im2col) only when C_in/g >= C_out/g: their per-column gather of Cog*K rows is amortised
// over M = Cig output rows, the col2im form's over its reduction depth Cog (32 -> 64 channels
// measured slower flipped). On the padded grid the gather is a plain copy and the flip wins even
// for Cig < Cog (measured: bench/RESULTS.md, design flipped.grid).
#include <type_traits>

#include "conv/algorithms/algo_support.h"
#include "conv/engine/algorithms.h"

namespace aclnn_cpu::conv {
namespace {

// w' elements, rounded up to a 64-byte multiple so the forward's shared scratch stays aligned.
int64_t flipped_elems(const ConvGeometry& g) {
  return ceil_div(g.C_in * g.cout_g() * g.k_size(), 16) * 16;
}

Problem flipped_problem(const Problem& p) {
  Problem f = p;
  f.g = flipped_for_data(p.g);
  return f;
}

template <const Algorithm& Fwd, bool kNeedsWideInput>
Fit plan(const Problem& p) {
  if (!p.g.unit_stride()) return Fit{false, false, "needs unit stride", {}};
  if (p.fp64 && !Fwd.run_f64) return Fit{false, false, "fp32 only", {}};
  Fit f = Fwd.plan(flipped_problem(p));
  if (!f.applies) return f;
  f.b.shared_elems += flipped_elems(p.g);
  if (kNeedsWideInput && f.preferred && (p.fp64 || p.g.cin_g() < p.g.cout_g())) {
    f.preferred = false;
    f.reason = p.fp64 ? "fp64 keeps col2im" : "C_in/g < C_out/g: the gather costs more";
  }
  // The flipped forward's M is C_in/g: below the GEMM's 8-row tile most of each tile is empty
  // (MNIST's first layer, 1 input channel, ran several times slower flipped on the grid than on
  // col2im; measured: bench/RESULTS.md, design flipped.one-channel).
  if (f.preferred && p.g.cin_g() < 8) {
    f.preferred = false;
    f.reason = "fewer than 8 input channels per group";
  }
  return f;
}

// Element `i` of the weights: of the T copy, or (Sources) converted as it is read.
template <typename T>
T weight(const T* w, const Source&, int64_t i) {
  return w[i];
}
inline float weight(const float* w, const Source& src, int64_t i) {
  return w ? w[i] : src.value(i);
}

template <typename T>
void flip_weights(const ConvGeometry& g, const T* w, const Source& src, T* wf) {
  // w' [C_in, Cog, K] per group from w [C_out, Cig, K], taps reversed.
  const int64_t Cig = g.cin_g(), Cog = g.cout_g(), K = g.k_size();
  for_tasks(g.C_in, [&](int64_t ci) {
    const int64_t grp = ci / std::max<int64_t>(Cig, 1), c = ci % std::max<int64_t>(Cig, 1);
    for (int64_t o = 0; o < Cog; ++o) {
      const int64_t at = ((grp * Cog + o) * Cig + c) * K;
      T* dst = wf + (ci * Cog + o) * K;
      for (int64_t q = 0; q < K; ++q) dst[q] = weight(w, src, at + K - 1 - q);
    }
  });
}

template <const Algorithm& Fwd, typename T>
void run(const Problem& p, const Blocking& b, const Operands<T>& o) {
  // fp32 runs of a forward algorithm that reads Sources: dy as stored is its x, the flipped
  // (converted) weights fp32.
  const bool sources = std::is_same_v<T, float> && Fwd.reads_sources;
  const T* w = o.w;
  if constexpr (std::is_same_v<T, float>)
    if (sources) w = f32_data(o.wsrc);
  flip_weights(p.g, w, o.wsrc, o.shared);
  Operands<T> f = o;
  f.x = o.y;
  f.w = o.shared;
  f.y = nullptr;
  if (sources) {
    f.x = f.w = nullptr;
    f.xsrc = o.ysrc;
    f.wsrc = Source{o.shared, SrcKind::kF32};
    f.ysrc = Source{};
  }
  f.shared = o.shared + flipped_elems(p.g);
  Blocking fb = b;
  fb.shared_elems -= flipped_elems(p.g);
  if constexpr (std::is_same_v<T, float>) {
    Fwd.run_f32(flipped_problem(p), fb, f);
  } else {
    Fwd.run_f64(flipped_problem(p), fb, f);  // plan() accepts fp64 only when it exists
  }
}

}  // namespace

// Each reads Sources where its forward algorithm does.
const Algorithm kFlipGridGemmData{"flip_grid_gemm",
                                  Primitive::kBackwardData,
                                  plan<kGridGemmForward, false>,
                                  run<kGridGemmForward, float>,
                                  run<kGridGemmForward, double>,
                                  /*run_bf16=*/nullptr,
                                  /*reads_sources=*/true,
                                  /*needs=*/cpu::kAvx2Features};
const Algorithm kFlipImplicitGemmData{"flip_implicit_gemm",
                                      Primitive::kBackwardData,
                                      plan<kImplicitGemmForward, true>,
                                      run<kImplicitGemmForward, float>,
                                      run<kImplicitGemmForward, double>,
                                      /*run_bf16=*/nullptr,
                                      /*reads_sources=*/false,
                                      /*needs=*/cpu::kAvx2Features};
const Algorithm kFlipIm2colGemmData{"flip_im2col_gemm",
                                    Primitive::kBackwardData,
                                    plan<kIm2colGemmForward, true>,
                                    run<kIm2colGemmForward, float>,
                                    run<kIm2colGemmForward, double>,
                                    /*run_bf16=*/nullptr,
                                    /*reads_sources=*/true};

}  // namespace aclnn_cpu::conv
