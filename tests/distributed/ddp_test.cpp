// DistributedDataParallel and ProcessGroup under mpirun (-np 2 and -np 3, see CMakeLists.txt).
// Every rank runs every test; a test fails when it fails on any rank.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <cstring>
#include <string>
#include <vector>

#include "autograd/function.h"
#include "nn/distributed/distributed_data_parallel.h"
#include "nn/nn.h"
#include "nn/optim.h"
#include "ops/ops.h"
#include "tensor/creation.h"
#include "tensor/random.h"

namespace aclgrad {
namespace {

using distributed::DistributedError;
using distributed::ProcessGroup;

std::shared_ptr<ProcessGroup> group() {
  return ProcessGroup::init();
}

// A small CNN with BatchNorm (the example's layer types).
std::shared_ptr<nn::Sequential> cnn(uint64_t seed) {
  manual_seed(seed);
  using namespace nn;
  return std::make_shared<Sequential>(std::make_shared<Conv2d>(Conv2dOptions(1, 4, 3).padding(1)),
                                      std::make_shared<BatchNorm2d>(4), std::make_shared<ReLU>(),
                                      std::make_shared<MaxPool2d>(2), std::make_shared<Flatten>(),
                                      std::make_shared<Linear>(4 * 4 * 4, 10));
}

// The same without BatchNorm: its gradient on a global batch is the mean of the shards'.
std::shared_ptr<nn::Sequential> mlp(uint64_t seed) {
  manual_seed(seed);
  using namespace nn;
  return std::make_shared<Sequential>(std::make_shared<Conv2d>(Conv2dOptions(1, 3, 3).padding(1)),
                                      std::make_shared<ReLU>(), std::make_shared<Flatten>(),
                                      std::make_shared<Linear>(3 * 8 * 8, 16),
                                      std::make_shared<ReLU>(), std::make_shared<Linear>(16, 10));
}

// Batch `step` of a global batch: the same on every rank (seeded by step only).
std::pair<Tensor, Tensor> global_batch(int64_t samples, int64_t side, int64_t step) {
  Generator gen(1000 + static_cast<uint64_t>(step));
  return {randn({samples, 1, side, side}, Dtype::Float32, &gen),
          randint(0, 10, {samples}, Dtype::Int64, &gen)};
}

// True when t holds the same bytes on every rank (rank 0's copy is broadcast and compared).
bool same_bytes_on_all_ranks(const Tensor& t) {
  Tensor mine = t.contiguous().clone(), root = mine.clone();
  group()->broadcast(root, 0);
  const bool equal = std::memcmp(mine.data_ptr(), root.data_ptr(),
                                 static_cast<size_t>(mine.numel() * mine.element_size())) == 0;
  return group()->all_equal(equal ? 1 : 0) && equal;
}

TEST(ProcessGroup, AllreduceSumsAndBroadcastCopiesTheRoot) {
  auto g = group();
  const int world = g->size(), rank = g->rank();
  ASSERT_GE(world, 2) << "run under mpirun -np 2 or more";
  Tensor t = full({3}, rank + 1, Dtype::Float64);
  g->allreduce_sum(t);
  const double sum = world * (world + 1) / 2.0;  // 1 + 2 + ... + world
  EXPECT_EQ(t.to_vector<double>(), (std::vector<double>{sum, sum, sum}));
  Tensor b = full({2}, 10 * rank, Dtype::Int64);
  g->broadcast(b, world - 1);
  EXPECT_EQ(b.to_vector<int64_t>(), (std::vector<int64_t>{10 * (world - 1), 10 * (world - 1)}));
  EXPECT_TRUE(g->all_equal(42));
  EXPECT_FALSE(g->all_equal(static_cast<uint64_t>(rank)));
}

// ACLGRAD_TEST_HOSTS: the number of hosts the launcher spread the ranks over evenly (default 1;
// two_hosts_test.sh runs one rank in each of two network namespaces and sets 2).
TEST(ProcessGroup, LocalSizeCountsOnlyTheRanksOnThisHost) {
  const char* hosts_env = std::getenv("ACLGRAD_TEST_HOSTS");
  const int hosts = hosts_env ? std::atoi(hosts_env) : 1;
  ASSERT_GE(hosts, 1) << "ACLGRAD_TEST_HOSTS=" << hosts_env;
  ASSERT_EQ(group()->size() % hosts, 0) << group()->size() << " ranks on " << hosts << " hosts";
  EXPECT_EQ(group()->local_size(), group()->size() / hosts);
}

TEST(ProcessGroup, BadTensorsAreRejectedBeforeAnyCommunication) {
  Tensor ints = zeros({2}, Dtype::Int64);
  EXPECT_THROW(group()->allreduce_sum(ints), DistributedError);
  Tensor strided = zeros({4, 4}).t();
  EXPECT_THROW(group()->allreduce_sum(strided), DistributedError);
  EXPECT_THROW(group()->broadcast(zeros({2}), group()->size()), DistributedError);
}

TEST(DistributedDataParallel, ConstructionCopiesRank0sWeightsAndBuffers) {
  auto model = cnn(100 + group()->rank());  // different initial weights on every rank
  auto bn = std::dynamic_pointer_cast<nn::BatchNorm2d>(model->children()[1]);
  bn->running_mean.fill_(group()->rank());
  nn::DistributedDataParallel ddp(model, group());
  auto reference = cnn(100);  // what rank 0 built
  const auto want = reference->named_parameters();
  const auto got = model->named_parameters();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].second.to_vector<float>(), want[i].second.to_vector<float>()) << got[i].first;
  }
  EXPECT_EQ(bn->running_mean.to_vector<float>(), std::vector<float>(4, 0.0f));
}

