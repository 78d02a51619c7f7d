// aclnnConvolutionBackward: gradients of a 1d/2d/3d (optionally transposed, grouped, dilated)
// convolution. Phase 1 validates in the documented order
//   nulls (161001) -> dtypes -> formats -> attribute values -> cubeMathType -> shapes -> channels
// (all but nulls 161002), then hands a ConvJob to the engine. The rules are the spec documents'
// (aclnn/CONFORMANCE.md lists each with its source and test):
//   - gradOutput, input, weight, biasSizes, stride, padding, dilation, outputPadding, outputMask,
//     gradInput and gradWeight are never null, whatever the mask; gradBias may be null exactly when
//     outputMask[2] is false (the return-code tables). outputMask must have 3 entries.
//   - every output given is validated (dtype = its source's: gradInput input's, gradWeight
//     weight's, gradBias gradOutput's; format; shape), but only the requested ones are written
//     (and checked for a writable, non-overlapping and, as 002 wants, contiguous layout).
//   - the processors 002 marks unsupported (Ascend310B, Ascend310) are refused (current_soc).
//   - biasSizes is [weight[0]] (regular) or [weight[1] * groups] (transposed).
//   - gradBias must be 1-d ND; its value is the true sum of gradOutput even when input has C = 0.
//   - HIFLOAT8 / FLOAT8_E4M3FN: only on Ascend910_95 with transposed = true and outputMask[0] =
//     true, and then gradOutput, input and weight share that dtype (no promotion covers 8-bit);
//     decoded exactly to fp32, accumulated in fp32, every requested output encoded once
//     (conv/engine/float8.h). Rejected elsewhere, with a message saying where the chip accepts
//     them.
#include "aclnnop/aclnn_convolution_backward.h"

#include <utility>

#include "conv/api/checks.h"
#include "conv/api/overlap.h"
#include "conv/api/conv_params.h"
#include "conv/engine/engine.h"
#include "error.h"

using namespace aclnn_cpu;
using namespace aclnn_cpu::conv;

