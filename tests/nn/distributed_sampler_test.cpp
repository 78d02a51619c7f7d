// data::DistributedSampler and DataLoader's sampler option: shards, padding, drop_last, per-epoch
// shuffles, errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>

#include "nn/distributed_sampler.h"
#include "tensor/creation.h"

namespace aclgrad::data {
namespace {

std::vector<int64_t> shard(int64_t n, int64_t replicas, int64_t rank, int64_t epoch,
                           bool shuffle = true, bool drop_last = false) {
  DistributedSampler s(n, {.num_replicas = replicas,
                           .rank = rank,
                           .shuffle = shuffle,
                           .seed = 5,
                           .drop_last = drop_last});
  return s.indices(epoch);
}

TEST(DistributedSampler, ShardsAreDisjointAndCoverEverySampleOncePerEpoch) {
  for (int64_t epoch = 0; epoch < 3; ++epoch) {
    std::vector<int64_t> all;
    for (int64_t rank = 0; rank < 3; ++rank) {
      const auto mine = shard(12, 3, rank, epoch);
      EXPECT_EQ(mine.size(), 4u);
      all.insert(all.end(), mine.begin(), mine.end());
    }
    std::sort(all.begin(), all.end());
    std::vector<int64_t> expected(12);
    std::iota(expected.begin(), expected.end(), 0);
    EXPECT_EQ(all, expected) << "epoch " << epoch;
  }
  EXPECT_NE(shard(12, 3, 0, 0), shard(12, 3, 0, 1));  // a new shuffle each epoch
}

TEST(DistributedSampler, WithoutShuffleRankTakesEveryReplicasThIndex) {
  EXPECT_EQ(shard(7, 2, 0, 0, false), (std::vector<int64_t>{0, 2, 4, 6}));
  // Padded to 8 by repeating the first index.
  EXPECT_EQ(shard(7, 2, 1, 0, false), (std::vector<int64_t>{1, 3, 5, 0}));
  // drop_last cuts to 6: no sample repeated.
  EXPECT_EQ(shard(7, 2, 0, 0, false, true), (std::vector<int64_t>{0, 2, 4}));
  EXPECT_EQ(shard(7, 2, 1, 0, false, true), (std::vector<int64_t>{1, 3, 5}));
}

TEST(DistributedSampler, PaddingRepeatsOnlyTheFewestSamples) {
  std::map<int64_t, int> count;
  for (int64_t rank = 0; rank < 4; ++rank) {
    const auto mine = shard(10, 4, rank, 2);
    EXPECT_EQ(mine.size(), 3u);  // ceil(10 / 4)
    for (int64_t i : mine) ++count[i];
  }
  EXPECT_EQ(count.size(), 10u);  // every sample visited
  int repeated = 0;
  for (const auto& [i, c] : count) repeated += c - 1;
  EXPECT_EQ(repeated, 2);  // 12 slots for 10 samples
}

TEST(DistributedSampler, OneReplicaIsTheDataLoadersShuffle) {
  auto data = std::make_shared<TensorDataset>(zeros({9, 1}), arange(9, Dtype::Int64));
  DataLoader plain(data, {.batch_size = 4, .shuffle = true, .seed = 5});
  EXPECT_EQ(shard(9, 1, 0, 3), plain.indices(3));
}

TEST(DistributedSampler, DataLoaderYieldsTheSamplersSamples) {
  auto data = std::make_shared<TensorDataset>(zeros({10, 1}), arange(10, Dtype::Int64));
  auto sampler = std::make_shared<DistributedSampler>(
      10, DistributedSamplerOptions{.num_replicas = 3, .rank = 2, .seed = 1});
  DataLoader loader(data, {.batch_size = 3, .sampler = sampler});
  EXPECT_EQ(loader.size(), 2);  // 4 samples per rank
  loader.set_epoch(1);
  std::vector<int64_t> seen;
  for (auto& b : loader) {
    for (int64_t t : b.target.to_vector<int64_t>()) seen.push_back(t);
  }
  EXPECT_EQ(seen, sampler->indices(1));
}

TEST(DistributedSampler, BadArgumentsAreNamed) {
  try {
    DistributedSampler(10, {.num_replicas = 2, .rank = 2});
    FAIL() << "no error";
  } catch (const IndexError& e) {
    EXPECT_NE(std::string(e.what()).find("rank 2 is out of range for 2 replicas"),
              std::string::npos);
  }
  EXPECT_THROW(DistributedSampler(10, {.num_replicas = 0}), Error);
  EXPECT_THROW(DistributedSampler(-1, {}), Error);
  auto data = std::make_shared<TensorDataset>(zeros({4, 1}), arange(4, Dtype::Int64));
  auto sampler = std::make_shared<DistributedSampler>(4, DistributedSamplerOptions{});
  EXPECT_THROW(DataLoader(data, {.shuffle = true, .sampler = sampler}), Error);
  // A sampler built for a larger dataset than the loader's: its indices are out of range.
  auto too_big =
      std::make_shared<DistributedSampler>(8, DistributedSamplerOptions{.shuffle = false});
  DataLoader loader(data, {.batch_size = 2, .sampler = too_big});
  EXPECT_THROW(loader.indices(0), IndexError);
}

}  // namespace
}  // namespace aclgrad::data
