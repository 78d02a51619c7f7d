// SyncBatchNorm under mpirun: shards of a global batch normalised across ranks behave exactly
// like one BatchNorm over the global batch (outputs, gradients, running statistics).
#include <gtest/gtest.h>

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
