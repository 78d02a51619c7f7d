// gradcheck / gradgradcheck: compare the analytical Jacobian (backward) against central finite
// differences in float64, like torch.autograd.gradcheck (slow mode).
//
//   Tensor x = randn({3, 4}, Dtype::Float64).requires_grad_();
//   autograd::gradcheck([](const autograd::tensor_list& in) { return exp(in[0]) * in[0]; }, {x});
//
// fn takes the inputs and returns one Tensor or a tensor_list. Inputs that require grad are the
// variables (they must be float64 and must not overlap themselves, e.g. no expanded tensors);
// other inputs are constants. Every floating output is checked.
//
// Checks, in order: (1) for each output i and input j, analytical ≈ numerical within
// |a - n| <= atol + rtol * |n|, reporting output i, input j and the worst element with both
// values; (2) reentrancy: a second backward with the same grad_output gives the same values
// (within nondet_tol); (3) a zero grad_output gives zero gradients. Numerical columns come from
// perturbing one input element by ±eps in place (restored afterwards); analytical rows from one
// backward (autograd::grad) per output element.
#pragma once

#include <concepts>
#include <functional>
#include <type_traits>
#include <utility>

#include "../autograd/node.h"

namespace aclgrad::autograd {

struct GradcheckOptions {
  double eps = 1e-6;
  double atol = 1e-5;
  double rtol = 1e-3;
  /// Throw AutogradError with the failure message (true) or return false (false).
  bool raise_exception = true;
  /// Largest allowed difference between two backward runs (0: bitwise equal).
  double nondet_tol = 0.0;
  /// Check that a zero grad_output gives zero gradients.
  bool check_zero_grad_output = true;
};

using GradcheckFn = std::function<tensor_list(const tensor_list&)>;

/// True when the check passes; on failure throws AutogradError or returns false (see options).
/// Usage errors (non-float64 variables, overlapping inputs) always throw.
bool gradcheck_impl(const GradcheckFn& fn, const tensor_list& inputs,
                    const GradcheckOptions& options);
/// gradcheck of the first-order gradients: checks backward-of-backward (create_graph) against
/// finite differences of the backward. grad_outputs (one per floating output, float64) default
/// to seeded random values; they become extra inputs of the checked function.
bool gradgradcheck_impl(const GradcheckFn& fn, const tensor_list& inputs,
                        const tensor_list& grad_outputs, const GradcheckOptions& options);

namespace detail {
template <typename F>
GradcheckFn as_gradcheck_fn(F&& fn) {
  using R = std::invoke_result_t<F&, const tensor_list&>;
  if constexpr (std::is_convertible_v<R, Tensor>) {
    return [f = std::forward<F>(fn)](const tensor_list& in) { return tensor_list{f(in)}; };
  } else {
    return [f = std::forward<F>(fn)](const tensor_list& in) { return tensor_list(f(in)); };
  }
}
}  // namespace detail

/// fn: (const tensor_list&) -> Tensor or tensor_list.
template <typename F>
bool gradcheck(F&& fn, const tensor_list& inputs, const GradcheckOptions& options = {}) {
  return gradcheck_impl(detail::as_gradcheck_fn(std::forward<F>(fn)), inputs, options);
}

template <typename F>
bool gradgradcheck(F&& fn, const tensor_list& inputs, const tensor_list& grad_outputs = {},
                   const GradcheckOptions& options = {}) {
  return gradgradcheck_impl(detail::as_gradcheck_fn(std::forward<F>(fn)), inputs, grad_outputs,
                            options);
}

}  // namespace aclgrad::autograd
