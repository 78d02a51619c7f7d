// aclnnConvolutionBackward: gradients of a 1d/2d/3d (optionally transposed, grouped, dilated)
// convolution. Phase 1 validates in the documented order
//   nulls (161001) -> dtypes -> formats -> attribute values -> cubeMathType -> shapes -> channels
// (all but nulls 161002), then hands a ConvJob to the engine. Choices where the spec is loose:
//   - gradInput / gradWeight / gradBias may be null exactly when their outputMask bit is false; an
//     output whose bit is false is ignored altogether (neither validated nor written).
//   - biasSizes is required (161001) whenever outputMask[2] is true, and must then be
//     [weight[0]] (regular) or [weight[1] * groups] (transposed).
//   - outputMask with other than 3 entries is a 161001, as in CANN's null-pointer stage.
//   - outputs are written in their own dtype (any supported one) except on Ascend910_95, where
//     CANN requires gradInput/gradWeight/gradBias to have the dtype of input/weight/gradOutput.
//   - gradBias must be 1-d ND; its value is the true sum of gradOutput even when input has C = 0.
#include "aclnnop/aclnn_convolution_backward.h"

#include "conv/checks.h"
#include "conv/overlap.h"
#include "conv/conv_params.h"
#include "conv/engine.h"
#include "error.h"

using namespace aclnn_cpu;
using namespace aclnn_cpu::conv;

namespace {

constexpr const char* kApi = "aclnnConvolutionBackward";

void check_same_dtype_on_95(const SocProfile& soc, const char* out_name, const aclTensor* out,
                            const char* src_name, const aclTensor* src) {
  if (!soc.is_910_95) return;
  check(out->dtype == src->dtype, ACLNN_ERR_PARAM_INVALID, out_name, " has dtype ",
        dtype_name(out->dtype), " but ", src_name, " has ", dtype_name(src->dtype), "; on ",
        soc.name, " they must be the same");
}

void check_same_shape(const char* out_name, const aclTensor* out, const char* src_name,
                      const aclTensor* src) {
  check(out->view_dims == src->view_dims, ACLNN_ERR_PARAM_INVALID, out_name, " has shape ",
        shape_of(out), " but ", src_name, " has shape ", shape_of(src), "; they must be equal");
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
    require(stride, "stride");
    require(padding, "padding");
    require(dilation, "dilation");
    require(outputPadding, "outputPadding");
    require(outputMask, "outputMask");
    check(outputMask->values.size() == 3, ACLNN_ERR_PARAM_NULLPTR, "outputMask has ",
          outputMask->values.size(), " entries; it must have exactly 3 ([gradInput, gradWeight, ",
          "gradBias])");
    const bool want_in = outputMask->values[0], want_w = outputMask->values[1],
               want_b = outputMask->values[2];
    if (want_in) require(gradInput, "gradInput (outputMask[0] is true)");
    if (want_w) require(gradWeight, "gradWeight (outputMask[1] is true)");
    if (want_b) require(gradBias, "gradBias (outputMask[2] is true)");
    if (want_b) require(biasSizes, "biasSizes (outputMask[2] is true)");
    require(workspaceSize, "workspaceSize");
    require(executor, "executor");

    // 2. Data types.
    const SocProfile soc = current_soc();
    check_dtype("gradOutput", gradOutput, soc);
    check_dtype("input", input, soc);
    check_dtype("weight", weight, soc);
    if (want_in) {
      check_dtype("gradInput", gradInput, soc);
      check_same_dtype_on_95(soc, "gradInput", gradInput, "input", input);
    }
    if (want_w) {
      check_dtype("gradWeight", gradWeight, soc);
      check_same_dtype_on_95(soc, "gradWeight", gradWeight, "weight", weight);
    }
    if (want_b) {
      check_dtype("gradBias", gradBias, soc);
      check_same_dtype_on_95(soc, "gradBias", gradBias, "gradOutput", gradOutput);
    }

    // 3. Formats.
    check_conv_format("gradOutput", gradOutput);
    check_conv_format("input", input);
    check_conv_format("weight", weight);
    if (want_in) check_conv_format("gradInput", gradInput);
    if (want_w) check_conv_format("gradWeight", gradWeight);
    if (want_b) check_format("gradBias", gradBias, {ACL_FORMAT_ND});

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

    // 6. Shapes.
    const ConvGeometry g = check_conv_shapes(cp, soc);
    if (want_in) {
      check_layout("gradInput", gradInput, true);
      check_same_shape("gradInput", gradInput, "input", input);
    }
    if (want_w) {
      check_layout("gradWeight", gradWeight, true);
      check_same_shape("gradWeight", gradWeight, "weight", weight);
    }
    if (want_b) {
      const int64_t c_out = conv_out_channels(cp);
      check_layout("gradBias", gradBias, true);
      check(gradBias->dim() == 1 && gradBias->view_dims[0] == c_out, ACLNN_ERR_PARAM_INVALID,
            "gradBias has shape ", shape_of(gradBias), " but must be [", c_out, "] (",
            transposed ? "weight[1] * groups" : "weight[0]", ", the output channels)");
      check(biasSizes->values.size() == 1, ACLNN_ERR_PARAM_INVALID, "biasSizes has ",
            biasSizes->values.size(), " entries ", shape_str(biasSizes->values),
            "; it must have exactly 1");
      check(biasSizes->values[0] == c_out, ACLNN_ERR_PARAM_INVALID,
            "biasSizes = ", shape_str(biasSizes->values), " but the bias of this convolution has ",
            c_out, " elements (", transposed ? "weight[1] * groups" : "weight[0]", ")");
    }

    // 7. Channels and groups.
    check_channels(cp);

    // 8. Memory: no output overlaps an input or another output.
    check_no_overlap({{"gradOutput", gradOutput}, {"input", input}, {"weight", weight}},
                     {{"gradInput", want_in ? gradInput : nullptr},
                      {"gradWeight", want_w ? gradWeight : nullptr},
                      {"gradBias", want_b ? gradBias : nullptr}});

    // The job on the regular geometry (engine.h explains the transposed mapping).
    ConvJob job;
    job.g = g;
    job.use_double = promoted == ACL_DOUBLE;
    job.round = round;
    job.w = conv_view(weight);
    if (!transposed) {
      job.x = conv_view(input);
      job.y = conv_view(gradOutput);
      if (want_in) job.out_x = conv_view(gradInput);
      job.bias_sum_of = ConvJob::BiasOf::kY;
    } else {
      job.x = conv_view(gradOutput);
      job.y = conv_view(input);
      if (want_in) job.out_y = conv_view(gradInput);
      job.bias_sum_of = ConvJob::BiasOf::kX;
    }
    if (want_w) job.out_w = conv_view(gradWeight);
    if (want_b) job.out_bias = channel_view(gradBias);
    *executor = make_executor(kApi, std::move(job), workspaceSize);
    return ACLNN_SUCCESS;
  });
}

aclnnStatus aclnnConvolutionBackward(void* workspace, uint64_t workspaceSize,
                                     aclOpExecutor* executor, const aclrtStream stream) {
  return launch(kApi, workspace, workspaceSize, executor, stream);
}

}  // extern "C"
