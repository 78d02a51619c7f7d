// Helpers of the convolution tests: a naive float64 convolution written from the formula
// (independent of libaclnn), non-contiguous copies of tensors, and small conveniences.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "ops/ops.h"
#include "tests/ops/ops_test_util.h"

// Expects `part` inside `text` (gmock's HasSubstr without gmock); evaluates text once.
#define EXPECT_CONTAINS(text, part)                                    \
  do {                                                                 \
    const std::string text_ = (text);                                  \
    EXPECT_NE(text_.find(part), std::string::npos) << "in: " << text_; \
  } while (0)

namespace aclgrad::testing {

/// conv{nd}d / conv_transpose{nd}d by rank.
inline Tensor conv_nd(int64_t nd, const Tensor& x, const Tensor& w, const Tensor& b,
                      const ConvOptions& o) {
  return nd == 1 ? conv1d(x, w, b, o) : nd == 2 ? conv2d(x, w, b, o) : conv3d(x, w, b, o);
}
inline Tensor conv_transpose_nd(int64_t nd, const Tensor& x, const Tensor& w, const Tensor& b,
                                const ConvTransposeOptions& o) {
  return nd == 1   ? conv_transpose1d(x, w, b, o)
         : nd == 2 ? conv_transpose2d(x, w, b, o)
                   : conv_transpose3d(x, w, b, o);
}

/// nd spatial sizes counting down from first, e.g. 2d: [6, 5].
inline Shape spatial(int64_t nd, int64_t first) {
  Shape s;
  for (int64_t i = 0; i < nd; ++i) s.push_back(first - i);
  return s;
}
/// a followed by b.
inline Shape join(Shape a, const Shape& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

/// Sets an environment variable for a scope (restoring the previous value).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, had_ = true;
    setenv(name, value, 1);
  }
  ~ScopedEnv() { had_ ? setenv(name_, old_.c_str(), 1) : unsetenv(name_); }

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

/// Geometry of a reference convolution; every vector has one entry per spatial dim.
struct RefConv {
  bool transposed = false;
  Shape stride, pad_left, pad_right, dilation, output_padding;
  int64_t groups = 1;
};

/// A RefConv with the same value in every one of nd dims (symmetric padding).
inline RefConv ref_conv(int64_t nd, int64_t stride, int64_t padding, int64_t dilation,
                        int64_t groups, bool transposed = false, int64_t output_padding = 0) {
  const auto n = static_cast<size_t>(nd);
  return RefConv{transposed,
                 Shape(n, stride),
                 Shape(n, padding),
                 Shape(n, padding),
                 Shape(n, dilation),
                 Shape(n, output_padding),
                 groups};
}

/// y = conv(x, w) + b straight from the definition, in float64. x [N, C_in, *in] (batched),
/// w [C_out, C_in / g, *k] or, transposed, [C_in, C_out / g, *k]; b undefined or [C_out].
///   regular:    y[n, o, p] = b[o] + sum_{c, k} x[n, g(o) * Cig + c, p * s - pl + k * d] w[o, c, k]
///   transposed: y[n, g * Cog + o, q * s - pl + k * d] += x[n, i, q] w[i, o, k], g = i / Cig
inline Tensor naive_conv(const Tensor& x, const Tensor& w, const Tensor& b, const RefConv& p) {
  const int64_t nd = x.dim() - 2;
  const std::vector<double> xv = x.to_vector<double>(), wv = w.to_vector<double>();
  const std::vector<double> bv = b.defined() ? b.to_vector<double>() : std::vector<double>();
  // Promote to 3 spatial dims with leading unit dims.
  auto sp3 = [&](const Shape& v, int64_t fill) {
    Shape r(3, fill);
    for (int64_t i = 0; i < nd; ++i) r[3 - nd + i] = v[i];
    return r;
  };
  const Shape in = sp3(Shape(x.sizes().begin() + 2, x.sizes().end()), 1);
  const Shape k = sp3(Shape(w.sizes().begin() + 2, w.sizes().end()), 1);
  const Shape s = sp3(p.stride, 1), d = sp3(p.dilation, 1), pl = sp3(p.pad_left, 0),
              pr = sp3(p.pad_right, 0), op = sp3(p.output_padding, 0);
  const int64_t N = x.size(0), C_in = x.size(1), g = p.groups;
  const int64_t C_out = p.transposed ? w.size(1) * g : w.size(0);
  const int64_t Cig = C_in / g, Cog = C_out / g;
  Shape out(3);
  for (int i = 0; i < 3; ++i) {
    out[i] = p.transposed ? (in[i] - 1) * s[i] - pl[i] - pr[i] + d[i] * (k[i] - 1) + op[i] + 1
                          : (in[i] + pl[i] + pr[i] - d[i] * (k[i] - 1) - 1) / s[i] + 1;
  }
  const int64_t in_sz = in[0] * in[1] * in[2], out_sz = out[0] * out[1] * out[2];
  const int64_t k_sz = k[0] * k[1] * k[2];
  std::vector<double> y(static_cast<size_t>(N * C_out * out_sz), 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < C_out; ++o)
      for (int64_t j = 0; j < out_sz; ++j) y[(n * C_out + o) * out_sz + j] = bv.empty() ? 0 : bv[o];
  // Visits every (output position, input position, tap) triple linked by the geometry.
  for (int64_t a0 = 0; a0 < (p.transposed ? in[0] : out[0]); ++a0)
    for (int64_t a1 = 0; a1 < (p.transposed ? in[1] : out[1]); ++a1)
      for (int64_t a2 = 0; a2 < (p.transposed ? in[2] : out[2]); ++a2)
        for (int64_t t0 = 0; t0 < k[0]; ++t0)
          for (int64_t t1 = 0; t1 < k[1]; ++t1)
            for (int64_t t2 = 0; t2 < k[2]; ++t2) {
              const int64_t a[3] = {a0, a1, a2}, t[3] = {t0, t1, t2};
              int64_t b3[3];  // the other side's position: input (regular) / output (transposed)
              bool inside = true;
              for (int i = 0; i < 3; ++i) {
                b3[i] = a[i] * s[i] - pl[i] + t[i] * d[i];
                inside = inside && b3[i] >= 0 && b3[i] < (p.transposed ? out[i] : in[i]);
              }
              if (!inside) continue;
              const int64_t ai =
                  (a0 * (p.transposed ? in : out)[1] + a1) * (p.transposed ? in : out)[2] + a2;
              const int64_t bi =
                  (b3[0] * (p.transposed ? out : in)[1] + b3[1]) * (p.transposed ? out : in)[2] +
                  b3[2];
              const int64_t ti = (t0 * k[1] + t1) * k[2] + t2;
              for (int64_t n = 0; n < N; ++n)
                for (int64_t gr = 0; gr < g; ++gr)
                  for (int64_t c = 0; c < Cig; ++c)
                    for (int64_t o = 0; o < Cog; ++o) {
                      const int64_t ci = gr * Cig + c, co = gr * Cog + o;
                      if (!p.transposed) {
                        y[(n * C_out + co) * out_sz + ai] +=
                            xv[(n * C_in + ci) * in_sz + bi] * wv[(co * Cig + c) * k_sz + ti];
                      } else {
                        y[(n * C_out + co) * out_sz + bi] +=
                            xv[(n * C_in + ci) * in_sz + ai] * wv[(ci * Cog + o) * k_sz + ti];
                      }
                    }
            }
  Shape shape = {N, C_out};
  for (int64_t i = 0; i < nd; ++i) shape.push_back(out[3 - nd + i]);
  return from_vector(y, shape, Dtype::Float64);
}

/// conv_tbc from the definition: out[t, b, o] = bias[o] + sum_{k, c} x[t + k - pad, b, c] w[k, c,
/// o].
inline Tensor naive_conv_tbc(const Tensor& x, const Tensor& w, const Tensor& b, int64_t pad) {
  const int64_t T = x.size(0), B = x.size(1), C = x.size(2), K = w.size(0), O = w.size(2);
  const int64_t T_out = T + 2 * pad + 1 - K;
  const std::vector<double> xv = x.to_vector<double>(), wv = w.to_vector<double>();
  const std::vector<double> bv = b.defined() ? b.to_vector<double>() : std::vector<double>(O, 0.0);
  std::vector<double> y(static_cast<size_t>(T_out * B * O));
  for (int64_t t = 0; t < T_out; ++t)
    for (int64_t bb = 0; bb < B; ++bb)
      for (int64_t o = 0; o < O; ++o) {
        double acc = bv[o];
        for (int64_t kk = 0; kk < K; ++kk) {
          const int64_t ti = t + kk - pad;
          if (ti < 0 || ti >= T) continue;
          for (int64_t c = 0; c < C; ++c)
            acc += xv[(ti * B + bb) * C + c] * wv[(kk * C + c) * O + o];
        }
        y[(t * B + bb) * O + o] = acc;
      }
  return from_vector(y, {T_out, B, O}, Dtype::Float64);
}

/// The values of t in a non-contiguous layout with a storage offset: the dims reversed in memory
/// (a permuted view) and the last dim taken with step 2 from a larger zero buffer. A new leaf.
inline Tensor scattered(const Tensor& t, bool requires_grad) {
  const int64_t r = t.dim();
  Shape base_sizes(static_cast<size_t>(r)), reverse(static_cast<size_t>(r));
  for (int64_t i = 0; i < r; ++i) {
    base_sizes[i] = t.size(r - 1 - i) + 1;
    reverse[i] = r - 1 - i;
  }
  base_sizes[0] = 2 * t.size(r - 1) + 1;
  Tensor v = zeros(base_sizes, t.dtype()).slice(0, 1, 1 + 2 * t.size(r - 1), 2);
  for (int64_t i = 1; i < r; ++i) v = v.narrow(i, 1, t.size(r - 1 - i));
  v = v.permute(reverse);
  v.copy_(t.detach());
  Tensor out = v.detach();
  if (requires_grad) out.requires_grad_();
  return out;
}

/// Largest |a - b| over two tensors of equal shape (as float64).
inline double max_abs_diff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.sizes(), b.sizes());
  const std::vector<double> av = a.to_vector<double>(), bv = b.to_vector<double>();
  double worst = 0;
  for (size_t i = 0; i < av.size() && i < bv.size(); ++i)
    worst = std::max(worst, std::abs(av[i] - bv[i]));
  return worst;
}

}  // namespace aclgrad::testing
