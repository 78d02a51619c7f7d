#include "support/naive_conv.h"

#include <cmath>
#include <sstream>
#include <stdexcept>

#include "support/acl_test_util.h"

namespace naive {
namespace {

// The geometry padded to three spatial dims (missing ones have size 1 and a unit kernel), with
// row-major element offsets precomputed, so one loop nest serves 1d, 2d and 3d.
struct Nd3 {
  int64_t N, C_in, C_out, groups, cig, cog;
  int64_t in[3], out[3], k[3], s[3], pb[3], d[3];
  int64_t x_index(int64_t n, int64_t c, const int64_t* i) const {
    return (((n * C_in + c) * in[0] + i[0]) * in[1] + i[1]) * in[2] + i[2];
  }
  int64_t y_index(int64_t n, int64_t c, const int64_t* o) const {
    return (((n * C_out + c) * out[0] + o[0]) * out[1] + o[1]) * out[2] + o[2];
  }
  // weight [W0, W1, k0, k1, k2]: regular W0 = C_out, W1 = C_in/g; transposed W0 = C_in, W1 =
  // C_out/g
  int64_t w_index(int64_t c0, int64_t c1, const int64_t* kk, int64_t w1) const {
    return (((c0 * w1 + c1) * k[0] + kk[0]) * k[1] + kk[1]) * k[2] + kk[2];
  }
};

Nd3 Expand(const ConvGeom& g) {
  const size_t sp = g.spatial();
  if (sp < 1 || sp > 3 || g.weight.size() != g.input.size()) {
    throw std::invalid_argument("naive: bad geometry " + g.Describe());
  }
  std::vector<int64_t> out = g.output();
  Nd3 e{};
  e.N = g.input[0];
  e.C_in = g.input[1];
  e.C_out = out[1];
  e.groups = g.groups;
  e.cig = e.C_in / g.groups;
  e.cog = e.C_out / g.groups;
  for (size_t j = 0; j < 3; ++j) {
    bool real = j < sp;
    e.in[j] = real ? g.input[2 + j] : 1;
    e.out[j] = real ? out[2 + j] : 1;
    e.k[j] = real ? g.weight[2 + j] : 1;
    e.s[j] = real ? g.stride[j] : 1;
    e.pb[j] = real ? g.pad_before[j] : 0;
    e.d[j] = real ? g.dilation[j] : 1;
  }
  return e;
}

// Calls term(x_index, w_index, y_index) once for every product x * w of the convolution sum.
template <class F>
void ForEachTerm(const ConvGeom& g, F&& term) {
  const Nd3 e = Expand(g);
  int64_t a[3], kk[3], b[3];  // regular: a = output position, b = input position; transposed: swap
  for (int64_t n = 0; n < e.N; ++n)
    for (int64_t grp = 0; grp < e.groups; ++grp)
      for (int64_t co = 0; co < e.cog; ++co)
        for (int64_t ci = 0; ci < e.cig; ++ci)
          for (a[0] = 0; a[0] < (g.transposed ? e.in[0] : e.out[0]); ++a[0])
            for (a[1] = 0; a[1] < (g.transposed ? e.in[1] : e.out[1]); ++a[1])
              for (a[2] = 0; a[2] < (g.transposed ? e.in[2] : e.out[2]); ++a[2])
                for (kk[0] = 0; kk[0] < e.k[0]; ++kk[0])
                  for (kk[1] = 0; kk[1] < e.k[1]; ++kk[1])
                    for (kk[2] = 0; kk[2] < e.k[2]; ++kk[2]) {
                      bool inside = true;
                      for (int j = 0; j < 3; ++j) {
                        // regular: input index i = o*s - pb + k*d
                        // transposed: output index o = i*s - pb + k*d
                        b[j] = a[j] * e.s[j] - e.pb[j] + kk[j] * e.d[j];
                        int64_t limit = g.transposed ? e.out[j] : e.in[j];
                        inside = inside && b[j] >= 0 && b[j] < limit;
                      }
                      if (!inside) continue;
                      const int64_t cx = grp * e.cig + ci, cy = grp * e.cog + co;
                      if (!g.transposed) {
                        term(e.x_index(n, cx, b), e.w_index(cy, ci, kk, e.cig),
                             e.y_index(n, cy, a));
                      } else {
                        term(e.x_index(n, cx, a), e.w_index(cx, co, kk, e.cog),
                             e.y_index(n, cy, b));
                      }
                    }
}

void Require(size_t got, int64_t want, const char* what, const std::string& where) {
  if (static_cast<int64_t>(got) != want) {
    throw std::invalid_argument("naive: " + std::string(what) + " has " + std::to_string(got) +
                                " values, expected " + std::to_string(want) + " for " + where);
  }
}

Result Zeros(int64_t n) {
  return Result{std::vector<double>(static_cast<size_t>(n), 0.0),
                std::vector<double>(static_cast<size_t>(n), 0.0)};
}

}  // namespace

std::vector<int64_t> ConvGeom::output() const {
  std::vector<int64_t> out{input[0], out_channels()};
  for (size_t j = 0; j < spatial(); ++j) {
    int64_t span = dilation[j] * (weight[2 + j] - 1);
    int64_t o = transposed
                    ? (input[2 + j] - 1) * stride[j] - pad_before[j] - pad_after[j] + span +
                          output_padding[j] + 1
                    : (input[2 + j] + pad_before[j] + pad_after[j] - span - 1) / stride[j] + 1;
    if (!transposed && input[2 + j] + pad_before[j] + pad_after[j] - span - 1 < 0) o = 0;
    out.push_back(o);
  }
  return out;
}

std::string ConvGeom::Describe() const {
  using acltest::ShapeStr;
  std::ostringstream os;
  os << (transposed ? "conv_transpose" : "conv") << spatial() << "d input " << ShapeStr(input)
     << " weight " << ShapeStr(weight) << " stride " << ShapeStr(stride) << " pad "
     << ShapeStr(pad_before) << "/" << ShapeStr(pad_after) << " dilation " << ShapeStr(dilation);
  if (transposed) os << " output_padding " << ShapeStr(output_padding);
  os << " groups " << groups << " -> " << ShapeStr(output());
  return os.str();
}

Result ConvForward(const ConvGeom& g, const std::vector<double>& x, const std::vector<double>& w,
                   const std::vector<double>& bias) {
  const std::vector<int64_t> out = g.output();
  Require(x.size(), acltest::Numel(g.input), "input", g.Describe());
  Require(w.size(), acltest::Numel(g.weight), "weight", g.Describe());
  Result y = Zeros(acltest::Numel(out));
  ForEachTerm(g, [&](int64_t xi, int64_t wi, int64_t yi) {
    double t = x[xi] * w[wi];
    y.value[yi] += t;
    y.scale[yi] += std::fabs(t);
  });
  if (!bias.empty()) {
    Require(bias.size(), out[1], "bias", g.Describe());
    const int64_t inner = acltest::Numel(out) / std::max<int64_t>(out[0] * out[1], 1);
    for (int64_t n = 0; n < out[0]; ++n)
      for (int64_t c = 0; c < out[1]; ++c)
        for (int64_t i = 0; i < inner; ++i) {
          y.value[(n * out[1] + c) * inner + i] += bias[c];
          y.scale[(n * out[1] + c) * inner + i] += std::fabs(bias[c]);
        }
  }
  return y;
}

Grads ConvBackward(const ConvGeom& g, const std::vector<double>& grad_out,
                   const std::vector<double>& x, const std::vector<double>& w) {
  const std::vector<int64_t> out = g.output();
  Require(grad_out.size(), acltest::Numel(out), "grad_out", g.Describe());
  Require(x.size(), acltest::Numel(g.input), "input", g.Describe());
  Require(w.size(), acltest::Numel(g.weight), "weight", g.Describe());
  Grads r{Zeros(acltest::Numel(g.input)), Zeros(acltest::Numel(g.weight)), Zeros(out[1])};
  // Each term x[xi] * w[wi] of y[yi] contributes gy[yi] * w[wi] to dL/dx[xi] and gy[yi] * x[xi]
  // to dL/dw[wi].
  ForEachTerm(g, [&](int64_t xi, int64_t wi, int64_t yi) {
    double tx = grad_out[yi] * w[wi], tw = grad_out[yi] * x[xi];
    r.input.value[xi] += tx;
    r.input.scale[xi] += std::fabs(tx);
    r.weight.value[wi] += tw;
    r.weight.scale[wi] += std::fabs(tw);
  });
  // dL/db[c] = sum over n and output positions of gy[n, c, ...]
  const int64_t inner = acltest::Numel(out) / std::max<int64_t>(out[0] * out[1], 1);
  for (int64_t n = 0; n < out[0]; ++n)
    for (int64_t c = 0; c < out[1]; ++c)
      for (int64_t i = 0; i < inner; ++i) {
        double t = grad_out[(n * out[1] + c) * inner + i];
        r.bias.value[c] += t;
        r.bias.scale[c] += std::fabs(t);
      }
  return r;
}

std::string TbcGeom::Describe() const {
  std::ostringstream os;
  os << "conv_tbc T " << T << " B " << B << " C_in " << C_in << " C_out " << C_out << " K " << K
     << " pad " << pad << " -> T_out " << t_out();
  return os.str();
}

namespace {
// Calls term(x_index, w_index, y_index) for every product of the ConvTbc sum.
template <class F>
void ForEachTbcTerm(const TbcGeom& g, F&& term) {
  for (int64_t t = 0; t < g.t_out(); ++t)
    for (int64_t k = 0; k < g.K; ++k) {
      const int64_t ti = t - g.pad + k;  // input time step feeding out[t] through tap k
      if (ti < 0 || ti >= g.T) continue;
      for (int64_t b = 0; b < g.B; ++b)
        for (int64_t ci = 0; ci < g.C_in; ++ci)
          for (int64_t co = 0; co < g.C_out; ++co) {
            term((ti * g.B + b) * g.C_in + ci, (k * g.C_in + ci) * g.C_out + co,
                 (t * g.B + b) * g.C_out + co);
          }
    }
}
}  // namespace

Result TbcForward(const TbcGeom& g, const std::vector<double>& x, const std::vector<double>& w,
                  const std::vector<double>& bias) {
  Require(x.size(), g.T * g.B * g.C_in, "input", g.Describe());
  Require(w.size(), g.K * g.C_in * g.C_out, "weight", g.Describe());
  Require(bias.size(), g.C_out, "bias", g.Describe());
  Result y = Zeros(g.t_out() * g.B * g.C_out);
  for (int64_t i = 0; i < g.t_out() * g.B; ++i)
    for (int64_t co = 0; co < g.C_out; ++co) {
      y.value[i * g.C_out + co] = bias[co];
      y.scale[i * g.C_out + co] = std::fabs(bias[co]);
    }
  ForEachTbcTerm(g, [&](int64_t xi, int64_t wi, int64_t yi) {
    double t = x[xi] * w[wi];
    y.value[yi] += t;
    y.scale[yi] += std::fabs(t);
  });
  return y;
}

Grads TbcBackward(const TbcGeom& g, const std::vector<double>& grad_out,
                  const std::vector<double>& x, const std::vector<double>& w) {
  Require(grad_out.size(), g.t_out() * g.B * g.C_out, "grad_out", g.Describe());
  Require(x.size(), g.T * g.B * g.C_in, "input", g.Describe());
  Require(w.size(), g.K * g.C_in * g.C_out, "weight", g.Describe());
  Grads r{Zeros(g.T * g.B * g.C_in), Zeros(g.K * g.C_in * g.C_out), Zeros(g.C_out)};
  ForEachTbcTerm(g, [&](int64_t xi, int64_t wi, int64_t yi) {
    double tx = grad_out[yi] * w[wi], tw = grad_out[yi] * x[xi];
    r.input.value[xi] += tx;
    r.input.scale[xi] += std::fabs(tx);
    r.weight.value[wi] += tw;
    r.weight.scale[wi] += std::fabs(tw);
  });
  for (int64_t i = 0; i < g.t_out() * g.B; ++i)
    for (int64_t co = 0; co < g.C_out; ++co) {
      r.bias.value[co] += grad_out[i * g.C_out + co];
      r.bias.scale[co] += std::fabs(grad_out[i * g.C_out + co]);
    }
  return r;
}

namespace {
double Identity(double x) {
  return x;
}
}  // namespace

Rounder CubeOperandRounding(aclDataType compute_dtype, int cube_math_type) {
  switch (compute_dtype) {
    case ACL_FLOAT:
      if (cube_math_type == 1 || cube_math_type == 3) return acltest::RoundToHF32;
      if (cube_math_type == 2) return acltest::RoundToF16;
      return acltest::RoundToF32;
    case ACL_FLOAT16:
      return acltest::RoundToF16;
    case ACL_BF16:
      return acltest::RoundToBF16;
    default:
      return Identity;
  }
}

std::vector<double> RoundAll(const std::vector<double>& v, Rounder r) {
  std::vector<double> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = r(v[i]);
  return out;
}

}  // namespace naive
