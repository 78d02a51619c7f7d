// aclnnConvTbc and aclnnConvTbcBackward: the temporal convolution of fairseq / PyTorch conv_tbc,
//   output[t, b, o] = bias[o] + sum_{k, c} input[t + k - pad, b, c] * weight[k, c, o],
// with T_out = T + 2 * pad + 1 - K. It is a conv1d on permuted views, so both APIs run through the
// convolution engine with no kernel of their own: input [T, B, C_in] is viewed as [B, C_in, T],
// weight [K, C_in, C_out] as [C_out, C_in, K], self/output [T_out, B, C_out] as [B, C_out, T_out].
//
// Validation order: SoC (aclnnConvTbcBackward: Ascend910B / Ascend910_93 only, the 003 product
// table) -> nulls (161001; every pointer, bias included) -> dtypes (supported; self/input/weight/
// bias all equal; each output has its source's dtype) -> formats (ND or NCL, bias/gradBias too) ->
// pad in [0, 255] -> cubeMathType (backward: USE_HF32 only for FLOAT, USE_FP16 not for BFLOAT16)
// -> shapes (3-d, bias 1-d, sane layouts, backward outputs contiguous, no empty tensor, dims <=
// 2147483646, K in [1, 255], input[2] == weight[1], bias[0] == weight[2], inferred T_out >= 1 and
// equal to the result's, outputs equal to their sources). The forward aclnnConvTbc (no document
// here) takes the same rules except the SoC list (all but Ascend310P) and the cubeMathType 3
// restriction.
#include <cstring>
#include <vector>

#include "aclnnop/aclnn_convolution.h"
#include "aclnnop/aclnn_convolution_backward.h"
#include "conv/api/checks.h"
#include "conv/api/overlap.h"
#include "conv/engine/engine.h"
#include "error.h"

using namespace aclnn_cpu;
using namespace aclnn_cpu::conv;

