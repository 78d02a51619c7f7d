#include "nn/distributed_sampler.h"

#include <utility>

#include "tensor/random.h"

namespace aclgrad::data {

DistributedSampler::DistributedSampler(int64_t dataset_size, DistributedSamplerOptions options)
    : dataset_size_(dataset_size), options_(options) {
  check(dataset_size >= 0, "DistributedSampler: dataset_size must be >= 0, got ", dataset_size);
  check(options_.num_replicas >= 1, "DistributedSampler: num_replicas must be >= 1, got ",
        options_.num_replicas);
  check<IndexError>(options_.rank >= 0 && options_.rank < options_.num_replicas,
                    "DistributedSampler: rank ", options_.rank, " is out of range for ",
                    options_.num_replicas, " replicas (expected 0 <= rank < num_replicas)");
  const int64_t r = options_.num_replicas;
  per_rank_ = options_.drop_last ? dataset_size / r : (dataset_size + r - 1) / r;
}

std::vector<int64_t> DistributedSampler::indices(int64_t epoch) const {
  const int64_t n = dataset_size_, r = options_.num_replicas;
  std::vector<int64_t> order(n);
  for (int64_t i = 0; i < n; ++i) order[i] = i;
  if (options_.shuffle) {  // Fisher-Yates, as DataLoader's shuffle
    Generator gen(options_.seed + static_cast<uint64_t>(epoch));
    for (int64_t i = n - 1; i > 0; --i) {
      std::swap(order[i], order[gen.below(static_cast<uint64_t>(i) + 1)]);
    }
  }
  // Position p of the padded (or cut) order of length per_rank_ * r is order[p % n].
  std::vector<int64_t> mine;
  mine.reserve(static_cast<size_t>(per_rank_));
  for (int64_t k = 0; k < per_rank_; ++k) mine.push_back(order[(k * r + options_.rank) % n]);
  return mine;
}

}  // namespace aclgrad::data
