// The float64 naive reference for convolution (regular and transposed, 1d/2d/3d) and ConvTbc,
// written from the defining sums with direct loops (no im2col, no GEMM, no fast path). Every
// result comes with a per-element `scale` = sum of |terms| that made it, so tests can state
// tolerances relative to the magnitude of the sum rather than to its (possibly cancelled) value.
//
// Regular (weight [C_out, C_in/g, k...]):
//   y[n, g*Cog+co, o] = b[g*Cog+co] + sum_{ci,k} x[n, g*Cig+ci, o*s - pb + k*d] * w[g*Cog+co, ci,
//   k]
// Transposed (weight [C_in, C_out/g, k...]), its own definition (the adjoint of the regular one):
//   y[n, g*Cog+co, o] += x[n, g*Cig+ci, i] * w[g*Cig+ci, co, k]   where o = i*s - pb + k*d
// (both per spatial dim; a term whose index falls outside [0, size) is absent). Backward
// distributes gy over the same terms: dL/dx += gy * w, dL/dw += gy * x, dL/db = sum gy.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "acl/acl_base.h"

namespace naive {

struct ConvGeom {
  std::vector<int64_t> input;   // [N, C_in, spatial...] (1 to 3 spatial dims)
  std::vector<int64_t> weight;  // regular [C_out, C_in/g, k...]; transposed [C_in, C_out/g, k...]
  std::vector<int64_t> stride, pad_before, pad_after, dilation, output_padding;  // per spatial dim
  bool transposed = false;
  int64_t groups = 1;

  size_t spatial() const { return input.size() - 2; }
  int64_t out_channels() const { return transposed ? weight[1] * groups : weight[0]; }
  // [N, C_out, out...]: regular out = (in + pb + pa - d*(k-1) - 1) / s + 1;
  // transposed out = (in - 1)*s - pb - pa + d*(k-1) + output_padding + 1.
  std::vector<int64_t> output() const;
  std::string Describe() const;
};

// A reference result: values (row-major) and, per element, the sum of |terms| that produced it.
struct Result {
  std::vector<double> value, scale;
};

// y = conv(x, w) + bias (bias may be empty: no bias).
Result ConvForward(const ConvGeom& g, const std::vector<double>& x, const std::vector<double>& w,
                   const std::vector<double>& bias);

struct Grads {
  Result input, weight, bias;  // shapes: g.input, g.weight, [C_out]
};
Grads ConvBackward(const ConvGeom& g, const std::vector<double>& grad_out,
                   const std::vector<double>& x, const std::vector<double>& w);

// ConvTbc: input [T, B, C_in], weight [K, C_in, C_out], bias [C_out], out [T_out, B, C_out] with
// T_out = T + 2*pad + 1 - K and out[t, b, co] = bias[co] + sum_{k,ci} in[t - pad + k, b, ci] *
// w[k, ci, co] (terms with t - pad + k outside [0, T) are absent).
struct TbcGeom {
  int64_t T = 1, B = 1, C_in = 1, C_out = 1, K = 1, pad = 0;
  int64_t t_out() const { return T + 2 * pad + 1 - K; }
  std::string Describe() const;
};
Result TbcForward(const TbcGeom& g, const std::vector<double>& x, const std::vector<double>& w,
                  const std::vector<double>& bias);
Grads TbcBackward(const TbcGeom& g, const std::vector<double>& grad_out,
                  const std::vector<double>& x, const std::vector<double>& w);

// Operand rounding that cubeMathType applies before the multiply-accumulate (fp32 accumulation):
// FLOAT: KEEP_DTYPE (0) none, ALLOW_FP32_DOWN_PRECISION (1) and USE_HF32 (3) round to HF32,
// USE_FP16 (2) rounds to fp16. FLOAT16 / BF16 operands are already in their dtype; DOUBLE none.
using Rounder = double (*)(double);
Rounder CubeOperandRounding(aclDataType compute_dtype, int cube_math_type);
std::vector<double> RoundAll(const std::vector<double>& v, Rounder r);

}  // namespace naive