// Each rank trains on a different shard; after every step all ranks must hold the same bytes.
TEST(DistributedDataParallel, WeightsStayBitwiseIdenticalAcrossRanks) {
  auto g = group();
  auto model = cnn(7);
  auto ddp = std::make_shared<nn::DistributedDataParallel>(
      model, g, nn::DistributedDataParallelOptions{.bucket_cap_mb = 0.001});
  EXPECT_GT(ddp->bucket_parameter_names().size(), 2u);
  optim::AdamWOptions adam;
  adam.lr = 1e-2;
  optim::AdamW opt(ddp->parameters(), adam);
  for (int64_t step = 0; step < 4; ++step) {
    auto [x, y] = global_batch(4 * g->size(), 8, step);
    Tensor loss =
        cross_entropy((*ddp)(x.narrow(0, 4 * g->rank(), 4)), y.narrow(0, 4 * g->rank(), 4));
    opt.zero_grad();
    loss.backward();
    opt.step();
  }
  for (const auto& [name, p] : model->named_parameters()) {
    EXPECT_TRUE(same_bytes_on_all_ranks(p)) << name;
  }
  ddp->broadcast_buffers();
  for (const auto& [name, b] : model->named_buffers()) {
    EXPECT_TRUE(same_bytes_on_all_ranks(b)) << name;
  }
  // The shards differ, so the loss differs: the identity comes from the averaging, not the data.
  auto [x, y] = global_batch(4 * g->size(), 8, 99);
  const double local =
      cross_entropy((*model)(x.narrow(0, 4 * g->rank(), 4)), y.narrow(0, 4 * g->rank(), 4))
          .item<double>();
  EXPECT_FALSE(g->all_equal(std::hash<double>{}(local)));
}

// N ranks on shards of a global batch == one process on the whole batch, to float rounding.
void expect_matches_single_process(double bucket_cap_mb) {
  auto g = group();
  const int64_t per_rank = 3, global = per_rank * g->size();
  auto model = mlp(11), single = mlp(11);
  nn::DistributedDataParallel ddp(model, g, {.bucket_cap_mb = bucket_cap_mb});
  optim::SGD opt(ddp.parameters(), {.lr = 0.1, .momentum = 0.9});
  optim::SGD opt_single(single->parameters(), {.lr = 0.1, .momentum = 0.9});
  for (int64_t step = 0; step < 5; ++step) {
    auto [x, y] = global_batch(global, 8, step);
    Tensor loss = cross_entropy(ddp(x.narrow(0, per_rank * g->rank(), per_rank)),
                                y.narrow(0, per_rank * g->rank(), per_rank));
    opt.zero_grad();
    loss.backward();
    Tensor loss_single = cross_entropy((*single)(x), y);
    opt_single.zero_grad();
    loss_single.backward();
    const auto p = model->named_parameters(), q = single->named_parameters();
    for (size_t i = 0; i < p.size(); ++i) {
      const auto a = p[i].second.grad().to_vector<double>();
      const auto b = q[i].second.grad().to_vector<double>();
      double scale = 0;
      for (double v : b) scale = std::max(scale, std::abs(v));
      for (size_t k = 0; k < a.size(); ++k) {
        ASSERT_NEAR(a[k], b[k], 1e-5 * (1 + scale)) << p[i].first << "[" << k << "] step " << step;
      }
    }
    opt.step();
    opt_single.step();
  }
  const auto p = model->named_parameters(), q = single->named_parameters();
  for (size_t i = 0; i < p.size(); ++i) {
    const auto a = p[i].second.to_vector<double>(), b = q[i].second.to_vector<double>();
    for (size_t k = 0; k < a.size(); ++k) ASSERT_NEAR(a[k], b[k], 1e-5) << p[i].first;
  }
}

TEST(DistributedDataParallel, MatchesSingleProcessOnTheGlobalBatchOneBucket) {
  expect_matches_single_process(25);
}

