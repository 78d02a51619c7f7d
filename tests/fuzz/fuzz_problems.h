// The four operator calls the fuzzer makes, drawn from its bytes, and their float64 reference.
#pragma once

#include <string>
#include <vector>

#include "fuzz_model.h"
#include "support/naive_conv.h"

namespace aclfuzz {

enum class Op { kConvBackward, kConv, kTbcBackward, kTbc };

// An int/bool array argument: its values, or a null pointer.
struct IntArg {
  std::vector<int64_t> values;
  bool null = false;
  aclIntArray* handle = nullptr;
};
struct BoolArg {
  std::vector<bool> values;
  bool null = false;
  aclBoolArray* handle = nullptr;
};

struct Problem {
  Op op = Op::kConvBackward;
  std::vector<TensorSpec> tensors;  // inputs first, then outputs (roles as in the API)
  IntArg stride, padding, dilation, output_padding, bias_sizes;
  BoolArg mask;
  bool transposed = false;
  int64_t groups = 1;  // passed as int to the backward API (truncated, as a C caller would)
  int64_t tbc_pad = 0;
  int cube_math = 0;  // passed as int8_t
  std::string soc;    // ACLNN_CPU_SOC ("" = unset)
  // Phase 1 runs with the CPU-only extension ACLNN_CPU_EXT_STRIDED_OUTPUTS (backward outputs may
  // be strided views). Drawn last: off for a byte >= 192, on when the bytes have run out.
  bool strided_outputs = true;

  // Phase 1 / phase 2 of the drawn operator.
  aclnnStatus plan(uint64_t* workspace_size, aclOpExecutor** executor);
  aclnnStatus plan_call(uint64_t* workspace_size, aclOpExecutor** executor);  // plan's API call
  aclnnStatus launch(void* workspace, uint64_t size, aclOpExecutor* executor, aclrtStream stream);
  void release_arrays();
  const TensorSpec* find(const std::string& role) const;  // nullptr if absent or a null tensor
  std::string describe() const;
};

// A consistent tiny problem (most draws are accepted), then 0-3 single defects.
Problem draw_problem(FuzzBytes& in);

// The values of the problem's input views, read before the call (empty when no oracle applies:
// mixed or non-float dtypes, null tensors, unreadable views).
struct ReferenceInputs {
  bool usable = false;
  std::vector<double> a, b, c;  // conv backward: gradOutput, input, weight; forward: input,
                                // weight, bias; tbc backward: self, input, weight; tbc: self,
                                // weight, bias
};
ReferenceInputs read_reference_inputs(const Problem& p);

// What one output should hold: the reference result (empty: no oracle, only the "nothing
// written outside the view" check) and the relative tolerance of its dtype.
struct Expected {
  std::string role;
  naive::Result result;
  double rel_tol = 0;
};
// The outputs an accepted call must write. An output not listed must stay untouched.
std::vector<Expected> reference(const Problem& p, const ReferenceInputs& in);

}  // namespace aclfuzz
