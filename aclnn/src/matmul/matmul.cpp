// aclnnMatmul (CANN's aclnnop/aclnn_matmul.h): out = self @ mat2 with torch.matmul's rules.
//
// Validation order: nulls (161001: self, mat2, out, workspaceSize, executor) -> dtypes (each of
// self, mat2, out FLOAT, FLOAT16 or BFLOAT16 where the SoC has it; self and mat2 promote: equal,
// or FLOAT16 with FLOAT -> FLOAT, BFLOAT16 with nothing else (the documents' constraint); out the
// promoted dtype, or FLOAT where that is FLOAT16) -> formats (ND or a plain layout name; no
// private format) -> cubeMathType (0..3, and per promoted dtype as for the convolutions, USE_HF32
// only for FLOAT; no effect, so no rule, when both inputs are 1-d) -> shapes (1 to 6 dims; sane
// layouts; self's last dim equals mat2's reduce dim; the batch dims broadcast; out has the
// product's shape) -> memory (out overlaps neither input). Everything else is 161002, with a
// message naming the parameter, its value or shape and the rule.
#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "aclnnop/aclnn_matmul.h"
#include "conv/api/checks.h"
#include "conv/api/overlap.h"
#include "error.h"
#include "matmul/matmul_job.h"

using namespace aclnn_cpu;
using aclnn_cpu::conv::Round;
using aclnn_cpu::conv::shape_of;

