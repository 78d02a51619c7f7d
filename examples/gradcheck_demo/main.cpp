// gradcheck_demo: how to check your own gradients with autograd::gradcheck.
//
// gradcheck compares the Jacobian that backward computes against central finite differences
// (in float64), element by element. This program shows three cases:
//   1. a composite function of library ops (conv2d, tanh, softmax, a loss): PASS;
//   2. a custom op with a hand-written autograd Node (autograd/function.h), y = x^3 with
//      dy/dx = 3 x^2: PASS;
//   3. the same op with a deliberately wrong backward (3 x instead of 3 x^2): gradcheck throws
//      AutogradError naming the output, the input, the worst element and both values.
// Exit status 0 when all three behave as described.
//
//   gradcheck_demo            gradcheck_demo --seed 7
#include <cstdio>
#include <cstdint>

#include "examples/common/command_line.h"
#include "autograd/autograd.h"
#include "autograd/function.h"
#include "ops/ops.h"
#include "tensor/creation.h"
#include "tensor/random.h"

using namespace aclgrad;
using autograd::tensor_list;

namespace {

// ---- 1. a composite function ------------------------------------------------------------------
// x [2, 1, 5, 5], w [3, 1, 3, 3], b [3], target [2, 3] (class probabilities, a constant)
//   logits = mean over H, W of tanh(conv2d(x, w, b, padding 1))          [2, 3]
//   loss   = mse_loss(softmax(logits, 1), target)                          scalar
Tensor composite(const tensor_list& in) {
  const Tensor h = tanh(conv2d(in[0], in[1], in[2], {.padding = 1}));  // [2, 3, 5, 5]
  const Tensor logits = mean(h, {2, 3});                               // [2, 3]
  return mse_loss(softmax(logits, 1), in[3]);
}

// ---- 2./3. a custom op: y = x^3 -----------------------------------------------------------------
// The node stores what backward needs (x) and turns dL/dy into dL/dx. `wrong` makes it forget the
// power rule's square. Its backward uses differentiable ops, so double backward would work too.
struct CubeBackward final : autograd::Node {
  explicit CubeBackward(bool wrong) : Node("CubeBackward"), wrong(wrong) {}
  bool wrong;
  size_t x = 0;  // slot of the saved input
  tensor_list apply(tensor_list&& grads) override {
    const Tensor& g = grads[0];  // dL/dy, same shape as y
    const Tensor xs = saved(x);
    const Tensor dy_dx = wrong ? xs * 3.0 : pow(xs, 2.0) * 3.0;  // correct: 3 x^2
    return {g * dy_dx};                                          // one gradient per input
  }
};

Tensor cube(const Tensor& x, bool wrong_backward) {
  // Forward: a plain loop over float64 data, no autograd involved.
  const Tensor xc = x.contiguous();
  Tensor y = empty(x.sizes(), Dtype::Float64);
  const double* src = xc.data_ptr<double>();
  double* dst = y.data_ptr<double>();
  for (int64_t i = 0; i < x.numel(); ++i) dst[i] = src[i] * src[i] * src[i];
  // Record the node only when x requires grad and grad mode is on (make_node returns null else).
  if (auto node = autograd::make_node<CubeBackward>({x}, wrong_backward)) {
    node->x = node->save(x);
    node->set_history(y);  // y.grad_fn() is now the node
  }
  return y;
}

// Runs gradcheck and prints one verdict line; returns whether the verdict was the expected one.
template <typename F>
bool check(const char* name, F&& fn, const tensor_list& inputs, bool expect_pass) {
  bool passed = false;
  try {
    passed = autograd::gradcheck(fn, inputs);  // throws AutogradError on a mismatch
    std::printf("%s: PASS\n", name);
  } catch (const AutogradError& e) {
    std::printf("%s: FAIL%s\n  gradcheck says: %s\n", name, expect_pass ? "" : " (as expected)",
                e.what());
  }
  std::fflush(stdout);
  return passed == expect_pass;
}

}  // namespace

int main(int argc, char** argv) {
  examples::CommandLine cli{"gradcheck a composite function and catch a wrong custom backward"};
  uint64_t seed = 0;
  cli.option("--seed", seed, "Seed of the random inputs");
  if (auto status = cli.parse(argc, argv)) return *status;

  // gradcheck needs float64 inputs: finite differences in float32 are far too coarse. Inputs
  // that require grad are the variables; the others (the target) are constants.
  Generator gen(seed);
  const Tensor x = randn({2, 1, 5, 5}, Dtype::Float64, &gen).requires_grad_();
  const Tensor w = randn({3, 1, 3, 3}, Dtype::Float64, &gen).requires_grad_();
  const Tensor b = randn({3}, Dtype::Float64, &gen).requires_grad_();
  const Tensor target = softmax(randn({2, 3}, Dtype::Float64, &gen), 1);

  bool ok = check("composite conv2d/tanh/softmax/loss", composite, {x, w, b, target}, true);

  const Tensor v = randn({4, 3}, Dtype::Float64, &gen).requires_grad_();
  ok &= check(
      "Cube with correct backward",
      [](const tensor_list& in) { return cube(in[0], /*wrong_backward=*/false); }, {v}, true);
  ok &= check(
      "Cube with wrong backward",
      [](const tensor_list& in) { return cube(in[0], /*wrong_backward=*/true); }, {v}, false);

  // Without exceptions: raise_exception = false makes gradcheck return false instead.
  const bool quiet = autograd::gradcheck([](const tensor_list& in) { return cube(in[0], true); },
                                         {v}, {.raise_exception = false});
  std::printf("gradcheck(..., {.raise_exception = false}) on the wrong backward returned %s\n",
              quiet ? "true" : "false");
  ok &= !quiet;

  std::printf(ok ? "all demonstrations behaved as expected\n" : "UNEXPECTED RESULT\n");
  return ok ? 0 : 1;
}