TEST(DistributedDataParallel, MatchesSingleProcessOnTheGlobalBatchManyBuckets) {
  expect_matches_single_process(0.0001);  // one parameter per bucket
}

// y = x; its backward logs "probe": marks the point where backward reaches the first layer.
struct ProbeBackward final : autograd::Node {
  explicit ProbeBackward(std::vector<std::string>* log) : Node("ProbeBackward"), log(log) {}
  autograd::tensor_list apply(autograd::tensor_list&& grads) override {
    log->push_back("probe");
    return {grads[0]};
  }
  std::vector<std::string>* log;
};

TEST(DistributedDataParallel, FirstAllReduceStartsBeforeBackwardFinishes) {
  std::vector<std::string> log;
  auto first = std::make_shared<nn::Linear>(32, 64);
  auto model = std::make_shared<nn::Sequential>(
      first, std::make_shared<nn::Functional>([&log](const Tensor& x) {
        Tensor out = x.detach().clone();
        if (auto node = autograd::make_node<ProbeBackward>({x}, &log)) node->set_history(out);
        return out;
      }),
      std::make_shared<nn::ReLU>(), std::make_shared<nn::Linear>(64, 64),
      std::make_shared<nn::ReLU>(), std::make_shared<nn::Linear>(64, 10));
  nn::DistributedDataParallel ddp(
      model, group(),
      {.bucket_cap_mb = 0.01,  // ~10 KB: the last layers' gradients make the first bucket
       .on_bucket_start = [&log](size_t i) { log.push_back("bucket " + std::to_string(i)); }});
  const auto buckets = ddp.bucket_parameter_names();
  ASSERT_GE(buckets.size(), 3u);
  EXPECT_EQ(buckets[0].front(), "5.bias");  // reverse registration order
  Generator gen(5);
  Tensor x = randn({8, 32}, Dtype::Float32, &gen);
  Tensor y = randint(0, 10, {8}, Dtype::Int64, &gen);
  Tensor loss = cross_entropy(ddp(x), y);
  loss.backward();
  ASSERT_FALSE(log.empty());
  EXPECT_EQ(log.front(), "bucket 0");
  const auto probe = std::find(log.begin(), log.end(), "probe");
  ASSERT_NE(probe, log.end());
  EXPECT_GE(probe - log.begin(), 2) << "at least two buckets started before the probe's backward";
  EXPECT_EQ(log.back(), "bucket " + std::to_string(buckets.size() - 1));
  const auto& stats = ddp.last_backward_stats();
  EXPECT_EQ(stats.buckets_started, buckets.size());
  EXPECT_LT(stats.ready_at_first_start, stats.parameters);
  EXPECT_EQ(stats.parameters, 6u);
}

TEST(DistributedDataParallel, ParameterWithoutGradientIsReportedAtTheNextForward) {
  auto used = std::make_shared<nn::Linear>(4, 2);
  auto unused = std::make_shared<nn::Linear>(2, 2);  // registered last: bucket 0, never starts
  auto model = std::make_shared<nn::Sequential>(used, unused);
  auto only_first = std::make_shared<nn::Sequential>(used);
  nn::DistributedDataParallel ddp(model, group(), {.bucket_cap_mb = 1e-5});
  manual_seed(3);
  sum((*only_first)(randn({2, 4}))).backward();  // hooks fire for `used` only
  try {
    ddp(randn({2, 4}));
    FAIL() << "no error";
  } catch (const DistributedError& e) {
    EXPECT_NE(std::string(e.what()).find("gave no gradient to 2 of 4 parameters ('1.weight', "
                                         "'1.bias')"),
              std::string::npos)
        << e.what();
  }
}

TEST(DistributedDataParallel, DifferentModelsOnDifferentRanksAreAnError) {
  auto model = std::make_shared<nn::Linear>(4, group()->rank() == 0 ? 3 : 2);
  try {
    nn::DistributedDataParallel ddp(model, group());
    FAIL() << "no error";
  } catch (const DistributedError& e) {
    EXPECT_NE(std::string(e.what()).find("differ from another rank's"), std::string::npos);
  }
}

TEST(DistributedDataParallel, NonFloatParametersAndBadOptionsAreNamed) {
  auto model = std::make_shared<nn::Linear>(2, 2);
  EXPECT_THROW(nn::DistributedDataParallel(model, group(), {.bucket_cap_mb = 0}), DistributedError);
  EXPECT_THROW(nn::DistributedDataParallel(model, nullptr), DistributedError);
  model->to(Dtype::Float16);
  try {
    nn::DistributedDataParallel ddp(model, group());
    FAIL() << "no error";
  } catch (const DistributedError& e) {
    EXPECT_NE(std::string(e.what()).find("parameter 'weight' has dtype float16"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace aclgrad
