#include "ops/matmul_aclnn.h"

#include "aclnnop/aclnn_matmul.h"
#include "ops/aclnn_bridge.h"

namespace aclgrad::detail {

namespace {

constexpr int8_t kKeepDtype = 0;  // cubeMathType: 16-bit operands as they are
constexpr int64_t kMaxAclnnRank = 6;

// x's batch expanded to `batch` and merged into one dim: [nb, rows, cols]. A view where the
// layout allows, else a copy in x's own dtype (more than four batch dims only).
Tensor batch_merged(const Tensor& x, const Shape& batch, int64_t nb) {
  Shape full = batch;
  full.insert(full.end(), {x.size(-2), x.size(-1)});
  const Tensor e = x.expand(full);
  const Shape merged = {nb, x.size(-2), x.size(-1)};
  if (auto v = layout::try_view(e.layout(), merged)) return e.view(merged);
  return e.contiguous().view(merged);
}

}  // namespace

void matmul_aclnn(const Tensor& a, const Tensor& b, const Tensor& out) {
  if (out.dim() > kMaxAclnnRank) {
    // aclnnMatmul takes up to 6 dims (4 batch dims): merge the batch into one.
    const Shape batch(out.sizes().begin(), out.sizes().end() - 2);
    int64_t nb = 1;
    for (int64_t s : batch) nb *= s;
    return matmul_aclnn(batch_merged(a, batch, nb), batch_merged(b, batch, nb),
                        out.view({nb, out.size(-2), out.size(-1)}));
  }
  const auto a_acl = aclnn::view_of(a, aclnn::Format::ND);
  const auto b_acl = aclnn::view_of(b, aclnn::Format::ND);
  const auto out_acl = aclnn::view_of(out, aclnn::Format::ND);
  aclnn::run_two_phase(
      "aclnnMatmul",
      [&](uint64_t* workspace_size, aclOpExecutor** executor) {
        return aclnnMatmulGetWorkspaceSize(a_acl.get(), b_acl.get(), out_acl.get(), kKeepDtype,
                                           workspace_size, executor);
      },
      aclnnMatmul);
}

}  // namespace aclgrad::detail