namespace {

constexpr int64_t kMaxPad = 255;
constexpr int64_t kMaxKernel = 255;
// 003 constraint table: every dim in [1, 2147483646]. 003 is this API's only document, so the bound
// holds here, while aclnnConvolutionBackward's newer documents dropped 001's equal bound.
constexpr int64_t kMaxDim = 2147483646;

struct Named {
  const char* name;
  const aclTensor* t;
};

// The tensors of either API by role.
struct Tbc {
  const char* api;
  Named x;       // the convolution's input: self (forward) or input (backward)
  Named weight;  // [K, C_in, C_out]
  Named bias;    // [C_out]
  Named result;  // shaped [T_out, B, C_out]: output (forward, an output) or self (backward)
  bool result_is_output;
  std::vector<std::pair<Named, Named>> grads;  // backward outputs and the tensor each mirrors
  int64_t pad;
  int8_t cube;
};

View5 tbc_activation(const aclTensor* t) {
  return make_view(t, {1, 2, -1, -1, 0});  // [T, B, C] -> [B, C, 1, 1, T]
}
View5 tbc_weight(const aclTensor* t) {
  return make_view(t, {2, 1, -1, -1, 0});  // [K, C_in, C_out] -> [C_out, C_in, 1, 1, K]
}

void check_rank(const Named& n, int64_t rank) {
  check(n.t->dim() == rank, ACLNN_ERR_PARAM_INVALID, n.name, " has ", n.t->dim(), " dims (shape ",
        shape_of(n.t), ") but must be ", rank == 3 ? "3-d" : "1-d");
}

void check_not_empty(const Named& n) {
  for (int64_t d : n.t->view_dims)
    check(d >= 1, ACLNN_ERR_PARAM_INVALID, n.name, " has shape ", shape_of(n.t),
          " with a zero dim; conv_tbc does not support empty tensors");
}

void check_dim_range(const Named& n) {
  for (size_t i = 0; i < n.t->view_dims.size(); ++i)
    check(n.t->view_dims[i] <= kMaxDim, ACLNN_ERR_PARAM_INVALID, n.name, " has shape ",
          shape_of(n.t), ": dim ", i, " = ", n.t->view_dims[i], " is out of range [1, ", kMaxDim,
          "]");
}

// The SoC list: the backward is documented for Atlas A2/A3 only (003); the forward is refused
// only on Ascend310P.
SocProfile soc_for(const Tbc& t) {
  const SocProfile soc = current_soc(t.api);
  if (t.result_is_output) {
    check(std::strcmp(soc.name, "Ascend310P") != 0, ACLNN_ERR_PARAM_INVALID, t.api,
          " is not supported on ", soc.name);
  } else {
    check(soc.a2, ACLNN_ERR_PARAM_INVALID, t.api, " is not supported on ", soc.name,
          "; it is supported on Ascend910B and Ascend910_93 (Atlas A2/A3) only");
  }
  return soc;
}

// Stages 2-6 (the callers did the null checks); returns the conv1d geometry.
ConvGeometry validate(const Tbc& t, const SocProfile& soc, Round* round) {
  std::vector<Named> inputs = {t.x, t.weight, t.bias};
  if (!t.result_is_output) inputs.insert(inputs.begin(), t.result);
  const Named& first = inputs.front();

  // 2. Data types.
  for (const Named& n : inputs) check_dtype(n.name, n.t, soc);
  for (const Named& n : inputs)
    check(n.t->dtype == first.t->dtype, ACLNN_ERR_PARAM_INVALID, n.name, " has dtype ",
          dtype_name(n.t->dtype), " but ", first.name, " has ", dtype_name(first.t->dtype), "; ",
          t.result_is_output ? "self, weight and bias" : "self, input, weight and bias",
          " must have the same dtype");
  std::vector<std::pair<Named, Named>> outs = t.grads;
  if (t.result_is_output) outs.emplace_back(t.result, t.x);
  for (const auto& [out, src] : outs) {
    check_dtype(out.name, out.t, soc);
    check_same_dtype(out.name, out.t, src.name, src.t);
  }

  // 3. Formats (003: ND or NCL for every tensor).
  for (const Named& n : inputs) check_format(n.name, n.t, {ACL_FORMAT_ND, ACL_FORMAT_NCL});
  for (const auto& [out, src] : outs)
    check_format(out.name, out.t, {ACL_FORMAT_ND, ACL_FORMAT_NCL});

  // 4. pad, 5. cubeMathType.
  check(t.pad >= 0 && t.pad <= kMaxPad, ACLNN_ERR_PARAM_INVALID, "pad = ", t.pad,
        " is invalid; pad must be in [0, ", kMaxPad, "]");
  *round = check_cube_math(t.cube, first.t->dtype, soc, !t.result_is_output);

  // 6. Shapes.
  for (const Named& n : inputs) check_rank(n, n.t == t.bias.t ? 1 : 3);
  check_rank(t.result, 3);
  for (const auto& [out, src] : outs) check_rank(out, src.t == t.bias.t ? 1 : 3);
  for (const Named& n : inputs) check_layout(n.name, n.t, false);
  for (const auto& [out, src] : outs) check_layout(out.name, out.t, true);
  for (const auto& [out, src] : t.grads) check_contiguous_output(out.name, out.t, soc);
  for (const Named& n : inputs) check_not_empty(n);
  for (const Named& n : {t.x, t.weight, t.result}) check_dim_range(n);
  const auto& xd = t.x.t->view_dims;
  const auto& wd = t.weight.t->view_dims;
  check(wd[0] <= kMaxKernel, ACLNN_ERR_PARAM_INVALID, "weight has shape ", shape_of(t.weight.t),
        ": kernel size weight[0] = ", wd[0], " is out of range [1, ", kMaxKernel, "]");
  check(xd[2] == wd[1], ACLNN_ERR_PARAM_INVALID, t.x.name, " has shape ", shape_of(t.x.t),
        " but weight ", shape_of(t.weight.t), " expects ", t.x.name, "[2] == weight[1] = ", wd[1],
        " input channels");
  check(t.bias.t->view_dims[0] == wd[2], ACLNN_ERR_PARAM_INVALID, "bias has shape ",
        shape_of(t.bias.t), " but weight ", shape_of(t.weight.t), " has weight[2] = ", wd[2],
        " output channels; they must be equal");
  const int64_t t_out = xd[0] + 2 * t.pad + 1 - wd[0];
  check(t_out >= 1, ACLNN_ERR_PARAM_INVALID, t.x.name, " has shape ", shape_of(t.x.t),
        ": T = ", xd[0], " with pad ", t.pad, " is too short for kernel size K = ", wd[0],
        " (T + 2 * pad + 1 - K = ", t_out, " must be >= 1)");
  const std::vector<int64_t> expected = {t_out, xd[1], wd[2]};
  check(t.result.t->view_dims == expected, ACLNN_ERR_PARAM_INVALID, t.result.name, " has shape ",
        shape_of(t.result.t), " but conv_tbc of ", t.x.name, " ", shape_of(t.x.t), " with weight ",
        shape_of(t.weight.t), " and pad ", t.pad, " produces ", shape_str(expected));
  for (const auto& [out, src] : t.grads)
    check(out.t->view_dims == src.t->view_dims, ACLNN_ERR_PARAM_INVALID, out.name, " has shape ",
          shape_of(out.t), " but ", src.name, " has shape ", shape_of(src.t),
          "; they must be equal");

  // 7. Memory: no output overlaps an input or another output.
  std::vector<NamedTensor> in_mem, out_mem;
  for (const Named& n : inputs) in_mem.push_back({n.name, n.t});
  for (const auto& [out, src] : outs) out_mem.push_back({out.name, out.t});
  check_no_overlap(in_mem, out_mem);

  ConvGeometry g;
  g.N = xd[1];
  g.C_in = wd[1];
  g.C_out = wd[2];
  g.groups = 1;
  g.in[2] = xd[0];
  g.k[2] = wd[0];
  g.pad_before[2] = g.pad_after[2] = t.pad;
  g.out[2] = t_out;
  return g;
}

}  // namespace

