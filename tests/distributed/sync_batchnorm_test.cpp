// SyncBatchNorm under mpirun: shards of a global batch normalised across ranks behave exactly
// like one BatchNorm over the global batch (outputs, gradients, running statistics).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "nn/distributed/sync_batchnorm.h"
#include "ops/ops.h"
#include "tensor/creation.h"
#include "tensor/random.h"

namespace aclgrad {
namespace {

std::shared_ptr<distributed::ProcessGroup> group() {
  return distributed::ProcessGroup::init();
}

void expect_close(const Tensor& got, const Tensor& want, const char* what) {
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  const auto a = got.to_vector<double>(), b = want.to_vector<double>();
  for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 1e-10) << what << "[" << i << "]";
}

TEST(SyncBatchNorm, ShardsMatchOneBatchNormOnTheGlobalBatch) {
  auto g = group();
  const int64_t per_rank = 3, global = per_rank * g->size(), first = per_rank * g->rank();
  Generator gen(7);
  const Tensor x = add(mul(randn({global, 4, 5, 5}, Dtype::Float64, &gen), 2.0), 0.5);
  const Tensor out_weight = randn({global, 4, 5, 5}, Dtype::Float64, &gen);
  nn::SyncBatchNorm2d sync(nn::BatchNormOptions(4).momentum(0.3), g);
  nn::BatchNorm2d plain(nn::BatchNormOptions(4).momentum(0.3));
  for (nn::Module* m : {static_cast<nn::Module*>(&sync), static_cast<nn::Module*>(&plain)}) {
    m->to(Dtype::Float64);
    m->find_tensor("weight").copy_(tensor({1.5, -0.5, 2.0, 1.0}, {4}, Dtype::Float64));
    m->find_tensor("bias").copy_(tensor({0.1, 0.2, -0.3, 0.0}, {4}, Dtype::Float64));
  }
  EXPECT_EQ(sync.type_name(), "SyncBatchNorm");

  for (int step = 0; step < 2; ++step) {  // twice: running statistics accumulate
    Tensor mine = x.narrow(0, first, per_rank).clone().requires_grad_();
    Tensor all = x.clone().requires_grad_();
    Tensor y_mine = sync(mine), y_all = plain(all);
    expect_close(y_mine, y_all.narrow(0, first, per_rank), "output");
    // Σ over ranks of the local losses == the global loss.
    sum(mul(y_mine, out_weight.narrow(0, first, per_rank))).backward();
    sum(mul(y_all, out_weight)).backward();
    expect_close(mine.grad(), all.grad().narrow(0, first, per_rank), "input gradient");
    for (const char* name : {"weight", "bias"}) {
      Tensor grad_sum = sync.find_tensor(name).grad().clone();
      g->allreduce_sum(grad_sum);  // what DistributedDataParallel sums (and then averages)
      expect_close(grad_sum, plain.find_tensor(name).grad(), name);
    }
    sync.zero_grad();
    plain.zero_grad();
  }
  expect_close(sync.running_mean, plain.running_mean, "running_mean");
  expect_close(sync.running_var, plain.running_var, "running_var");
  EXPECT_EQ(sync.num_batches_tracked.item<int64_t>(), 2);
  sync.eval();
  plain.eval();
  expect_close(sync(x.narrow(0, first, per_rank)), plain(x).narrow(0, first, per_rank), "eval");
}

// |got - want| <= rel |want| + abs elementwise (got in any dtype, want float64).
void expect_within(const Tensor& got, const Tensor& want, double rel, double abs,
                   const std::string& what) {
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  const auto a = got.to_vector<double>(), b = want.to_vector<double>();
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_NEAR(a[i], b[i], rel * std::abs(b[i]) + abs) << what << "[" << i << "]";
  }
}

double max_abs(const Tensor& t) {
  double m = 0;
  for (double v : t.to_vector<double>()) m = std::max(m, std::abs(v));
  return m;
}

