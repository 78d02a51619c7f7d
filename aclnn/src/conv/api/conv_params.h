// The convolution-parameter rules aclnnConvolution and aclnnConvolutionBackward share (attribute
// values, shapes incl. the SoC hardware limits and empty-tensor rules, channels/groups), and the
// regular geometry G they describe (see engine.h for how a transposed convolution maps onto G).
#pragma once

#include <cstdint>

#include "aclnn/aclnn_base.h"
#include "conv/api/checks.h"
#include "conv/engine/geometry.h"

namespace aclnn_cpu::conv {

struct ConvParams {
  const aclTensor* input = nullptr;
  const aclTensor* weight = nullptr;
  // The tensor shaped like the convolution's output: gradOutput (backward) or output (forward).
  const aclTensor* result = nullptr;
  const char* result_name = "gradOutput";
  bool result_is_output = false;  // checked like an output (must not overlap itself)
  const aclIntArray* stride = nullptr;
  const aclIntArray* padding = nullptr;
  const aclIntArray* dilation = nullptr;
  const aclIntArray* output_padding = nullptr;
  bool transposed = false;
  int64_t groups = 1;
};

// Attribute stage: stride >= 1, padding >= 0, dilation >= 1 (each <= 2^31-1), outputPadding all
// 0 unless transposed (then 0 <= op < stride), 1 <= groups <= 65535.
void check_attr_values(const ConvParams& p);

// Shape stage: equal ranks (3d only where the SoC has it), sane layouts, array lengths, kernel
// and attribute hardware limits of the SoC, empty-tensor rules, and the result tensor's shape
// equal to the inferred one. Returns the regular geometry.
ConvGeometry check_conv_shapes(const ConvParams& p, const SocProfile& soc);

// Channel stage: regular input C == weight[1] * groups; transposed input C == weight[0];
// weight[0] divisible by groups.
void check_channels(const ConvParams& p);

// Output channels of the convolution (weight[0], or weight[1] * groups when transposed).
int64_t conv_out_channels(const ConvParams& p);

}  // namespace aclnn_cpu::conv
