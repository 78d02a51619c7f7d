// aclnnConvolution: the forward 1d/2d/3d (optionally transposed) convolution, validated with the
// same rules and order as aclnnConvolutionBackward (conv_params.h) and run by the same engine:
// a regular convolution is the engine's forward, a transposed one its backward-data (engine.h).
// bias may be null; when present it is 1-d ND [C_out]. On Ascend910_95 output must have input's
// dtype; elsewhere it is written in its own (supported) dtype.
#include "aclnnop/aclnn_convolution.h"

#include "conv/api/checks.h"
#include "conv/api/overlap.h"
#include "conv/api/conv_params.h"
#include "conv/engine/engine.h"
#include "error.h"

using namespace aclnn_cpu;
using namespace aclnn_cpu::conv;

namespace {
constexpr const char* kApi = "aclnnConvolution";
}  // namespace

extern "C" {

aclnnStatus aclnnConvolutionGetWorkspaceSize(const aclTensor* input, const aclTensor* weight,
                                             const aclTensor* bias, const aclIntArray* stride,
                                             const aclIntArray* padding,
                                             const aclIntArray* dilation, bool transposed,
                                             const aclIntArray* outputPadding, const int64_t groups,
                                             aclTensor* output, int8_t cubeMathType,
                                             uint64_t* workspaceSize, aclOpExecutor** executor) {
  return guard_aclnn(kApi, [&] {
    // 1. Null pointers (bias is optional).
    require(input, "input");
    require(weight, "weight");
    if (bias) require(bias, "bias");
    require(stride, "stride");
    require(padding, "padding");
    require(dilation, "dilation");
    require(outputPadding, "outputPadding");
    require(output, "output");
    require(workspaceSize, "workspaceSize");
    require(executor, "executor");

    // 2. Data types.
    const SocProfile soc = current_soc();
    check_dtype("input", input, soc);
    check_dtype("weight", weight, soc);
    if (bias) check_dtype("bias", bias, soc);
    check_dtype("output", output, soc);
    check(!soc.is_910_95 || output->dtype == input->dtype, ACLNN_ERR_PARAM_INVALID,
          "output has dtype ", dtype_name(output->dtype), " but input has ",
          dtype_name(input->dtype), "; on ", soc.name, " they must be the same");

    // 3. Formats.
    check_conv_format("input", input);
    check_conv_format("weight", weight);
    check_conv_format("output", output);
    if (bias) check_format("bias", bias, {ACL_FORMAT_ND});

    // 4. Attribute values.
    ConvParams cp;
    cp.input = input;
    cp.weight = weight;
    cp.result = output;
    cp.result_name = "output";
    cp.result_is_output = true;
    cp.stride = stride;
    cp.padding = padding;
    cp.dilation = dilation;
    cp.output_padding = outputPadding;
    cp.transposed = transposed;
    cp.groups = groups;
    check_attr_values(cp);

    // 5. cubeMathType.
    const aclDataType promoted = promote(input->dtype, weight->dtype);
    const Round round = check_cube_math(cubeMathType, promoted, soc);

    // 6. Shapes.
    const ConvGeometry g = check_conv_shapes(cp, soc);
    if (bias) {
      const int64_t c_out = conv_out_channels(cp);
      check_layout("bias", bias, false);
      check(bias->dim() == 1 && bias->view_dims[0] == c_out, ACLNN_ERR_PARAM_INVALID,
            "bias has shape ", shape_of(bias), " but must be [", c_out, "] (",
            transposed ? "weight[1] * groups" : "weight[0]", ", the output channels)");
    }

    // 7. Channels and groups.
    check_channels(cp);

    // 8. Memory: the output overlaps no input.
    check_no_overlap({{"input", input}, {"weight", weight}, {"bias", bias}}, {{"output", output}});

    ConvJob job;
    job.g = g;
    job.use_double = promoted == ACL_DOUBLE || (bias && bias->dtype == ACL_DOUBLE);
    job.round = round;
    job.w = conv_view(weight);
    if (bias) job.bias = channel_view(bias);
    if (!transposed) {
      job.x = conv_view(input);
      job.out_y = conv_view(output);
    } else {
      job.y = conv_view(input);
      job.out_x = conv_view(output);
    }
    *executor = make_executor(kApi, std::move(job), workspaceSize);
    return ACLNN_SUCCESS;
  });
}

aclnnStatus aclnnConvolution(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                             const aclrtStream stream) {
  return launch(kApi, workspace, workspaceSize, executor, stream);
}

}  // extern "C"