extern "C" {

aclnnStatus aclnnConvTbcGetWorkspaceSize(const aclTensor* self, const aclTensor* weight,
                                         const aclTensor* bias, const int64_t pad,
                                         aclTensor* output, int8_t cubeMathType,
                                         uint64_t* workspaceSize, aclOpExecutor** executor) {
  constexpr const char* kApi = "aclnnConvTbc";
  return guard_aclnn(kApi, [&] {
    require(self, "self");
    require(weight, "weight");
    require(bias, "bias");
    require(output, "output");
    require(workspaceSize, "workspaceSize");
    require(executor, "executor");
    Tbc t{kApi, {"self", self}, {"weight", weight}, {"bias", bias}, {"output", output}, true, {},
          pad,  cubeMathType};
    const SocProfile soc = soc_for(t);
    Round round = Round::kNone;
    ConvJob job;
    job.g = validate(t, soc, &round);
    job.use_double = self->dtype == ACL_DOUBLE;
    job.round = round;
    job.x = tbc_activation(self);
    job.w = tbc_weight(weight);
    job.bias = channel_view(bias);
    job.out_y = tbc_activation(output);
    *executor = make_executor(kApi, std::move(job), workspaceSize);
    return ACLNN_SUCCESS;
  });
}

aclnnStatus aclnnConvTbc(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                         const aclrtStream stream) {
  return launch("aclnnConvTbc", workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnConvTbcBackwardGetWorkspaceSize(const aclTensor* self, const aclTensor* input,
                                                 const aclTensor* weight, const aclTensor* bias,
                                                 int64_t pad, int8_t cubeMathType,
                                                 aclTensor* gradInput, aclTensor* gradWeight,
                                                 aclTensor* gradBias, uint64_t* workspaceSize,
                                                 aclOpExecutor** executor) {
  constexpr const char* kApi = "aclnnConvTbcBackward";
  return guard_aclnn(kApi, [&] {
    Tbc t{kApi,
          {"input", input},
          {"weight", weight},
          {"bias", bias},
          {"self", self},
          false,
          {{{"gradInput", gradInput}, {"input", input}},
           {{"gradWeight", gradWeight}, {"weight", weight}},
           {{"gradBias", gradBias}, {"bias", bias}}},
          pad,
          cubeMathType};
    require(self, "self");
    require(input, "input");
    require(weight, "weight");
    require(bias, "bias");
    require(gradInput, "gradInput");
    require(gradWeight, "gradWeight");
    require(gradBias, "gradBias");
    require(workspaceSize, "workspaceSize");
    require(executor, "executor");
    const SocProfile soc = soc_for(t);
    Round round = Round::kNone;
    ConvJob job;
    job.g = validate(t, soc, &round);
    job.use_double = self->dtype == ACL_DOUBLE;
    job.round = round;
    job.x = tbc_activation(input);
    job.w = tbc_weight(weight);
    job.y = tbc_activation(self);
    job.out_x = tbc_activation(gradInput);
    job.out_w = tbc_weight(gradWeight);
    job.out_bias = channel_view(gradBias);
    job.bias_sum_of = ConvJob::BiasOf::kY;
    *executor = make_executor(kApi, std::move(job), workspaceSize);
    return ACLNN_SUCCESS;
  });
}

aclnnStatus aclnnConvTbcBackward(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                 const aclrtStream stream) {
  return launch("aclnnConvTbcBackward", workspace, workspaceSize, executor, stream);
}

}  // extern "C"
