// 16-bit ops on the bulk conversions (ops/map16.h, ops/convert16): every result is bit for bit
// the old definition, "compute in float32 from the exactly widened inputs, round once": the same
// op on the float32 copies (Tensor::to, tensor/half.h's scalar conversions), rounded with
// Tensor::to. Inputs mix normal values with +-0, +-inf, quiet and signalling NaN, subnormals and
// values that overflow; shapes have chunk tails, broadcasts, transposed views and sizes that run
// in parallel. ctest also runs these under ACLNN_CPU_MAX_ISA=avx2 and =none.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "ops/ops.h"
#include "tensor/creation.h"

namespace aclgrad {
namespace {

constexpr Dtype kDtypes[] = {Dtype::Float16, Dtype::BFloat16};

// Bits of +-0, +-inf, a quiet and a signalling NaN, the smallest subnormal, the largest finite.
std::vector<uint16_t> specials(Dtype d) {
  if (d == Dtype::Float16) return {0x0000, 0x8000, 0x7c00, 0xfc00, 0x7e01, 0x7c01, 0x0001, 0x7bff};
  return {0x0000, 0x8000, 0x7f80, 0xff80, 0x7fc1, 0x7f81, 0x0001, 0x7f7f};
}

// A 16-bit tensor of values in about [-4, 4) (every 97th element special unless finite_only).
Tensor make16(const Shape& shape, Dtype d, uint32_t seed, bool finite_only = false) {
  Tensor t = empty(shape, d);
  auto* p = static_cast<uint16_t*>(t.data_ptr());
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(-4.0f, 4.0f);
  const std::vector<uint16_t> sp = specials(d);
  for (int64_t i = 0; i < t.numel(); ++i) {
    const float v = u(gen);
    p[i] = d == Dtype::Float16 ? Half(v).bits : BFloat16(v).bits;
    if (!finite_only && i % 97 == 5) p[i] = sp[(i / 97) % sp.size()];
  }
  return t;
}

std::vector<uint16_t> bits_of(const Tensor& t) {
  const Tensor c = t.contiguous();
  std::vector<uint16_t> out(static_cast<size_t>(c.numel()));
  std::memcpy(out.data(), c.data_ptr(), out.size() * sizeof(uint16_t));
  return out;
}

// got (16-bit) must equal want (float32) rounded by Tensor::to, bit for bit.
void expect_rounded_from(const Tensor& got, const Tensor& want32, const std::string& what) {
  ASSERT_EQ(got.sizes(), want32.sizes()) << what;
  const std::vector<uint16_t> g = bits_of(got), w = bits_of(want32.to(got.dtype()));
  for (size_t i = 0; i < g.size(); ++i) {
    ASSERT_EQ(g[i], w[i]) << what << ", element " << i;
  }
}

using Unary = std::function<Tensor(const Tensor&)>;
using Binary = std::function<Tensor(const Tensor&, const Tensor&)>;

TEST(Ops16Bit, UnaryOpsRoundOnceFromFloat32) {
  const std::vector<std::pair<const char*, Unary>> ops = {
      {"relu", [](const Tensor& x) { return relu(x); }},
      {"neg", [](const Tensor& x) { return neg(x); }},
      {"exp", [](const Tensor& x) { return exp(x); }},
      {"log", [](const Tensor& x) { return log(x); }},
      {"sqrt", [](const Tensor& x) { return sqrt(x); }},
      {"abs", [](const Tensor& x) { return abs(x); }},
      {"sigmoid", [](const Tensor& x) { return sigmoid(x); }},
      {"tanh", [](const Tensor& x) { return tanh(x); }},
      {"leaky_relu", [](const Tensor& x) { return leaky_relu(x, 0.1); }},
      {"add 0.3", [](const Tensor& x) { return add(x, 0.3); }},
      {"mul 1e4 (overflows)", [](const Tensor& x) { return mul(x, 1e4); }},
      {"div 3e3 (subnormal)", [](const Tensor& x) { return div(x, 3e3); }},
      {"pow 2", [](const Tensor& x) { return pow(x, 2); }},
      {"clamp", [](const Tensor& x) { return clamp(x, -1.5, 2.0); }},
  };
  for (Dtype d : kDtypes) {
    // 1,000 elements a row (3 chunks and a tail), a transposed view, and a size that runs in
    // parallel.
    const Tensor base = make16({3, 5, 1000}, d, 1);
    const Tensor big = make16({70001}, d, 2);
    for (const Tensor& x : {base, base.transpose(0, 2), big}) {
      for (const auto& [name, op] : ops) {
        expect_rounded_from(op(x), op(x.to(Dtype::Float32)),
                            std::string(name) + " in " + std::string(dtype_name(d)));
      }
    }
  }
}

TEST(Ops16Bit, BinaryOpsRoundOnceFromFloat32) {
  const std::vector<std::pair<const char*, Binary>> ops = {
      {"add", [](const Tensor& a, const Tensor& b) { return add(a, b); }},
      {"sub", [](const Tensor& a, const Tensor& b) { return sub(a, b); }},
      {"mul", [](const Tensor& a, const Tensor& b) { return mul(a, b); }},
      {"div", [](const Tensor& a, const Tensor& b) { return div(a, b); }},
      {"pow", [](const Tensor& a, const Tensor& b) { return pow(a, b); }},
  };
  for (Dtype d : kDtypes) {
    const Tensor a = make16({4, 300, 7}, d, 3), b = make16({4, 300, 7}, d, 4);
    const Tensor row = make16({300, 1}, d, 5);  // broadcast along the last dim
    const Tensor b_t = make16({7, 300, 4}, d, 6).permute({2, 1, 0});  // strided
    for (const auto& [name, op] : ops) {
      for (const Tensor& other : {b, row, b_t}) {
        expect_rounded_from(op(a, other), op(a.to(Dtype::Float32), other.to(Dtype::Float32)),
                            std::string(name) + " in " + std::string(dtype_name(d)));
      }
    }
  }
}

TEST(Ops16Bit, PredicatesReadExactValues) {
  for (Dtype d : kDtypes) {
    const Tensor a = make16({2, 777}, d, 7), b = make16({2, 777}, d, 8);
    const Tensor a32 = a.to(Dtype::Float32), b32 = b.to(Dtype::Float32);
    EXPECT_EQ(gt(a, b).to_vector<bool>(), gt(a32, b32).to_vector<bool>());
    EXPECT_EQ(eq(a, a).to_vector<bool>(), eq(a32, a32).to_vector<bool>());
    EXPECT_EQ(le(a, 0.5).to_vector<bool>(), le(a32, 0.5).to_vector<bool>());
  }
}

// Backward kernels of one rounding: gelu and softplus (map_binary over g and x), relu (on the
// bits). (tanh's and sigmoid's backwards are compositions of the ops tested above, each rounding.)
TEST(Ops16Bit, ActivationGradientsRoundOnceFromFloat32) {
  const std::vector<std::pair<const char*, Unary>> ops = {
      {"gelu", [](const Tensor& x) { return gelu(x); }},
      {"gelu tanh", [](const Tensor& x) { return gelu(x, "tanh"); }},
      {"softplus", [](const Tensor& x) { return softplus(x, 2.0, 3.0); }},
      {"relu", [](const Tensor& x) { return relu(x); }},
  };
  for (Dtype d : kDtypes) {
    const Tensor x = make16({6, 1001}, d, 9).requires_grad_();
    const Tensor x32 = x.detach().to(Dtype::Float32).requires_grad_();
    const Tensor g = make16({6, 1001}, d, 10);
    for (const auto& [name, op] : ops) {
      const Tensor dx = autograd::grad({op(x)}, {x}, {g})[0];
      const Tensor dx32 = autograd::grad({op(x32)}, {x32}, {g.to(Dtype::Float32)})[0];
      if (std::string(name) == "relu") {
        // Passes g through untouched: a signalling NaN in g stays signalling (select), which a
        // trip through float32 would quiet; check the bits directly.
        const std::vector<uint16_t> gb = bits_of(g), yb = bits_of(relu(x.detach()));
        const std::vector<uint16_t> got = bits_of(dx);
        const std::vector<float> y = relu(x32.detach()).to_vector<float>();
        for (size_t i = 0; i < got.size(); ++i) {
          ASSERT_EQ(got[i], y[i] > 0 || y[i] != y[i] ? gb[i] : 0) << "relu, element " << i;
        }
        continue;
      }
      expect_rounded_from(dx, dx32,
                          std::string(name) + " backward in " + std::string(dtype_name(d)));
    }
  }
}

TEST(Ops16Bit, BatchNormMatchesFloat32Rounded) {
  for (Dtype d : kDtypes) {
    // S = 299: rows of a chunk and 43 more (a lane tail); float32 weight and bias beside the
    // 16-bit input.
    const Tensor x = make16({8, 3, 13, 23}, d, 11, true).requires_grad_();
    const Tensor x32 = x.detach().to(Dtype::Float32).requires_grad_();
    const Tensor w = from_vector(std::vector<double>{0.5, -1.25, 2}, {3}, Dtype::Float32);
    const Tensor b = from_vector(std::vector<double>{0.1, 0, -3}, {3}, Dtype::Float32);
    const Tensor w1 = w.clone().requires_grad_(), w2 = w.clone().requires_grad_();
    const Tensor rm = zeros({3}), rv = ones({3}), rm32 = zeros({3}), rv32 = ones({3});
    const Tensor y = batch_norm(x, rm, rv, w1, b, true, 0.1, 1e-5);
    const Tensor y32 = batch_norm(x32, rm32, rv32, w2, b, true, 0.1, 1e-5);
    expect_rounded_from(y, y32, "batch_norm forward");
    EXPECT_EQ(rm.to_vector<float>(), rm32.to_vector<float>());
    EXPECT_EQ(rv.to_vector<float>(), rv32.to_vector<float>());
    const Tensor g = make16({8, 3, 13, 23}, d, 12, true);
    const auto grads = autograd::grad({y}, {x, w1}, {g});
    const auto grads32 = autograd::grad({y32}, {x32, w2}, {g.to(Dtype::Float32)});
    expect_rounded_from(grads[0], grads32[0], "batch_norm input gradient");
    EXPECT_EQ(grads[1].to_vector<float>(), (grads32[1].to_vector<float>()));
    // Evaluation mode (running statistics), a non-multiple-of-8 spatial size.
    const Tensor xe = make16({2, 3, 13}, d, 13, true);
    expect_rounded_from(batch_norm(xe, rm, rv, w, b, false, 0.1, 1e-5),
                        batch_norm(xe.to(Dtype::Float32), rm, rv, w, b, false, 0.1, 1e-5),
                        "batch_norm eval");
  }
}

// ---- pooling ----
// 16-bit pooling computes in float32 from the widened inputs and rounds each output once; the
// backward accumulates grad_input in float32 too, also where windows overlap (kernel > stride,
// adaptive pooling), so a position that several windows feed is rounded once, not after each
// addition.

// One pooling: kind 'm' max, 'a' avg, 'A' adaptive avg (2d, output size k); one entry per
// spatial dim (s empty: s = k).
struct Pool16 {
  char kind;
  Shape in, k, s = {}, p = {}, d = {};
  bool ceil = false, include_pad = true;
  std::optional<int64_t> divisor = std::nullopt;
  int rank() const { return static_cast<int>(k.size()); }
  Shape stride() const { return s.empty() ? k : s; }
  Shape pad() const { return p.empty() ? Shape(k.size(), 0) : p; }
  Shape dil() const { return d.empty() ? Shape(k.size(), 1) : d; }
};

std::string describe(const Pool16& c) {
  const std::string in = std::string(1, c.kind) + " in=" + format_shape(c.in);
  if (c.kind == 'A') return in + " out=" + format_shape(c.k);
  return in + " k=" + format_shape(c.k) + " s=" + format_shape(c.stride()) +
         " p=" + format_shape(c.pad()) + " d=" + format_shape(c.dil()) + (c.ceil ? " ceil" : "") +
         (c.include_pad ? "" : " exclude_pad") + (c.divisor ? " divisor" : "");
}

Tensor run_pool(const Tensor& x, const Pool16& c) {
  using Max =
      Tensor (*)(const Tensor&, const Shape&, const Shape&, const Shape&, const Shape&, bool);
  using Avg = Tensor (*)(const Tensor&, const Shape&, const Shape&, const Shape&, bool, bool,
                         std::optional<int64_t>);
  constexpr Max kMax[] = {max_pool1d, max_pool2d, max_pool3d};
  constexpr Avg kAvg[] = {avg_pool1d, avg_pool2d, avg_pool3d};
  if (c.kind == 'A') return adaptive_avg_pool2d(x, c.k);
  if (c.kind == 'm') return kMax[c.rank() - 1](x, c.k, c.stride(), c.pad(), c.dil(), c.ceil);
  return kAvg[c.rank() - 1](x, c.k, c.stride(), c.pad(), c.ceil, c.include_pad, c.divisor);
}

// Along one axis of input size n: each output's input positions (padding left out) and its
// window's extent clipped to the padded input (count_include_pad's divisor factor).
struct AxisWindows {
  std::vector<std::vector<int64_t>> taps;
  std::vector<int64_t> span;
};

AxisWindows axis_windows(const Pool16& c, int a, int64_t n) {
  AxisWindows w;
  if (c.kind == 'A') {  // output o averages [floor(o*n/out), ceil((o+1)*n/out))
    for (int64_t o = 0, out = c.k[a]; o < out; ++o) {
      w.taps.emplace_back();
      for (int64_t i = o * n / out; i < ((o + 1) * n + out - 1) / out; ++i) w.taps[o].push_back(i);
      w.span.push_back(static_cast<int64_t>(w.taps[o].size()));
    }
    return w;
  }
  const int64_t k = c.k[a], s = c.stride()[a], p = c.pad()[a], d = c.dil()[a];
  int64_t out = (n + 2 * p - d * (k - 1) - 1 + (c.ceil ? s - 1 : 0)) / s + 1;
  if (c.ceil && (out - 1) * s >= n + p) --out;  // the last window starts in the padding
  for (int64_t o = 0; o < out; ++o) {
    const int64_t start = o * s - p;
    w.taps.emplace_back();
    for (int64_t j = 0; j < k; ++j) {
      if (start + j * d >= 0 && start + j * d < n) w.taps[o].push_back(start + j * d);
    }
    w.span.push_back(std::min(start + k, n + p) - start);
  }
  return w;
}

// dL/dx in float64 from the definitions: max sends g[o] to its window's first largest input, avg
// spreads g[o] / divisor over the window's inputs. scale[i] = the sum of |contributions| to i.
std::vector<double> ref_pool_grad(const Tensor& x, const Tensor& g, const Pool16& c,
                                  std::vector<double>& scale) {
  const int64_t lead = static_cast<int64_t>(c.in.size()) - c.rank();
  std::array<AxisWindows, 3> w;
  std::array<int64_t, 3> n{1, 1, 1};
  for (int a = 0; a < 3; ++a) {
    const int ax = a - (3 - c.rank());  // leading unit axes for 1d and 2d
    w[a] = ax < 0 ? AxisWindows{{{0}}, {1}} : axis_windows(c, ax, n[a] = c.in[lead + ax]);
  }
  const std::vector<double> xv = x.to(Dtype::Float64).to_vector<double>();
  const std::vector<double> gv = g.to(Dtype::Float64).to_vector<double>();
  const int64_t plane = n[0] * n[1] * n[2];
  std::vector<double> gi(xv.size(), 0.0);
  scale.assign(xv.size(), 0.0);
  size_t o = 0;
  for (int64_t base = 0; base < static_cast<int64_t>(xv.size()); base += plane) {
    for (size_t i = 0; i < w[0].taps.size(); ++i) {
      for (size_t j = 0; j < w[1].taps.size(); ++j) {
        for (size_t l = 0; l < w[2].taps.size(); ++l, ++o) {
          std::vector<int64_t> taps;  // row-major window order
          for (int64_t ti : w[0].taps[i]) {
            for (int64_t tj : w[1].taps[j]) {
              for (int64_t tl : w[2].taps[l]) taps.push_back(base + (ti * n[1] + tj) * n[2] + tl);
            }
          }
          if (c.kind == 'm') {
            int64_t best = taps[0];
            for (int64_t t : taps) best = xv[t] > xv[best] ? t : best;
            gi[best] += gv[o], scale[best] += std::abs(gv[o]);
            continue;
          }
          const double div = c.divisor ? static_cast<double>(*c.divisor)
                             : c.include_pad
                                 ? static_cast<double>(w[0].span[i] * w[1].span[j] * w[2].span[l])
                                 : static_cast<double>(taps.size());
          for (int64_t t : taps) gi[t] += gv[o] / div, scale[t] += std::abs(gv[o] / div);
        }
      }
    }
  }
  EXPECT_EQ(o, gv.size()) << describe(c);
  return gi;
}

// Overlapping windows (kernel > stride, dilated, padded, ceil_mode, adaptive), disjoint ones,
// odd sizes, unbatched inputs, and enough planes to run in parallel.
std::vector<Pool16> pool16_cases() {
  return {
      {.kind = 'm', .in = {2, 3, 29}, .k = {4}, .s = {1}},
      {.kind = 'm', .in = {3, 31}, .k = {3}, .s = {2}, .p = {1}, .d = {2}},
      {.kind = 'm', .in = {2, 3, 15, 17}, .k = {3, 3}, .s = {2, 2}},  // dense 3x3
      {.kind = 'm', .in = {2, 3, 15, 17}, .k = {3, 3}, .s = {1, 1}},
      {.kind = 'm', .in = {2, 3, 15, 17}, .k = {2, 2}},  // disjoint
      {.kind = 'm', .in = {2, 3, 14, 16}, .k = {3, 3}, .s = {2, 2}, .p = {1, 1}, .ceil = true},
      {.kind = 'm', .in = {2, 40, 31, 31}, .k = {3, 3}, .s = {2, 2}, .p = {1, 1}},  // ResNet's
      {.kind = 'm', .in = {2, 2, 7, 9, 11}, .k = {3, 3, 3}, .s = {2, 2, 2}, .p = {1, 1, 1}},
      {.kind = 'm', .in = {1, 3, 6, 7, 5}, .k = {2, 3, 3}, .s = {1, 2, 1}, .ceil = true},
      {.kind = 'a', .in = {2, 3, 29}, .k = {5}, .s = {2}, .p = {2}},
      {.kind = 'a', .in = {2, 3, 15, 17}, .k = {3, 3}, .s = {2, 2}, .p = {1, 1}},
      {.kind = 'a', .in = {2, 3, 15, 17}, .k = {2, 2}},  // disjoint
      {.kind = 'a',
       .in = {2, 3, 14, 16},
       .k = {3, 3},
       .s = {2, 2},
       .p = {1, 1},
       .ceil = true,
       .include_pad = false},
      {.kind = 'a', .in = {3, 15, 17}, .k = {3, 2}, .s = {1, 1}, .divisor = 7},
      {.kind = 'a', .in = {2, 40, 31, 31}, .k = {3, 3}, .s = {2, 2}, .p = {1, 1}},
      {.kind = 'a', .in = {2, 2, 7, 9, 11}, .k = {3, 3, 3}, .s = {2, 2, 2}, .p = {1, 1, 1}},
      {.kind = 'a',
       .in = {1, 3, 6, 7, 5},
       .k = {2, 3, 3},
       .s = {1, 2, 1},
       .ceil = true,
       .include_pad = false},
      {.kind = 'A', .in = {2, 3, 7, 9}, .k = {5, 4}},
      {.kind = 'A', .in = {3, 15, 17}, .k = {7, 7}},
  };
}

// Forward and backward, special values included: the float32 op on the widened copies, each
// result rounded once.
TEST(Ops16Bit, PoolingRoundsOnceFromFloat32) {
  uint32_t seed = 100;
  for (Dtype d : kDtypes) {
    for (const Pool16& c : pool16_cases()) {
      const std::string what = describe(c) + " in " + std::string(dtype_name(d));
      const Tensor x = make16(c.in, d, ++seed).requires_grad_();
      const Tensor x32 = x.detach().to(Dtype::Float32).requires_grad_();
      const Tensor y = run_pool(x, c), y32 = run_pool(x32, c);
      expect_rounded_from(y, y32, what + " forward");
      const Tensor g = make16(y.sizes(), d, ++seed);
      expect_rounded_from(autograd::grad({y}, {x}, {g})[0],
                          autograd::grad({y32}, {x32}, {g.to(Dtype::Float32)})[0],
                          what + " backward");
    }
  }
}

// Finite values: each gradient is the float64 one rounded once, up to float32's summation error
// (a few float32 ulps of the summed magnitudes).
TEST(Ops16Bit, PoolingGradientsWithinOneRoundingOfFloat64) {
  uint32_t seed = 200;
  for (Dtype d : kDtypes) {
    const double unit = d == Dtype::Float16 ? 0x1p-11 : 0x1p-8;  // half an ulp, relative
    for (const Pool16& c : pool16_cases()) {
      const std::string what = describe(c) + " in " + std::string(dtype_name(d));
      const Tensor x = make16(c.in, d, ++seed, true).requires_grad_();
      const Tensor y = run_pool(x, c);
      const Tensor g = make16(y.sizes(), d, ++seed, true);
      const std::vector<double> got =
          autograd::grad({y}, {x}, {g})[0].to(Dtype::Float64).to_vector<double>();
      std::vector<double> scale;
      const std::vector<double> want = ref_pool_grad(x, g, c, scale);
      ASSERT_EQ(got.size(), want.size()) << what;
      for (size_t i = 0; i < got.size(); ++i) {
        const double tol = unit * std::abs(want[i]) + 0x1p-20 * scale[i] + 0x1p-25;
        ASSERT_NEAR(got[i], want[i], tol) << what << ", element " << i;
      }
    }
  }
}

// autocast's casts (ops::cast) against Tensor::to, both ways, contiguous and strided.
TEST(Ops16Bit, CastsMatchTensorTo) {
  std::mt19937 gen(16);
  Tensor f = empty({5, 333}, Dtype::Float32);
  auto* fp = static_cast<uint32_t*>(f.data_ptr());
  for (int64_t i = 0; i < f.numel(); ++i) fp[i] = static_cast<uint32_t>(gen());
  for (Dtype d : kDtypes) {
    for (const Tensor& src : {f, f.transpose(0, 1)}) {
      EXPECT_EQ(bits_of(cast(src, d)), bits_of(src.to(d)));
      const Tensor h = make16({5, 333}, d, 17);
      for (const Tensor& h_src : {h, h.transpose(0, 1)}) {
        const std::vector<uint16_t> wide = bits_of(cast(h_src, Dtype::Float32).to(d));
        const Tensor back = cast(h_src, Dtype::Float32);
        EXPECT_EQ(std::memcmp(back.contiguous().data_ptr(),
                              h_src.to(Dtype::Float32).contiguous().data_ptr(),
                              static_cast<size_t>(back.numel()) * 4),
                  0);
        EXPECT_EQ(wide.size(), static_cast<size_t>(h.numel()));
      }
    }
  }
}

// Bits of x at index[...] along dim (x's shape without dim): the rows along dim, picked.
std::vector<uint16_t> bits_at(const Tensor& x, int64_t dim, const Tensor& index) {
  Shape perm;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (d != dim) perm.push_back(d);
  }
  perm.push_back(dim);
  const std::vector<uint16_t> rows = bits_of(x.permute(perm));
  const std::vector<int64_t> at = index.to_vector<int64_t>();
  std::vector<uint16_t> out;
  for (size_t r = 0; r < at.size(); ++r) out.push_back(rows[r * x.size(dim) + at[r]]);
  return out;
}

// Reductions of 16-bit inputs accumulate in float64 and round once from it: the same sums on the
// float64 copies, rounded by Tensor::to. max and min select: the float32 copies' result.
TEST(Ops16Bit, ReductionsRoundOnceFromFloat64) {
  for (Dtype d : kDtypes) {
    // Rows of 1,000 (three chunks and a tail of 232), finite and with specials.
    const Tensor x = make16({3, 5, 1000}, d, 20, true), xs = make16({3, 5, 1000}, d, 21);
    const Tensor expanded = make16({5, 1}, d, 22, true).expand({5, 300});  // stride 0
    const std::vector<std::pair<Tensor, std::string>> inputs = {{x, "finite"},
                                                                {xs, "specials"},
                                                                {x.transpose(0, 2), "transposed"},
                                                                {x.narrow(2, 3, 517), "narrowed"},
                                                                {expanded, "expanded"}};
    for (const auto& [in, what] : inputs) {
      const Tensor in64 = in.to(Dtype::Float64);
      const std::string where = what + " in " + std::string(dtype_name(d));
      EXPECT_EQ(bits_of(sum(in)), bits_of(sum(in64).to(d))) << "sum all, " << where;
      for (const Shape& dims : {Shape{0}, Shape{1}, Shape{-1}, Shape{0, in.dim() - 1}}) {
        EXPECT_EQ(bits_of(sum(in, dims)), bits_of(sum(in64, dims).to(d))) << "sum, " << where;
        EXPECT_EQ(bits_of(mean(in, dims, true)), bits_of(mean(in64, dims, true).to(d)))
            << "mean, " << where;
      }
      EXPECT_EQ(bits_of(mean(in)), bits_of(mean(in64).to(d))) << "mean all, " << where;
      for (int64_t dim = 0; dim < in.dim(); ++dim) {  // values are the input's bits
        const auto [values, indices] = max(in, dim);
        const auto [values32, indices32] = max(in.to(Dtype::Float32), dim);
        EXPECT_EQ(bits_of(values), bits_at(in, dim, indices)) << "max(dim), " << where;
        EXPECT_EQ(indices.to_vector<int64_t>(), indices32.to_vector<int64_t>())
            << "max(dim) indices, " << where;
        const auto [low, low_at] = min(in, dim);
        const auto [low32, low_at32] = min(in.to(Dtype::Float32), dim);
        EXPECT_EQ(low_at.to_vector<int64_t>(), low_at32.to_vector<int64_t>())
            << "min(dim) indices, " << where;
      }
      expect_rounded_from(max(in), max(in.to(Dtype::Float32)), "max all, " + where);
      expect_rounded_from(min(in), min(in.to(Dtype::Float32)), "min all, " + where);
    }
    // sum_to (broadcasting's gradient), and a sum that runs in parallel-sized input.
    const Tensor big = make16({70001}, d, 23, true);
    EXPECT_EQ(bits_of(sum(big)), bits_of(sum(big.to(Dtype::Float64)).to(d)));
    EXPECT_EQ(bits_of(sum_to(x, {5, 1})), bits_of(sum_to(x.to(Dtype::Float64), {5, 1}).to(d)));
  }
}

TEST(Ops16Bit, SoftmaxRoundsOnceFromFloat32) {
  for (Dtype d : kDtypes) {
    const Tensor x = make16({3, 5, 1000}, d, 24);  // specials: NaN and inf rows too
    const Tensor big = make16({70001}, d, 25, true);
    const std::vector<std::pair<Tensor, int64_t>> cases = {{x, 2},
                                                           {x, 1},
                                                           {x, 0},
                                                           {x.transpose(0, 2), 0},
                                                           {x.narrow(2, 1, 300), -1},
                                                           {big, 0},
                                                           {make16({}, d, 26), 0}};
    for (const auto& [in, dim] : cases) {
      const Tensor in32 = in.to(Dtype::Float32);
      const std::string where = "dim " + std::to_string(dim) + " of " + std::to_string(in.dim()) +
                                "-d " + std::string(dtype_name(d));
      expect_rounded_from(softmax(in, dim), softmax(in32, dim), "softmax, " + where);
      expect_rounded_from(log_softmax(in, dim), log_softmax(in32, dim), "log_softmax, " + where);
    }
  }
}

// The backwards are compositions of 16-bit ops, each rounding once: the same formulas on the
// float32 copies, each step rounded (sums from float64), give the same bits.
TEST(Ops16Bit, SoftmaxGradientsRoundEachStep) {
  for (Dtype d : kDtypes) {
    const auto r = [d](const Tensor& t) { return t.to(d).to(Dtype::Float32); };
    const auto rsum = [d](const Tensor& t) {
      return sum(t.to(Dtype::Float64), {1}, true).to(d).to(Dtype::Float32);
    };
    const Tensor x = make16({7, 777}, d, 27, true).requires_grad_();
    const Tensor g = make16({7, 777}, d, 28, true), g32 = g.to(Dtype::Float32);
    const Tensor y = softmax(x, 1), y32 = y.detach().to(Dtype::Float32);
    const Tensor dx = autograd::grad({y}, {x}, {g})[0];
    // y * (g - sum(g * y))
    const Tensor want = mul(y32, r(sub(g32, rsum(r(mul(g32, y32))))));
    expect_rounded_from(dx, want, "softmax backward in " + std::string(dtype_name(d)));
    const Tensor ly = log_softmax(x, 1), ly32 = ly.detach().to(Dtype::Float32);
    const Tensor ldx = autograd::grad({ly}, {x}, {g})[0];
    // g - exp(y) * sum(g)
    const Tensor lwant = sub(g32, r(mul(r(exp(ly32)), rsum(g32))));
    expect_rounded_from(ldx, lwant, "log_softmax backward in " + std::string(dtype_name(d)));
  }
}

}  // namespace
}  // namespace aclgrad
