// The convolution engine behind all four convolution APIs: a validated ConvJob (regular geometry +
// operand views, captured by value) becomes an executor whose run() uses only the workspace.
//
// Every API maps onto a regular geometry G and the three primitives of algorithm.h:
//
//   regular conv          forward:         y  = forward(x = input, w)              (+ bias)
//                         gradInput:       dx = backward_data(dy = gradOutput, w)
//                         gradWeight:      dw = backward_weight(x = input, dy = gradOutput)
//   transposed conv       G is the regular conv whose backward-data the transposed conv is:
//   (weight [C_in_t,      G.C_in = C_out_t, G.C_out = C_in_t, G.in = output spatial size,
//    C_out_t/g, k...])    G.out = input spatial size, G's weight layout [G.C_out, G.C_in/g, k...]
//                         is exactly the transposed weight's.
//                         forward:         y_t = backward_data(dy := input, w)     (+ bias)
//                         gradInput:       forward(x := gradOutput, w)
//                         gradWeight:      backward_weight(x := gradOutput, dy := input)
//   ConvTbc               conv1d on permuted views: input [T,B,C] as [B,C,T], weight [K,Cin,Cout]
//                         as [Cout,Cin,K], output/self [T_out,B,Cout] as [B,Cout,T_out].
//   gradBias              sum of gradOutput over N and the spatial dims (bias_sum_of says whether
//                         gradOutput plays G's x or y role).
#pragma once

#include <cstdint>
#include <optional>

#include "aclnn/aclnn_base.h"
#include "conv/engine/geometry.h"
#include "conv/engine/strided.h"

namespace aclnn_cpu::conv {

struct ConvJob {
  ConvGeometry g;
  bool use_double = false;     // compute in double (some operand is DOUBLE) instead of float
  Round round = Round::kNone;  // rounding of the GEMM operands x, w, y (float compute only)

  // Inputs in G's roles, as 5-d views: x [N, C_in, in...], w [C_out, C_in/g, k...],
  // y [N, C_out, out...]; bias [1, C, 1, 1, 1] is added to the out_y or out_x result.
  std::optional<View5> x, w, y, bias;

  // Requested results (absent = not computed, memory untouched).
  std::optional<View5> out_y;     // forward(x, w)
  std::optional<View5> out_x;     // backward_data(y, w)
  std::optional<View5> out_w;     // backward_weight(x, y)
  std::optional<View5> out_bias;  // [1, C, 1, 1, 1] channel sums of x or y
  enum class BiasOf { kX, kY } bias_sum_of = BiasOf::kY;
};

// Largest workspace phase 1 agrees to ask for.
inline constexpr uint64_t kMaxWorkspaceBytes = uint64_t{1} << 46;

// Phase 1 tail: plans `job` (throws ApiError 161002 when it is too large for this implementation)
// and returns a registered executor for `api` plus the workspace size it needs.
aclOpExecutor* make_executor(const char* api, ConvJob job, uint64_t* workspace_size);

}  // namespace aclnn_cpu::conv
