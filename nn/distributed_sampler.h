// data::DistributedSampler: each rank of a data-parallel job visits its own share of the dataset
// (torch.utils.data.distributed.DistributedSampler).
//
//   auto sampler = std::make_shared<data::DistributedSampler>(
//       dataset->size(), DistributedSamplerOptions{.num_replicas = world, .rank = rank,
//                                                  .shuffle = true, .seed = seed});
//   data::DataLoader loader(dataset, {.batch_size = global_batch / world, .sampler = sampler});
//
// Epoch e: every rank draws the same permutation of 0..N-1 from Generator(seed + e) (the same
// shuffle as DataLoader's), pads it to a multiple of num_replicas by repeating its first
// indices (or, with drop_last, cuts it down to one), and takes every num_replicas-th index
// starting at rank. So in each epoch every sample is visited exactly once across ranks (plus
// the few repeated ones when N is not a multiple), and every rank has the same number of
// samples, hence of batches and of collective calls.
#pragma once

#include <cstdint>
#include <vector>

#include "../nn/data.h"

namespace aclgrad::data {

struct DistributedSamplerOptions {
  int64_t num_replicas = 1;  // processes sharing the dataset (the world size)
  int64_t rank = 0;          // 0 <= rank < num_replicas
  bool shuffle = true;
  uint64_t seed = 0;
  /// Drop the tail so that N divides evenly (no sample repeated); otherwise pad.
  bool drop_last = false;
};

class DistributedSampler : public Sampler {
 public:
  /// dataset_size >= 0; Error naming the value when num_replicas < 1 or rank is out of range.
  DistributedSampler(int64_t dataset_size, DistributedSamplerOptions options);
  std::vector<int64_t> indices(int64_t epoch) const override;
  /// Samples per rank and epoch: ceil(N / num_replicas), floor with drop_last.
  int64_t size() const override { return per_rank_; }
  const DistributedSamplerOptions& options() const { return options_; }

 private:
  int64_t dataset_size_;
  DistributedSamplerOptions options_;
  int64_t per_rank_;
};

}  // namespace aclgrad::data
