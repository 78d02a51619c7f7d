// DataLoader: epoch order, batch assembly, and the optional prefetch thread.
#include <tbb/concurrent_queue.h>

#include <atomic>
#include <exception>
#include <thread>

#include "nn/data.h"

namespace aclgrad::data {

namespace {

// splitmix64: decorrelates the seeds of neighbouring (epoch, batch) pairs.
uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

DataLoader::DataLoader(std::shared_ptr<const Dataset> dataset, DataLoaderOptions options)
    : dataset_(std::move(dataset)), options_(std::move(options)) {
  check(dataset_ != nullptr, "DataLoader: dataset is null");
  check(options_.batch_size >= 1, "DataLoader: batch_size must be positive, got ",
        options_.batch_size);
  check(options_.prefetch >= 0, "DataLoader: prefetch must be >= 0, got ", options_.prefetch);
  check(!(options_.sampler && options_.shuffle),
        "DataLoader: sampler and shuffle=true are mutually exclusive (the sampler decides the "
        "order)");
}

int64_t DataLoader::size() const {
  const int64_t n = options_.sampler ? options_.sampler->size() : dataset_->size();
  const int64_t b = options_.batch_size;
  return options_.drop_last ? n / b : (n + b - 1) / b;
}

std::vector<int64_t> DataLoader::indices(int64_t epoch) const {
  const int64_t n = dataset_->size();
  if (options_.sampler) {
    std::vector<int64_t> order = options_.sampler->indices(epoch);
    check(static_cast<int64_t>(order.size()) == options_.sampler->size(),
          "DataLoader: sampler "
          "returned ",
          order.size(), " indices for epoch ", epoch, ", its size() is ", options_.sampler->size());
    for (int64_t i : order) {
      check<IndexError>(i >= 0 && i < n, "DataLoader: sampler index ", i,
                        " is out of range for a dataset of ", n, " samples");
    }
    return order;
  }
  std::vector<int64_t> order(n);
  for (int64_t i = 0; i < n; ++i) order[i] = i;
  if (options_.shuffle) {  // Fisher-Yates
    Generator gen(options_.seed + static_cast<uint64_t>(epoch));
    for (int64_t i = n - 1; i > 0; --i) {
      std::swap(order[i], order[gen.below(static_cast<uint64_t>(i) + 1)]);
    }
  }
  return order;
}

namespace {

Example make_batch(const Dataset& dataset, const DataLoaderOptions& o,
                   const std::vector<int64_t>& order, int64_t epoch, int64_t b) {
  const int64_t start = b * o.batch_size;
  const int64_t count = std::min<int64_t>(o.batch_size, static_cast<int64_t>(order.size()) - start);
  Example batch = dataset.get_batch(std::span<const int64_t>(order.data() + start, count));
  if (o.transform) {
    Generator gen(mix(mix(o.seed) ^ static_cast<uint64_t>(epoch)) ^ static_cast<uint64_t>(b));
    batch = o.transform(std::move(batch), gen);
  }
  return batch;
}

}  // namespace

Example DataLoader::batch(int64_t epoch, int64_t b) const {
  check<IndexError>(b >= 0 && b < size(), "DataLoader: batch ", b, " is out of range for ", size(),
                    " batches per epoch");
  return make_batch(*dataset_, options_, indices(epoch), epoch, b);
}

// One epoch in progress: yields batches in order, made here or by the prefetch thread.
struct DataLoader::Iterator::Run {
  struct Item {
    Example batch;
    std::exception_ptr error;
  };

  Run(std::shared_ptr<const Dataset> dataset, const DataLoaderOptions& options, int64_t epoch,
      std::vector<int64_t> order, int64_t batches)
      : dataset_(std::move(dataset)),
        options_(options),
        epoch_(epoch),
        order_(std::move(order)),
        batches_(batches) {
    if (options_.prefetch > 0 && batches_ > 0) {
      queue_.set_capacity(options_.prefetch);
      producer_ = std::thread([this] { produce(); });
    }
    try {
      advance();
    } catch (...) {
      shutdown();
      throw;
    }
  }

  ~Run() { shutdown(); }

  // Stops and joins the producer (if any).
  void shutdown() {
    if (!producer_.joinable()) return;
    stop_ = true;
    // Drain so that a push blocked on a full queue completes and the producer sees stop_.
    Item discard;
    while (!producer_done_) {
      if (!queue_.try_pop(discard)) std::this_thread::yield();
    }
    producer_.join();
  }

  void produce() {
    for (int64_t b = 0; b < batches_ && !stop_; ++b) {
      Item item;
      try {
        item.batch = make_batch(*dataset_, options_, order_, epoch_, b);
      } catch (...) {
        item.error = std::current_exception();
      }
      const bool failed = item.error != nullptr;
      queue_.push(std::move(item));
      if (failed) break;
    }
    producer_done_ = true;
  }

  // Moves to the next batch (or past the end).
  void advance() {
    if (next_ >= batches_) {
      done_ = true;
      current_ = Example();
      return;
    }
    if (producer_.joinable()) {
      Item item;
      queue_.pop(item);
      if (item.error) {
        done_ = true;
        std::rethrow_exception(item.error);
      }
      current_ = std::move(item.batch);
    } else {
      current_ = make_batch(*dataset_, options_, order_, epoch_, next_);
    }
    ++next_;
  }

  std::shared_ptr<const Dataset> dataset_;
  DataLoaderOptions options_;
  int64_t epoch_;
  std::vector<int64_t> order_;
  int64_t batches_;
  int64_t next_ = 0;
  bool done_ = false;
  Example current_;
  tbb::concurrent_bounded_queue<Item> queue_;
  std::atomic<bool> stop_{false}, producer_done_{false};
  std::thread producer_;
};

DataLoader::Iterator DataLoader::begin() {
  const int64_t epoch = epoch_++;
  return Iterator(
      std::make_shared<Iterator::Run>(dataset_, options_, epoch, indices(epoch), size()));
}

bool DataLoader::Iterator::at_end() const {
  return run_ == nullptr || run_->done_;
}

Example& DataLoader::Iterator::operator*() const {
  check(!at_end(), "DataLoader: dereferencing an iterator past the end");
  return run_->current_;
}

DataLoader::Iterator& DataLoader::Iterator::operator++() {
  check(!at_end(), "DataLoader: incrementing an iterator past the end");
  run_->advance();
  return *this;
}

}  // namespace aclgrad::data