// bf16 / fp16 activations with float32 parameters (autocast): each rank's 16-bit output and input
// gradient, the summed float32 parameter gradients and the float32 running statistics match one
// float64 BatchNorm over the global batch of the same 16-bit values, within 16-bit rounding.
TEST(SyncBatchNorm, SixteenBitShardsMatchAFloat64BatchNormOnTheGlobalBatch) {
  auto g = group();
  const int64_t per_rank = 3, global = per_rank * g->size(), first = per_rank * g->rank();
  for (Dtype dtype : {Dtype::BFloat16, Dtype::Float16}) {
    const std::string name = dtype_name(dtype);
    const double eps16 = dtype == Dtype::BFloat16 ? 0x1p-8 : 0x1p-11;  // half an ulp, relative
    Generator gen(11);
    // The 16-bit values both sides see; the reference widens them exactly.
    const Tensor x16 = add(mul(randn({global, 4, 5, 7}, Dtype::Float32, &gen), 2.0), 0.5).to(dtype);
    const Tensor w16 = randn({global, 4, 5, 7}, Dtype::Float32, &gen).to(dtype);
    nn::SyncBatchNorm2d sync(nn::BatchNormOptions(4).momentum(0.3), g);  // float32 parameters
    nn::BatchNorm2d plain(nn::BatchNormOptions(4).momentum(0.3));
    plain.to(Dtype::Float64);
    for (nn::Module* m : {static_cast<nn::Module*>(&sync), static_cast<nn::Module*>(&plain)}) {
      m->find_tensor("weight").copy_(tensor({1.5, -0.5, 2.0, 1.0}, {4}, Dtype::Float64));
      m->find_tensor("bias").copy_(tensor({0.1, 0.2, -0.3, 0.0}, {4}, Dtype::Float64));
    }
    for (int step = 0; step < 2; ++step) {
      Tensor mine = x16.narrow(0, first, per_rank).clone().requires_grad_();
      Tensor all = x16.to(Dtype::Float64).requires_grad_();
      Tensor y_mine = sync(mine), y_all = plain(all);
      EXPECT_EQ(y_mine.dtype(), dtype);
      // One rounding of a float32 result: half an ulp, plus float32's own error.
      expect_within(y_mine, y_all.narrow(0, first, per_rank), eps16 * 1.01, 1e-5, name + " output");
      sum(mul(y_mine, w16.narrow(0, first, per_rank))).backward();
      sum(mul(y_all, w16.to(Dtype::Float64))).backward();
      EXPECT_EQ(mine.grad().dtype(), dtype);
      const Tensor want_dx = all.grad().narrow(0, first, per_rank);
      // The input gradient subtracts per-channel means: allow float32 cancellation error
      // relative to the largest gradient, besides the final rounding.
      expect_within(mine.grad(), want_dx, eps16 * 1.01, 1e-5 * max_abs(want_dx),
                    name + " input gradient");
      for (const char* p : {"weight", "bias"}) {
        Tensor grad_sum = sync.find_tensor(p).grad().clone();
        EXPECT_EQ(grad_sum.dtype(), Dtype::Float32) << p;
        g->allreduce_sum(grad_sum);  // what DistributedDataParallel sums
        const Tensor want = plain.find_tensor(p).grad();
        expect_within(grad_sum, want, 1e-5, 1e-5 * max_abs(want), name + " " + p);
      }
      sync.zero_grad();
      plain.zero_grad();
    }
    EXPECT_EQ(sync.running_mean.dtype(), Dtype::Float32);
    expect_within(sync.running_mean, plain.running_mean, 1e-5, 1e-6, name + " running_mean");
    expect_within(sync.running_var, plain.running_var, 1e-5, 1e-6, name + " running_var");
    sync.eval();
    plain.eval();
    expect_within(sync(x16.narrow(0, first, per_rank)),
                  plain(x16.to(Dtype::Float64)).narrow(0, first, per_rank), eps16 * 1.01, 1e-5,
                  name + " eval");
  }
}

TEST(SyncBatchNorm, AllReduceSumGradientIsTheSumOfEveryRanksGradient) {
  auto g = group();
  Tensor x = full({2}, g->rank() + 1.0, Dtype::Float64).requires_grad_();
  Tensor y = nn::all_reduce_sum(x, *g);
  const double world = g->size();
  EXPECT_DOUBLE_EQ(y.to_vector<double>()[0], world * (world + 1) / 2);
  // Rank r's loss: (r + 1) * sum(y); dL_total/dx = Σ_r (r + 1) on every rank.
  sum(mul(y, g->rank() + 1.0)).backward();
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>(2, world * (world + 1) / 2)));
}

TEST(SyncBatchNorm, WrongChannelCountIsNamed) {
  nn::SyncBatchNorm2d sync(4, group());
  try {
    sync(zeros({2, 3, 2, 2}));
    FAIL() << "no error";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("expected 4 channels"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace aclgrad
