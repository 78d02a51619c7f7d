#include "conv/api/conv_params.h"

#include <vector>

#include "error.h"

namespace aclnn_cpu::conv {
namespace {

constexpr int64_t kInt32Max = 2147483647;
constexpr int64_t kMaxGroups = 65535;

// Name of spatial dim i of a rank-r tensor: L (1d), H/W (2d), D/H/W (3d).
const char* spatial_name(int64_t rank, size_t i) {
  static const char* const k1[] = {"L"};
  static const char* const k2[] = {"H", "W"};
  static const char* const k3[] = {"D", "H", "W"};
  return rank == 3 ? k1[i] : rank == 4 ? k2[i] : k3[i];
}

const std::vector<int64_t>& values(const aclIntArray* a) {
  return a->values;
}

void check_range(const char* array, size_t i, int64_t v, int64_t lo, int64_t hi, const char* rule) {
  check(v >= lo && v <= hi, ACLNN_ERR_PARAM_INVALID, array, "[", i, "] = ", v, " is invalid; ",
        rule);
}

// Which SoCs a hardware limit binds (the spec documents them per SoC column).
const char* limit_scope(bool transposed) {
  return transposed ? " (a limit of Ascend910_95 only)"
                    : " (a limit of Ascend910B and Ascend910_93 only)";
}

// Upper bound of a hardware limit, with the text that explains it.
void check_limit(const char* what, size_t i, const char* dim, int64_t v, int64_t lo, int64_t hi,
                 const char* context, const SocProfile& soc, bool transposed) {
  check(v >= lo && v <= hi, ACLNN_ERR_PARAM_INVALID, what, "[", i, "] (", dim, ") = ", v,
        " is out of range [", lo, ", ", hi, "] for ", context, " on ", soc.name,
        limit_scope(transposed));
}

// "the convolution of input [..] with weight [..] (stride [..], ..., groups g)", formatted only
// when a failing check() streams it.
struct ConvDescription {
  const ConvParams& p;
};
std::ostream& operator<<(std::ostream& os, const ConvDescription& d) {
  const ConvParams& p = d.p;
  os << (p.transposed ? "the transposed convolution of input " : "the convolution of input ")
     << shape_of(p.input) << " with weight " << shape_of(p.weight) << " (stride "
     << shape_str(values(p.stride)) << ", padding " << shape_str(values(p.padding)) << ", dilation "
     << shape_str(values(p.dilation));
  if (p.transposed) os << ", outputPadding " << shape_str(values(p.output_padding));
  return os << ", groups " << p.groups << ")";
}
ConvDescription conv_description(const ConvParams& p) {
  return {p};
}

}  // namespace

void check_attr_values(const ConvParams& p) {
  for (size_t i = 0; i < p.stride->values.size(); ++i)
    check_range("stride", i, p.stride->values[i], 1, kInt32Max,
                "every stride must be >= 1 (and <= 2147483647)");
  for (size_t i = 0; i < p.padding->values.size(); ++i)
    check_range("padding", i, p.padding->values[i], 0, kInt32Max,
                "every padding must be >= 0 (and <= 2147483647)");
  for (size_t i = 0; i < p.dilation->values.size(); ++i)
    check_range("dilation", i, p.dilation->values[i], 1, kInt32Max,
                "every dilation must be >= 1 (and <= 2147483647)");
  const auto& op = p.output_padding->values;
  for (size_t i = 0; i < op.size(); ++i) {
    if (!p.transposed) {
      check(op[i] == 0, ACLNN_ERR_PARAM_INVALID, "outputPadding[", i, "] = ", op[i],
            " is invalid; outputPadding must be all 0 when transposed = false");
      continue;
    }
    const int64_t s = i < p.stride->values.size() ? p.stride->values[i] : kInt32Max;
    check(op[i] >= 0 && op[i] < s, ACLNN_ERR_PARAM_INVALID, "outputPadding[", i, "] = ", op[i],
          " is invalid; with transposed = true it must be in [0, stride[", i, "]) = [0, ", s, ")");
  }
  check(p.groups >= 1 && p.groups <= kMaxGroups, ACLNN_ERR_PARAM_INVALID, "groups = ", p.groups,
        " is invalid; groups must be in [1, ", kMaxGroups, "]");
}

int64_t conv_out_channels(const ConvParams& p) {
  return p.transposed ? p.weight->view_dims[1] * p.groups : p.weight->view_dims[0];
}

ConvGeometry check_conv_shapes(const ConvParams& p, const SocProfile& soc) {
  const aclTensor* in = p.input;
  const aclTensor* w = p.weight;
  const aclTensor* res = p.result;
  const int64_t r = in->dim();
  check(res->dim() == r, ACLNN_ERR_PARAM_INVALID, p.result_name, " has ", res->dim(),
        " dims (shape ", shape_of(res), ") but input has ", r, " (shape ", shape_of(in),
        "); they must have the same rank");
  check(w->dim() == r, ACLNN_ERR_PARAM_INVALID, "weight has ", w->dim(), " dims (shape ",
        shape_of(w), ") but input has ", r, " (shape ", shape_of(in),
        "); they must have the same rank");
  check(soc.conv3d || r != 5, ACLNN_ERR_PARAM_INVALID, "3d convolution (input ", shape_of(in),
        ") is not supported on ", soc.name, "; it supports only 1d and 2d convolutions");
  check_layout("input", in, false);
  check_layout("weight", w, false);
  check_layout(p.result_name, res, p.result_is_output);

  const size_t ns = static_cast<size_t>(r - 2);
  const char* kind = r == 3 ? "1d" : r == 4 ? "2d" : "3d";
  auto check_len = [&](const char* name, const aclIntArray* a, bool allow4) {
    const size_t n = a->values.size();
    check(n == ns || (allow4 && r == 4 && n == 4), ACLNN_ERR_PARAM_INVALID, name, " has ", n,
          " entries ", shape_str(a->values), " but a ", kind, " convolution (input rank ", r,
          ") needs ", ns, allow4 && r == 4 ? " ([H, W]) or 4 ([top, bottom, left, right])" : "");
  };
  check_len("stride", p.stride, false);
  check_len("padding", p.padding, true);
  check_len("dilation", p.dilation, false);
  check_len("outputPadding", p.output_padding, false);

  // Empty tensors (spec: N, or C together with weight C, may be 0; then D/H/W may be 0 too).
  const auto& id = in->view_dims;
  const auto& wd = w->view_dims;
  if (!soc.empty_tensors) {
    for (auto [name, t] : {std::pair{"input", in}, {"weight", w}, {p.result_name, res}}) {
      for (int64_t d : t->view_dims)
        check(d >= 1, ACLNN_ERR_PARAM_INVALID, name, " has shape ", shape_of(t),
              " with a zero dim; empty tensors are not supported on ", soc.name);
    }
  }
  const bool empty = id[0] == 0 || (!p.transposed && id[1] == 0);
  for (size_t i = 0; i < ns; ++i) {
    check(id[2 + i] >= 1 || empty, ACLNN_ERR_PARAM_INVALID, "input has shape ", shape_of(in),
          ": spatial dim ", spatial_name(r, i), " = 0 is only allowed in an empty-tensor ",
          "convolution (N = 0", p.transposed ? "" : " or C = 0", ")");
    check(wd[2 + i] >= 1 || empty, ACLNN_ERR_PARAM_INVALID, "weight has shape ", shape_of(w),
          ": kernel ", spatial_name(r, i), " = 0 is only allowed in an empty-tensor convolution ",
          "(N = 0", p.transposed ? "" : " or C = 0", "); otherwise every kernel size must be >= 1");
  }
  check(wd[0] >= 1, ACLNN_ERR_PARAM_INVALID, "weight has shape ", shape_of(w), ": weight[0] = 0 is",
        " invalid; it must be >= 1");
  check(wd[1] >= 1 || !p.transposed || id[0] == 0, ACLNN_ERR_PARAM_INVALID, "weight has shape ",
        shape_of(w),
        ": weight[1] = 0 of a transposed convolution is only allowed when input N = 0");

  // Hardware limits of the SoC (002 constraint table): regular convolutions on A2/A3 only,
  // transposed ones on Ascend910_95 only; the training/inference series document none.
  const bool reg_limits = soc.a2 && !p.transposed;
  const bool tr_limits = soc.is_910_95 && p.transposed;
  const bool tr = p.transposed;
  const char* context = p.transposed ? "a transposed convolution"
                        : r == 5     ? "a 3d convolution"
                                     : "a 1d/2d convolution";
  const auto& pad = p.padding->values;
  for (size_t i = 0; i < ns; ++i) {
    const bool is_d = r == 5 && i == 0;
    const char* dim = spatial_name(r, i);
    if ((reg_limits || tr_limits) && !is_d) {
      check(wd[2 + i] <= 255, ACLNN_ERR_PARAM_INVALID, "weight has shape ", shape_of(w),
            ": kernel ", dim, " = ", wd[2 + i], " is out of range [1, 255] for ", context, " on ",
            soc.name, limit_scope(tr));
    }
    if (reg_limits && r == 5 && !is_d)
      check_limit("stride", i, dim, p.stride->values[i], 1, 63, context, soc, tr);
    if (reg_limits)
      check_limit("dilation", i, dim, p.dilation->values[i], 1, 255, context, soc, tr);
    if (tr_limits) {
      check_limit("stride", i, dim, p.stride->values[i], 1, is_d ? 1000000 : 63, context, soc, tr);
      check_limit("dilation", i, dim, p.dilation->values[i], 1, is_d ? 1000000 : 255, context, soc,
                  tr);
    }
  }
  for (size_t j = 0; j < pad.size(); ++j) {
    const size_t i = pad.size() == 4 ? j / 2 : j;
    const bool is_d = r == 5 && i == 0;
    if (reg_limits && !is_d)
      check_limit("padding", j, spatial_name(r, i), pad[j], 0, 255, context, soc, tr);
    if (tr_limits)
      check_limit("padding", j, spatial_name(r, i), pad[j], 0, is_d ? 1000000 : 255, context, soc,
                  tr);
  }

  // The regular geometry and the shape the result must have.
  ConvGeometry g;
  g.N = id[0];
  g.groups = p.groups;
  g.C_out = wd[0];
  g.C_in = p.transposed ? wd[1] * p.groups : id[1];
  std::vector<int64_t> expected = {id[0], conv_out_channels(p)};
  for (size_t i = 0; i < ns; ++i) {
    const size_t d = 3 - ns + i;  // 1d -> W, 2d -> H, W
    g.k[d] = wd[2 + i];
    g.stride[d] = p.stride->values[i];
    g.dil[d] = p.dilation->values[i];
    g.pad_before[d] = pad.size() == 4 ? pad[2 * i] : pad[i];
    g.pad_after[d] = pad.size() == 4 ? pad[2 * i + 1] : pad[i];
    const int64_t len = id[2 + i];
    const int64_t dk = g.dil[d] * (g.k[d] - 1) + 1;
    if (!p.transposed) {
      check(len + g.pad_before[d] + g.pad_after[d] >= dk, ACLNN_ERR_PARAM_INVALID,
            "input has shape ", shape_of(in), ": ", spatial_name(r, i), " = ", len,
            " plus padding ", g.pad_before[d], " + ", g.pad_after[d],
            " is smaller than the dilated kernel (", g.k[d], " - 1) * ", g.dil[d], " + 1 = ", dk,
            "; input + padding must be >= (kernel - 1) * dilation + 1");
      g.in[d] = len;
      g.out[d] = static_cast<int64_t>(
          conv_out_len(len, g.k[d], g.stride[d], g.dil[d], g.pad_before[d], g.pad_after[d]));
    } else {
      const __int128 out =
          conv_transposed_out_len(len, g.k[d], g.stride[d], g.dil[d], g.pad_before[d],
                                  g.pad_after[d], p.output_padding->values[i]);
      check(out >= (id[0] == 0 ? 0 : 1) && out <= kInt32Max, ACLNN_ERR_PARAM_INVALID,
            conv_description(p), " has output size ",
            static_cast<int64_t>(out < INT64_MIN   ? INT64_MIN
                                 : out > INT64_MAX ? INT64_MAX
                                                   : out),
            " in ", spatial_name(r, i), "; it must be in [1, ", kInt32Max, "]");
      g.out[d] = len;
      g.in[d] = static_cast<int64_t>(out);
    }
    expected.push_back(p.transposed ? g.in[d] : g.out[d]);
  }
  check(res->view_dims == expected, ACLNN_ERR_PARAM_INVALID, p.result_name, " has shape ",
        shape_of(res), " but ", conv_description(p), " produces ", shape_str(expected));
  return g;
}

void check_channels(const ConvParams& p) {
  const auto& id = p.input->view_dims;
  const auto& wd = p.weight->view_dims;
  check(wd[0] % p.groups == 0, ACLNN_ERR_PARAM_INVALID, "weight has shape ", shape_of(p.weight),
        ": weight[0] = ", wd[0], p.transposed ? " (input channels)" : " (output channels)",
        " is not divisible by groups = ", p.groups);
  if (p.transposed) {
    check(id[1] == wd[0], ACLNN_ERR_PARAM_INVALID, "input has shape ", shape_of(p.input),
          ": C = ", id[1], " but the transposed convolution's weight ", shape_of(p.weight),
          " expects weight[0] = ", wd[0], " input channels");
  } else {
    check(id[1] == wd[1] * p.groups, ACLNN_ERR_PARAM_INVALID, "input has shape ", shape_of(p.input),
          ": C = ", id[1], " but weight ", shape_of(p.weight), " with groups = ", p.groups,
          " expects weight[1] * groups = ", wd[1] * p.groups, " input channels");
  }
}

}  // namespace aclnn_cpu::conv
