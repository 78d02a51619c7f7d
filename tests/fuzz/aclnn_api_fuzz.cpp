// libFuzzer target over libaclnn's C API: aclCreateTensor and the GetWorkspaceSize + launch pairs
// of aclnnConvolutionBackward, aclnnConvolution, aclnnConvTbcBackward and aclnnConvTbc.
//
// Each input describes one call. Its first bytes draw a consistent tiny problem (1-3 spatial
// dims, groups, stride/padding/dilation, transposed, dtype, layouts, SoC profile), the next
// bytes apply 0-3 single defects (fuzz_model.h: bad dims/strides/offsets/storage, unknown dtype
// or format, null pointers, wrong array lengths or values, outputs aliasing inputs or each
// other). The properties checked, each a crash the fuzzer reports:
//   - a refused call returns 161001 / 161002 / 561103 with a non-empty aclGetRecentErrMsg, no
//     executor, and leaves every output storage untouched;
//   - an accepted call asks for a bounded workspace, launches successfully, writes nothing
//     outside its outputs' views (nor any output whose mask bit is off), and on a well-formed
//     problem (one float dtype throughout) matches the float64 naive reference (8-bit outputs:
//     exactly the reference rounded once; HIFLOAT8 / FLOAT8_E4M3FN are drawn for transposed
//     backward calls on Ascend910_95, the case that profile accepts);
//   - a launch with a short or null workspace is refused, and the executor still works after;
//   - the backward APIs write only contiguous outputs unless the input enables the CPU-only
//     extension ACLNN_CPU_EXT_STRIDED_OUTPUTS (drawn last; on when the bytes run out, so the
//     corpus written before the rule still reaches the strided writes).
// Sanitizers (ASan, UBSan) report the rest. Built as a libFuzzer binary with clang; the same
// entry point replays the seed corpus in every build (fuzz_replay_main.cpp).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "aclnnop/aclnn_convolution.h"
#include "aclnnop/aclnn_convolution_backward.h"
#include "fuzz_model.h"
#include "fuzz_problems.h"
#include "support/acl_test_util.h"

namespace aclfuzz {
namespace {

[[noreturn]] void finding(const std::string& what, const Problem& p) {
  std::fprintf(stderr, "aclnn fuzz finding: %s\n  problem: %s\n  last message: %s\n", what.c_str(),
               p.describe().c_str(), aclGetRecentErrMsg());
  std::abort();
}

void check_refusal(aclnnStatus status, aclOpExecutor* executor, const Problem& p) {
  if (status != ACLNN_ERR_PARAM_NULLPTR && status != ACLNN_ERR_PARAM_INVALID &&
      status != ACLNN_ERR_INNER_NULLPTR)
    finding("undocumented status " + std::to_string(status), p);
  if (std::strlen(aclGetRecentErrMsg()) == 0) finding("refusal without a message", p);
  if (executor != nullptr) finding("refusal that still returned an executor", p);
  for (const TensorSpec& t : p.tensors)
    if (t.is_output && !untouched_outside_view(t, /*whole=*/true))
      finding("a refused call wrote to " + t.role, p);
}

// Launches an accepted call: first (sometimes) with a short workspace, which must be refused
// without consuming the executor, then with the real one.
void launch(Problem& p, uint64_t workspace_size, aclOpExecutor* executor, FuzzBytes& in) {
  constexpr uint64_t kWorkspaceBound = uint64_t{1} << 28;  // tiny problems need little
  if (workspace_size > kWorkspaceBound)
    finding("workspace of " + std::to_string(workspace_size) + " bytes", p);
  acltest::DeviceBuffer workspace(workspace_size);
  if (workspace_size > 0 && in.chance(40)) {
    const aclnnStatus short_status =
        p.launch(workspace.data(), workspace_size - 1, executor, acltest::SharedStream());
    if (short_status != ACLNN_ERR_PARAM_INVALID) finding("short workspace accepted", p);
  }
  const aclnnStatus status =
      p.launch(workspace.data(), workspace_size, executor, acltest::SharedStream());
  if (status != ACLNN_SUCCESS) finding("launch failed: " + std::to_string(status), p);
  if (aclrtSynchronizeStream(acltest::SharedStream()) != ACL_SUCCESS)
    finding("stream synchronisation failed", p);
}

void check_outputs(const Problem& p, const std::vector<Expected>& expected) {
  for (const TensorSpec& t : p.tensors) {
    if (!t.is_output || t.null_tensor) continue;
    const Expected* e = nullptr;
    for (const Expected& x : expected)
      if (x.role == t.role) e = &x;
    if (e == nullptr) {  // not requested: must not have been written at all (unless its
                         // buffer is shared with a tensor that is written)
      if (t.buffer.use_count() == 1 && !untouched_outside_view(t, /*whole=*/true))
        finding(t.role + " written but masked", p);
      continue;
    }
    if (t.buffer.use_count() == 1 && !untouched_outside_view(t, /*whole=*/false))
      finding(t.role + " written outside its view", p);
    if (e->result.value.empty() && readable_numel(t) != 0) continue;  // no oracle for this one
    const std::vector<double> got = read_view(t);
    if (got.size() != e->result.value.size())
      finding(t.role + " has " + std::to_string(got.size()) + " elements, reference " +
                  std::to_string(e->result.value.size()),
              p);
    for (size_t i = 0; i < got.size(); ++i) {
      const double want = e->result.value[i];
      if (got[i] == want || (std::isnan(got[i]) && std::isnan(want))) continue;  // 8-bit: NaN/Inf
      const double err = std::fabs(got[i] - want);
      if (!(err <= e->rel_tol * e->result.scale[i] + 1e-30))
        finding(t.role + "[" + std::to_string(i) + "] = " + std::to_string(got[i]) +
                    ", reference " + std::to_string(e->result.value[i]),
                p);
    }
  }
}

// Without ACLNN_CPU_EXT_STRIDED_OUTPUTS the backward APIs write only contiguous outputs (the
// documents mark their outputs "non-contiguous: no").
void check_written_contiguous(const Problem& p, const std::vector<Expected>& expected) {
  if (p.strided_outputs || (p.op != Op::kConvBackward && p.op != Op::kTbcBackward)) return;
  for (const Expected& e : expected) {
    const TensorSpec* t = p.find(e.role);
    if (t != nullptr && !is_contiguous(*t))
      finding("a non-contiguous " + e.role + " accepted without ACLNN_CPU_EXT_STRIDED_OUTPUTS", p);
  }
}

}  // namespace

int run_one(const uint8_t* data, size_t size) {
  FuzzBytes in(data, size);
  Problem p = draw_problem(in);
  materialize(p.tensors, /*seed=*/size);
  // Inputs are read before the call: an output that wrongly aliases one must not change them.
  const ReferenceInputs ref_inputs = read_reference_inputs(p);
  uint64_t workspace_size = 0;
  aclOpExecutor* executor = nullptr;
  const aclnnStatus status = p.plan(&workspace_size, &executor);
  if (status != ACLNN_SUCCESS) {
    check_refusal(status, executor, p);
  } else {
    if (executor == nullptr) finding("success without an executor", p);
    const std::vector<Expected> expected = reference(p, ref_inputs);
    check_written_contiguous(p, expected);
    launch(p, workspace_size, executor, in);
    check_outputs(p, expected);
  }
  destroy(p.tensors);
  p.release_arrays();
  return 0;
}

}  // namespace aclfuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return aclfuzz::run_one(data, size);
}
