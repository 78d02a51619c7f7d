// Datasets and the DataLoader (torch.utils.data's model, libtorch-like names).
//
//   auto train = std::make_shared<data::TensorDataset>(data::load_mnist(root, /*train=*/true));
//   data::DataLoader loader(train, {.batch_size = 64, .shuffle = true, .seed = 1, .prefetch = 2});
//   for (int epoch = 0; epoch < 10; ++epoch)
//     for (auto& batch : loader) step(batch.data, batch.target);   // [64, 1, 28, 28], [64]
//
// Each pass over the loader (each begin()) is one epoch. With shuffle, epoch e visits the samples
// in a permutation drawn from Generator(seed + e): reproducible, different every epoch. Batch
// transforms get a generator seeded from (seed, epoch, batch index), so they are deterministic
// too. With prefetch > 0 one background thread prepares up to that many batches ahead (through a
// oneTBB concurrent_bounded_queue); the batches are exactly those of the synchronous path.
#pragma once

#include <cstdint>
#include <functional>
#include <iterator>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "../tensor/random.h"
#include "../tensor/tensor.h"

namespace aclgrad::data {

/// One example, or a batch of examples stacked along a new leading dim.
struct Example {
  Tensor data;
  Tensor target;
};

/// A map-style dataset. get_batch() is called from the prefetch thread, so implementations must
/// allow concurrent const calls (reading immutable tensors is fine).
class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual int64_t size() const = 0;
  /// Example index (0 <= index < size()).
  virtual Example get(int64_t index) const = 0;
  /// The examples at indices stacked along a new dim 0 (data [B, ...], target [B, ...]). The
  /// default stacks get(i); override it for speed.
  virtual Example get_batch(std::span<const int64_t> indices) const;
};

/// Examples are rows of two tensors with the same leading size (torch TensorDataset).
class TensorDataset : public Dataset {
 public:
  /// data [N, ...] and target [N, ...]; both are made contiguous once here.
  TensorDataset(Tensor data, Tensor target);
  int64_t size() const override { return data_.size(0); }
  /// Views of row index (no copy).
  Example get(int64_t index) const override;
  /// Copies the rows (one memcpy per row and tensor).
  Example get_batch(std::span<const int64_t> indices) const override;
  const Tensor& data() const { return data_; }
  const Tensor& target() const { return target_; }

 private:
  Tensor data_, target_;
};

/// The (Fashion-)MNIST split in directory root: "{train|t10k}-images-idx3-ubyte" and
/// "...-labels-idx1-ubyte", each plain or with ".gz". Images float32 [N, 1, 28, 28] in [0, 1],
/// labels int64 [N]. Error if a file is missing or corrupt, or the counts differ.
TensorDataset load_mnist(const std::string& root, bool train = true);

/// Chooses the samples of each epoch and their order (torch.utils.data.Sampler), e.g.
/// data::DistributedSampler (nn/distributed_sampler.h).
class Sampler {
 public:
  virtual ~Sampler() = default;
  /// The dataset indices epoch `epoch` visits, in order; size() of them.
  virtual std::vector<int64_t> indices(int64_t epoch) const = 0;
  /// Samples per epoch (the same every epoch).
  virtual int64_t size() const = 0;
};

/// A transform of whole batches with its own generator (see DataLoader).
using BatchTransform = std::function<Example(Example batch, Generator& gen)>;

struct DataLoaderOptions {
  int64_t batch_size = 1;
  bool shuffle = false;
  /// Drop the last batch when it is smaller than batch_size.
  bool drop_last = false;
  /// Shuffle order of epoch e: a permutation drawn from Generator(seed + e).
  uint64_t seed = 0;
  /// Batches prepared ahead by one background thread; 0 prepares them on the caller's thread.
  int64_t prefetch = 0;
  /// Applied to every batch (e.g. data::transforms::compose(...)); may be empty.
  BatchTransform transform = {};
  /// Which samples each epoch visits and in which order, instead of 0..N-1 (or its shuffle);
  /// shuffle must then be false (the sampler decides the order).
  std::shared_ptr<const Sampler> sampler = nullptr;
};

class DataLoader {
 public:
  class Iterator;

  DataLoader(std::shared_ptr<const Dataset> dataset, DataLoaderOptions options = {});
  /// Batches per epoch: ceil(N / batch_size), or floor with drop_last (N: the sampler's size
  /// when there is one).
  int64_t size() const;
  /// The epoch the next begin() runs (starts at 0, +1 per begin()).
  int64_t epoch() const { return epoch_; }
  void set_epoch(int64_t epoch) { epoch_ = epoch; }
  /// The sample order of an epoch (0..N-1, its permutation with shuffle, or the sampler's).
  std::vector<int64_t> indices(int64_t epoch) const;
  /// Batch number batch of an epoch, computed directly (what iteration yields).
  Example batch(int64_t epoch, int64_t batch) const;
  const DataLoaderOptions& options() const { return options_; }

  /// Starts the next epoch. Only one epoch should be iterated at a time.
  Iterator begin();
  Iterator end() { return Iterator(); }

  /// An input iterator over the batches of one epoch; *it is the current batch.
  class Iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = Example;
    using difference_type = std::ptrdiff_t;
    using pointer = Example*;
    using reference = Example&;

    Iterator() = default;
    Example& operator*() const;
    Example* operator->() const { return &**this; }
    Iterator& operator++();
    /// Iterators compare equal when both are past the end.
    bool operator==(const Iterator& other) const { return at_end() && other.at_end(); }

    struct Run;

   private:
    friend class DataLoader;
    explicit Iterator(std::shared_ptr<Run> run) : run_(std::move(run)) {}
    bool at_end() const;
    std::shared_ptr<Run> run_;
  };

 private:
  std::shared_ptr<const Dataset> dataset_;
  DataLoaderOptions options_;
  int64_t epoch_ = 0;
};

}  // namespace aclgrad::data