namespace {

constexpr const char* kApi = "aclnnMatmul";
constexpr int64_t kMaxRank = 6;

void check_input_dtype(const char* name, const aclTensor* t, const conv::SocProfile& soc) {
  const aclDataType d = t->dtype;
  if (d == ACL_FLOAT || d == ACL_FLOAT16 || (d == ACL_BF16 && soc.bf16)) return;
  fail(ACLNN_ERR_PARAM_INVALID,
       cat(name, " has dtype ", conv::dtype_str(d), " (", static_cast<int>(d),
           "); supported dtypes on ", soc.name, " are FLOAT, FLOAT16",
           soc.bf16 ? " and BFLOAT16" : "",
           d == ACL_BF16 ? cat("; BFLOAT16 is not supported on ", soc.name,
                               " (it is on Ascend910B, Ascend910_93 and Ascend910_95)")
                         : std::string()));
}

// The dtype self and mat2 are multiplied in (the documents' promotion rules).
aclDataType promoted_dtype(const aclTensor* self, const aclTensor* mat2) {
  const aclDataType a = self->dtype, b = mat2->dtype;
  if (a == b) return a;
  check(a != ACL_BF16 && b != ACL_BF16, ACLNN_ERR_PARAM_INVALID, "self has dtype ",
        conv::dtype_str(a), " and mat2 has dtype ", conv::dtype_str(b),
        "; BFLOAT16 cannot be promoted with FLOAT16 or FLOAT (give both inputs one dtype)");
  return ACL_FLOAT;  // FLOAT16 with FLOAT
}

void check_out_dtype(const aclTensor* out, aclDataType promoted) {
  const aclDataType d = out->dtype;
  check(d == promoted || (promoted == ACL_FLOAT16 && d == ACL_FLOAT), ACLNN_ERR_PARAM_INVALID,
        "out has dtype ", conv::dtype_str(d), " but self and mat2 promote to ",
        conv::dtype_str(promoted), "; out must be ", conv::dtype_str(promoted),
        promoted == ACL_FLOAT16 ? " or FLOAT" : "");
}

// ND, or the name of a plain row-major layout (frameworks label 4-d tensors NCHW and so on; the
// data is read through the view's strides either way). Private formats (NC1HWC0, FRACTAL_NZ, ...)
// are refused.
void check_format(const char* name, const aclTensor* t) {
  conv::check_format(name, t,
                     {ACL_FORMAT_ND, ACL_FORMAT_NCHW, ACL_FORMAT_NHWC, ACL_FORMAT_NCL,
                      ACL_FORMAT_NCDHW, ACL_FORMAT_NDHWC});
}

void check_rank(const char* name, const aclTensor* t) {
  check(t->dim() >= 1 && t->dim() <= kMaxRank, ACLNN_ERR_PARAM_INVALID, name, " has ", t->dim(),
        " dims (shape ", shape_of(t), "); aclnnMatmul takes tensors of 1 to ", kMaxRank, " dims");
}

std::vector<int64_t> batch_dims(const aclTensor* t) {
  return t->dim() <= 2 ? std::vector<int64_t>{}
                       : std::vector<int64_t>(t->view_dims.begin(), t->view_dims.end() - 2);
}

// The broadcast of self's and mat2's batch dims.
std::vector<int64_t> broadcast_batch(const aclTensor* self, const aclTensor* mat2) {
  const std::vector<int64_t> a = batch_dims(self), b = batch_dims(mat2);
  std::vector<int64_t> out(std::max(a.size(), b.size()));
  for (size_t i = 0; i < out.size(); ++i) {  // i counts from the innermost batch dim
    const int64_t sa = i < a.size() ? a[a.size() - 1 - i] : 1;
    const int64_t sb = i < b.size() ? b[b.size() - 1 - i] : 1;
    check(sa == sb || sa == 1 || sb == 1, ACLNN_ERR_PARAM_INVALID, "self has shape ",
          shape_of(self), " and mat2 has shape ", shape_of(mat2), ": their batch dims ",
          shape_str(a), " and ", shape_str(b), " do not broadcast (", sa, " vs ", sb, ")");
    out[out.size() - 1 - i] = sa == 1 ? sb : sa;
  }
  return out;
}

// The batch strides of t (a tensor of `rank_rest` non-batch dims) aligned to `batch` from the
// right: 0 for missing and size-1 dims (broadcast).
std::vector<int64_t> batch_strides(const aclTensor* t, size_t batch, int64_t rank_rest) {
  std::vector<int64_t> s(batch, 0);
  const int64_t own = t->dim() - rank_rest;
  for (int64_t i = 0; i < own; ++i) {
    const size_t d = batch - static_cast<size_t>(own) + static_cast<size_t>(i);
    s[d] = t->view_dims[i] == 1 ? 0 : t->strides[i];
  }
  return s;
}

// A view's matrix (its last two dims; a 1-d self is [1, K], a 1-d mat2 [K, 1]) as the packers
// read it. Size-1 dims get stride 0 (never stepped), so a unit stride means a real run.
matmul::SrcMat src_mat(const aclTensor* t, Round round, bool is_self) {
  matmul::SrcMat m;
  if (!conv::src_kind_of(t->dtype, round, &m.kind))
    throw std::logic_error("aclnnMatmul: no operand kind for a validated dtype");
  if (t->data) m.data = static_cast<const char*>(t->data) + t->offset * dtype_size(t->dtype);
  const int64_t d = t->dim();
  auto stride = [&](int64_t i) { return t->view_dims[i] == 1 ? 0 : t->strides[i]; };
  if (d == 1) {
    (is_self ? m.cs : m.rs) = stride(0);
  } else {
    m.rs = stride(d - 2);
    m.cs = stride(d - 1);
  }
  return m;
}

// The job of a validated call: `batch` leading dims of out are the batch.
matmul::MatmulJob make_job(const aclTensor* self, const aclTensor* mat2, aclTensor* out,
                           Round round, size_t batch) {
  matmul::MatmulJob j;
  j.K = self->view_dims.back();
  j.M = self->dim() == 1 ? 1 : self->view_dims[self->dim() - 2];
  j.N = mat2->dim() == 1 ? 1 : mat2->view_dims.back();
  j.batch.assign(out->view_dims.begin(), out->view_dims.begin() + static_cast<int64_t>(batch));
  j.a = {src_mat(self, round, true), batch_strides(self, batch, std::min<int64_t>(self->dim(), 2))};
  j.b = {src_mat(mat2, round, false),
         batch_strides(mat2, batch, std::min<int64_t>(mat2->dim(), 2))};
  j.out_batch_strides = batch_strides(out, batch, out->dim() - static_cast<int64_t>(batch));
  j.out_dtype = out->dtype;
  if (out->data) j.out = static_cast<char*>(out->data) + out->offset * dtype_size(out->dtype);
  // out's own dims after the batch: [M, N], [N] (self 1-d), [M] (mat2 1-d) or none.
  const int64_t own = out->dim() - static_cast<int64_t>(batch);
  auto stride = [&](int64_t i) { return out->view_dims[i] == 1 ? 0 : out->strides[i]; };
  if (self->dim() >= 2) j.out_rs = stride(static_cast<int64_t>(batch));
  if (mat2->dim() >= 2) j.out_cs = stride(static_cast<int64_t>(batch) + own - 1);
  if (j.N == 1) j.out_cs = 1;  // one column: any stride will do, the unit one stores directly
  matmul::fold_batch_into_rows(j);
  return j;
}

// Phase 1 after the null checks: the validated problem.
matmul::MatmulJob validate(const aclTensor* self, const aclTensor* mat2, aclTensor* out,
                           int8_t cube) {
  const conv::SocProfile soc = conv::current_soc();
  // Data types.
  check_input_dtype("self", self, soc);
  check_input_dtype("mat2", mat2, soc);
  check_input_dtype("out", out, soc);
  const aclDataType promoted = promoted_dtype(self, mat2);
  check_out_dtype(out, promoted);
  // Formats.
  check_format("self", self);
  check_format("mat2", mat2);
  check_format("out", out);
  // cubeMathType: no effect on a dot product (both 1-d), so only its range is checked there.
  const bool dot = self->dim() == 1 && mat2->dim() == 1;
  Round round = Round::kNone;
  if (dot) {
    conv::check_cube_math(cube, ACL_FLOAT16, soc);  // the range check alone
  } else {
    round = conv::check_cube_math(cube, promoted, soc, /*hf32_float_only=*/true);
  }
  // Shapes.
  check_rank("self", self);
  check_rank("mat2", mat2);
  conv::check_layout("self", self, false);
  conv::check_layout("mat2", mat2, false);
  conv::check_layout("out", out, true);
  const int64_t k_self = self->view_dims.back();
  const int64_t k_mat2 = mat2->dim() == 1 ? mat2->view_dims[0] : mat2->view_dims[mat2->dim() - 2];
  check(k_self == k_mat2, ACLNN_ERR_PARAM_INVALID, "self has shape ", shape_of(self),
        " and mat2 has shape ", shape_of(mat2), ": self's last dim (", k_self,
        ") must equal mat2's reduce dim (", mat2->dim() == 1 ? "its only dim" : "dim -2", ", ",
        k_mat2, ")");
  std::vector<int64_t> expected = broadcast_batch(self, mat2);
  const size_t batch = expected.size();
  if (self->dim() >= 2) expected.push_back(self->view_dims[self->dim() - 2]);
  if (mat2->dim() >= 2) expected.push_back(mat2->view_dims.back());
  check(out->view_dims == expected, ACLNN_ERR_PARAM_INVALID, "out has shape ", shape_of(out),
        " but self ", shape_of(self), " @ mat2 ", shape_of(mat2), " has shape ",
        shape_str(expected));
  // Memory.
  conv::check_no_overlap({{"self", self}, {"mat2", mat2}}, {{"out", out}});
  return make_job(self, mat2, out, round, batch);
}

}  // namespace

extern "C" {

aclnnStatus aclnnMatmulGetWorkspaceSize(const aclTensor* self, const aclTensor* mat2,
                                        aclTensor* out, int8_t cubeMathType,
                                        uint64_t* workspaceSize, aclOpExecutor** executor) {
  return guard_aclnn(kApi, [&] {
    conv::require(self, "self");
    conv::require(mat2, "mat2");
    conv::require(out, "out");
    conv::require(workspaceSize, "workspaceSize");
    conv::require(executor, "executor");
    *executor = matmul::make_executor(kApi, validate(self, mat2, out, cubeMathType), workspaceSize);
    return ACLNN_SUCCESS;
  });
}

aclnnStatus aclnnMatmul(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                        aclrtStream stream) {
  return launch(kApi, workspace, workspaceSize, executor, stream);
}

}  // extern "C"
