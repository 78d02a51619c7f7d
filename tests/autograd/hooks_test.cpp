// Post-accumulate-grad hooks on leaves (autograd/hooks.h): when they run, what they see, removal,
// errors.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "autograd/function.h"
#include "ops/ops.h"
#include "tensor/creation.h"
#include "tests/autograd/test_util.h"

namespace aclgrad {
namespace {

using testing::expect_tensor;
using testing::message_of;

Tensor leaf(std::initializer_list<double> v, const Shape& shape) {
  Tensor t = tensor(v, shape, Dtype::Float64);
  t.requires_grad_();
  return t;
}

// y = x, whose backward appends "probe" to a log: marks a point in the middle of backward.
struct ProbeBackward final : autograd::Node {
  explicit ProbeBackward(std::vector<std::string>* log) : Node("ProbeBackward"), log(log) {}
  autograd::tensor_list apply(autograd::tensor_list&& grads) override {
    log->push_back("probe");
    return {grads[0]};
  }
  std::vector<std::string>* log;
};

Tensor probe(const Tensor& x, std::vector<std::string>* log) {
  Tensor out = x.detach().clone();
  if (auto node = autograd::make_node<ProbeBackward>({x}, log)) node->set_history(out);
  return out;
}

TEST(PostAccumulateGradHook, SeesTheAccumulatedGradientOncePerBackward) {
  Tensor w = leaf({1, 2}, {2});
  std::vector<std::vector<double>> seen;
  autograd::register_post_accumulate_grad_hook(
      w, [&](const Tensor& t) { seen.push_back(t.grad().to_vector<double>()); });
  sum(w * w).backward();  // grad 2w = [2, 4]
  sum(w * 3).backward();  // accumulated: [5, 7]
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0], (std::vector<double>{2, 4}));
  EXPECT_EQ(seen[1], (std::vector<double>{5, 7}));
}

TEST(PostAccumulateGradHook, FiresOnceEvenWhenTheLeafIsUsedTwice) {
  Tensor w = leaf({3}, {1});
  int calls = 0;
  double grad_at_call = 0;
  autograd::register_post_accumulate_grad_hook(w, [&](const Tensor& t) {
    ++calls;
    grad_at_call = t.grad().item<double>();
  });
  sum(w * w + w * 5).backward();  // d/dw = 2w + 5 = 11, summed before the leaf runs
  EXPECT_EQ(calls, 1);
  EXPECT_DOUBLE_EQ(grad_at_call, 11);
}

// The property DistributedDataParallel relies on: a late layer's parameter hook runs before the
// backward of the earlier layers (the probe) and the early parameter's hook.
TEST(PostAccumulateGradHook, LateParameterHookRunsBeforeEarlierLayersBackward) {
  Tensor x = tensor({0.5, -1.0}, {2}, Dtype::Float64);
  Tensor w1 = leaf({2, 3}, {2}), w2 = leaf({-1, 4}, {2});
  std::vector<std::string> log;
  autograd::register_post_accumulate_grad_hook(w1, [&](const Tensor&) { log.push_back("w1"); });
  autograd::register_post_accumulate_grad_hook(w2, [&](const Tensor&) { log.push_back("w2"); });
  Tensor h = probe(exp(x * w1), &log);
  sum(h * w2).backward();
  EXPECT_EQ(log, (std::vector<std::string>{"w2", "probe", "w1"}));
  // The values are still right: dy/dw1 = w2 * exp(x w1) * x.
  expect_tensor(w1.grad(), {2}, {-1 * std::exp(1.0) * 0.5, 4 * std::exp(-3.0) * -1}, 1e-12);
}

TEST(PostAccumulateGradHook, RunInRegistrationOrderAndCanBeRemoved) {
  Tensor w = leaf({1}, {1});
  std::vector<int> order;
  const uint64_t a =
      autograd::register_post_accumulate_grad_hook(w, [&](const Tensor&) { order.push_back(1); });
  autograd::register_post_accumulate_grad_hook(w, [&](const Tensor&) { order.push_back(2); });
  sum(w * 2).backward();
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
  EXPECT_TRUE(autograd::remove_post_accumulate_grad_hook(w, a));
  EXPECT_FALSE(autograd::remove_post_accumulate_grad_hook(w, a));
  order.clear();
  sum(w * 2).backward();
  EXPECT_EQ(order, (std::vector<int>{2}));
}

TEST(PostAccumulateGradHook, NotRunByGradWhichLeavesDotGradAlone) {
  Tensor w = leaf({1}, {1});
  int calls = 0;
  autograd::register_post_accumulate_grad_hook(w, [&](const Tensor&) { ++calls; });
  autograd::grad({sum(w * 2)}, {w});
  EXPECT_EQ(calls, 0);
}

TEST(PostAccumulateGradHook, ExceptionFromHookLeavesBackward) {
  Tensor w = leaf({1}, {1});
  autograd::register_post_accumulate_grad_hook(
      w, [](const Tensor&) { throw std::runtime_error("hook failed"); });
  EXPECT_EQ(message_of<std::runtime_error>([&] { sum(w * 2).backward(); }), "hook failed");
}

TEST(PostAccumulateGradHook, RejectsNonLeavesAndTensorsWithoutGrad) {
  Tensor plain = tensor({1}, {1}, Dtype::Float64);
  EXPECT_NE(message_of<AutogradError>([&] {
              autograd::register_post_accumulate_grad_hook(plain, [](const Tensor&) {});
            }).find("requires_grad=false"),
            std::string::npos);
  Tensor w = leaf({1}, {1});
  Tensor y = w * 2;
  EXPECT_NE(message_of<AutogradError>([&] {
              autograd::register_post_accumulate_grad_hook(y, [](const Tensor&) {});
            }).find("with history"),
            std::string::npos);
}

}  // namespace
}  // namespace aclgrad