namespace {

constexpr const char* kApi = "aclnnConvolutionBackward";

// 8-bit floats: Ascend910_95 takes HIFLOAT8 / FLOAT8_E4M3FN only for a transposed convolution
// with outputMask[0] = true (002 dtype constraint); the other SoCs never, FLOAT8_E5M2 nowhere.
void check_8bit_allowed(const char* name, const aclTensor* t, bool transposed, bool want_in,
                        const SocProfile& soc) {
  if (!is_8bit_float(t->dtype)) return;
  const bool chip_accepts = soc.is_910_95 && transposed && want_in && t->dtype != ACL_FLOAT8_E5M2;
  check(chip_accepts, ACLNN_ERR_PARAM_INVALID, name, " has dtype ", dtype_str(t->dtype), " (",
        static_cast<int>(t->dtype), "), which ", soc.name,
        " does not support here; HIFLOAT8 and FLOAT8_E4M3FN are supported only on Ascend910_95, "
        "for transposed = true with outputMask[0] = true");
}

// No promotion rule (互推导关系) covers the 8-bit dtypes, so an 8-bit input does not mix: then
// gradOutput, input and weight all have that one dtype (the outputs follow by rows 7-9).
void check_8bit_not_mixed(const aclTensor* gy, const aclTensor* x, const aclTensor* w) {
  const bool any = is_8bit_float(gy->dtype) || is_8bit_float(x->dtype) || is_8bit_float(w->dtype);
  if (!any) return;
  check(gy->dtype == x->dtype && w->dtype == x->dtype, ACLNN_ERR_PARAM_INVALID,
        "gradOutput, input and weight have dtypes ", dtype_str(gy->dtype), ", ",
        dtype_str(x->dtype), " and ", dtype_str(w->dtype),
        "; an 8-bit dtype does not promote with another one, so with HIFLOAT8 or FLOAT8_E4M3FN "
        "all three must have the same dtype");
}

// check_dtype, where an allowed 8-bit dtype (check_8bit_allowed passed) is accepted too.
void check_dtype_or_8bit(const char* name, const aclTensor* t, const SocProfile& soc) {
  if (!is_8bit_float(t->dtype)) check_dtype(name, t, soc);
}

struct Outputs {
  aclTensor* in;
  aclTensor* w;
  aclTensor* bias;
  bool want_in, want_w, want_b;
};

void check_dtypes(const aclTensor* gy, const aclTensor* x, const aclTensor* w, const Outputs& o,
                  bool transposed, const SocProfile& soc) {
  for (auto [name, t] : {std::pair<const char*, const aclTensor*>{"gradOutput", gy},
                         {"input", x},
                         {"weight", w},
                         {"gradInput", o.in},
                         {"gradWeight", o.w},
                         {"gradBias", o.bias}}) {
    if (t != nullptr) check_8bit_allowed(name, t, transposed, o.want_in, soc);
  }
  check_dtype_or_8bit("gradOutput", gy, soc);
  check_dtype_or_8bit("input", x, soc);
  check_dtype_or_8bit("weight", w, soc);
  check_8bit_not_mixed(gy, x, w);
  check_dtype_or_8bit("gradInput", o.in, soc);
  check_same_dtype("gradInput", o.in, "input", x);
  check_dtype_or_8bit("gradWeight", o.w, soc);
  check_same_dtype("gradWeight", o.w, "weight", w);
  if (o.bias != nullptr) {
    check_dtype_or_8bit("gradBias", o.bias, soc);
    check_same_dtype("gradBias", o.bias, "gradOutput", gy);
  }
}

void check_formats(const aclTensor* gy, const aclTensor* x, const aclTensor* w, const Outputs& o) {
  check_conv_format("gradOutput", gy);
  check_conv_format("input", x);
  check_conv_format("weight", w);
  check(gy->format == x->format && w->format == x->format, ACLNN_ERR_PARAM_INVALID,
        "gradOutput, input and weight have formats ", format_name(gy->format), ", ",
        format_name(x->format), " and ", format_name(w->format), "; they must be the same");
  check_conv_format("gradInput", o.in);
  check_same_format("gradInput", o.in, "input", x);
  check_conv_format("gradWeight", o.w);
  check_same_format("gradWeight", o.w, "weight", w);
  if (o.bias != nullptr) check_format("gradBias", o.bias, {ACL_FORMAT_ND});
}

void check_same_shape(const char* out_name, const aclTensor* out, const char* src_name,
                      const aclTensor* src) {
  check(out->view_dims == src->view_dims, ACLNN_ERR_PARAM_INVALID, out_name, " has shape ",
        shape_of(out), " but ", src_name, " has shape ", shape_of(src), "; they must be equal");
}

// The job on the regular geometry (engine.h explains the transposed mapping).
ConvJob backward_job(const ConvGeometry& g, bool use_double, Round round, const aclTensor* gy,
                     const aclTensor* x, const aclTensor* w, const Outputs& o, bool transposed) {
  ConvJob job;
  job.g = g;
  job.use_double = use_double;
  job.round = round;
  job.w = conv_view(w);
  if (!transposed) {
    job.x = conv_view(x);
    job.y = conv_view(gy);
    if (o.want_in) job.out_x = conv_view(o.in);
    job.bias_sum_of = ConvJob::BiasOf::kY;
  } else {
    job.x = conv_view(gy);
    job.y = conv_view(x);
    if (o.want_in) job.out_y = conv_view(o.in);
    job.bias_sum_of = ConvJob::BiasOf::kX;
  }
  if (o.want_w) job.out_w = conv_view(o.w);
  if (o.want_b) job.out_bias = channel_view(o.bias);
  return job;
}

}  // namespace

extern "C" {

aclnnStatus aclnnConvolutionBackwardGetWorkspaceSize(
    const aclTensor* gradOutput, const aclTensor* input, const aclTensor* weight,
    const aclIntArray* biasSizes, const aclIntArray* stride, const aclIntArray* padding,
    const aclIntArray* dilation, bool transposed, const aclIntArray* outputPadding, int groups,
    const aclBoolArray* outputMask, int8_t cubeMathType, aclTensor* gradInput,
    aclTensor* gradWeight, aclTensor* gradBias, uint64_t* workspaceSize, aclOpExecutor** executor) {
  return guard_aclnn(kApi, [&] {
    // 1. Null pointers.
    require(gradOutput, "gradOutput");
    require(input, "input");
    require(weight, "weight");
    require(biasSizes, "biasSizes");
    require(stride, "stride");
    require(padding, "padding");
    require(dilation, "dilation");
    require(outputPadding, "outputPadding");
    require(outputMask, "outputMask");
    check(outputMask->values.size() == 3, ACLNN_ERR_PARAM_NULLPTR, "outputMask has ",
          outputMask->values.size(), " entries; it must have exactly 3 ([gradInput, gradWeight, ",
          "gradBias])");
    const Outputs o{gradInput,
                    gradWeight,
                    gradBias,
                    outputMask->values[0],
                    outputMask->values[1],
                    outputMask->values[2]};
    require(gradInput, "gradInput");
    require(gradWeight, "gradWeight");
    if (o.want_b) require(gradBias, "gradBias (outputMask[2] is true)");
    require(workspaceSize, "workspaceSize");
    require(executor, "executor");

    // 2. Data types, 3. formats.
    const SocProfile soc = current_soc(kApi);
    check_dtypes(gradOutput, input, weight, o, transposed, soc);
    check_formats(gradOutput, input, weight, o);

    // 4. Attribute values.
    ConvParams cp;
    cp.input = input;
    cp.weight = weight;
    cp.result = gradOutput;
    cp.result_name = "gradOutput";
    cp.stride = stride;
    cp.padding = padding;
    cp.dilation = dilation;
    cp.output_padding = outputPadding;
    cp.transposed = transposed;
    cp.groups = groups;
    check_attr_values(cp);

    // 5. cubeMathType, judged on the promoted dtype.
    const aclDataType promoted = promote(promote(gradOutput->dtype, input->dtype), weight->dtype);
    const Round round = check_cube_math(cubeMathType, promoted, soc);

    // 6. Shapes (the layouts of the outputs that will be written: sane and contiguous).
    const ConvGeometry g = check_conv_shapes(cp, soc);
    auto check_written = [&](const char* name, const aclTensor* t) {
      check_layout(name, t, true);
      check_contiguous_output(name, t, soc);
    };
    check_same_shape("gradInput", gradInput, "input", input);
    if (o.want_in) check_written("gradInput", gradInput);
    check_same_shape("gradWeight", gradWeight, "weight", weight);
    if (o.want_w) check_written("gradWeight", gradWeight);
    const int64_t c_out = conv_out_channels(cp);
    const char* c_out_rule = transposed ? "weight[1] * groups" : "weight[0]";
    if (gradBias != nullptr) {
      check(gradBias->dim() == 1 && gradBias->view_dims[0] == c_out, ACLNN_ERR_PARAM_INVALID,
            "gradBias has shape ", shape_of(gradBias), " but must be [", c_out, "] (", c_out_rule,
            ", the output channels)");
      if (o.want_b) check_written("gradBias", gradBias);
    }
    check(biasSizes->values.size() == 1, ACLNN_ERR_PARAM_INVALID, "biasSizes has ",
          biasSizes->values.size(), " entries ", shape_str(biasSizes->values),
          "; it must have exactly 1");
    check(biasSizes->values[0] == c_out, ACLNN_ERR_PARAM_INVALID,
          "biasSizes = ", shape_str(biasSizes->values), " but the bias of this convolution has ",
          c_out, " elements (", c_out_rule, ")");

    // 7. Channels and groups.
    check_channels(cp);

    // 8. Memory: no output overlaps an input or another output.
    check_no_overlap({{"gradOutput", gradOutput}, {"input", input}, {"weight", weight}},
                     {{"gradInput", o.want_in ? gradInput : nullptr},
                      {"gradWeight", o.want_w ? gradWeight : nullptr},
                      {"gradBias", o.want_b ? gradBias : nullptr}});

    ConvJob job =
        backward_job(g, promoted == ACL_DOUBLE, round, gradOutput, input, weight, o, transposed);
    *executor = make_executor(kApi, std::move(job), workspaceSize);
    return ACLNN_SUCCESS;
  });
}

aclnnStatus aclnnConvolutionBackward(void* workspace, uint64_t workspaceSize,
                                     aclOpExecutor* executor, const aclrtStream stream) {
  return launch(kApi, workspace, workspaceSize, executor, stream);
}

}  // extern "C"
