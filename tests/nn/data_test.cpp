// Datasets and the DataLoader: batch counts, coverage, reproducible shuffles, prefetch equals the
// synchronous path, early exit, errors, load_mnist on generated files.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <stdexcept>

#include "nn/data.h"
#include "nn/transforms.h"
#include "tensor/creation.h"

namespace aclgrad::data {
namespace {

// n examples: data [n, 2] = (i, -i) as float32, target [n] = i.
std::shared_ptr<TensorDataset> indexed(int64_t n) {
  std::vector<float> d;
  std::vector<int64_t> t;
  for (int64_t i = 0; i < n; ++i) {
    d.push_back(static_cast<float>(i));
    d.push_back(-static_cast<float>(i));
    t.push_back(i);
  }
  return std::make_shared<TensorDataset>(from_vector(d, {n, 2}), from_vector(t, {n}));
}

std::vector<std::vector<int64_t>> epoch_targets(DataLoader& loader) {
  std::vector<std::vector<int64_t>> out;
  for (auto& batch : loader) out.push_back(batch.target.to_vector<int64_t>());
  return out;
}

TEST(TensorDataset, GetAndGetBatch) {
  auto ds = indexed(5);
  EXPECT_EQ(ds->size(), 5);
  const Example e = ds->get(3);
  EXPECT_EQ(e.data.to_vector<float>(), (std::vector<float>{3, -3}));
  EXPECT_EQ(e.target.item<int64_t>(), 3);
  const std::vector<int64_t> idx = {4, 0, 4};
  const Example b = ds->get_batch(idx);
  EXPECT_EQ(b.data.sizes(), (Shape{3, 2}));
  EXPECT_EQ(b.data.to_vector<float>(), (std::vector<float>{4, -4, 0, 0, 4, -4}));
  EXPECT_EQ(b.target.to_vector<int64_t>(), (std::vector<int64_t>{4, 0, 4}));
  EXPECT_THROW(ds->get(5), IndexError);
  const std::vector<int64_t> bad = {1, 7};
  EXPECT_THROW(ds->get_batch(bad), IndexError);
  EXPECT_THROW(TensorDataset(zeros({3, 2}), zeros({4})), ShapeError);
}

// A dataset without get_batch: the default stacks get().
struct Squares : Dataset {
  int64_t size() const override { return 6; }
  Example get(int64_t i) const override {
    const double v = static_cast<double>(i * i);
    return {full({2, 2}, v, Dtype::Float64), full({}, i, Dtype::Int64)};
  }
};

TEST(Dataset, DefaultGetBatchStacks) {
  Squares ds;
  const std::vector<int64_t> idx = {2, 5};
  const Example b = ds.get_batch(idx);
  EXPECT_EQ(b.data.sizes(), (Shape{2, 2, 2}));
  EXPECT_EQ(b.data.to_vector<double>(), (std::vector<double>{4, 4, 4, 4, 25, 25, 25, 25}));
  EXPECT_EQ(b.target.sizes(), (Shape{2}));
  EXPECT_EQ(b.target.to_vector<int64_t>(), (std::vector<int64_t>{2, 5}));
}

TEST(DataLoader, BatchCountsWithAndWithoutDropLast) {
  DataLoader keep(indexed(10), {.batch_size = 3});
  EXPECT_EQ(keep.size(), 4);
  const auto batches = epoch_targets(keep);
  ASSERT_EQ(batches.size(), 4u);
  EXPECT_EQ(batches[3], (std::vector<int64_t>{9}));
  DataLoader drop(indexed(10), {.batch_size = 3, .drop_last = true});
  EXPECT_EQ(drop.size(), 3);
  EXPECT_EQ(epoch_targets(drop).size(), 3u);
  DataLoader exact(indexed(9), {.batch_size = 3, .drop_last = true});
  EXPECT_EQ(exact.size(), 3);
  DataLoader tiny(indexed(2), {.batch_size = 3, .drop_last = true});
  EXPECT_EQ(tiny.size(), 0);
  EXPECT_TRUE(epoch_targets(tiny).empty());
}

TEST(DataLoader, UnshuffledIsInOrder) {
  DataLoader loader(indexed(7), {.batch_size = 2});
  std::vector<int64_t> all;
  for (auto& b : loader) {
    EXPECT_EQ(b.data.size(1), 2);
    for (int64_t t : b.target.to_vector<int64_t>()) all.push_back(t);
  }
  std::vector<int64_t> expected(7);
  std::iota(expected.begin(), expected.end(), 0);
  EXPECT_EQ(all, expected);
}

TEST(DataLoader, ShuffleVisitsEverySampleOncePerEpochInANewOrder) {
  DataLoader loader(indexed(103), {.batch_size = 10, .shuffle = true, .seed = 42});
  std::vector<std::vector<int64_t>> orders;
  for (int epoch = 0; epoch < 3; ++epoch) {
    std::vector<int64_t> order;
    for (auto& b : loader) {
      const std::vector<float> d = b.data.to_vector<float>();
      const std::vector<int64_t> t = b.target.to_vector<int64_t>();
      for (size_t i = 0; i < t.size(); ++i) {
        EXPECT_EQ(d[2 * i], static_cast<float>(t[i]));  // data and target stay paired
        order.push_back(t[i]);
      }
    }
    std::vector<int64_t> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    for (int64_t i = 0; i < 103; ++i) ASSERT_EQ(sorted[i], i) << "epoch " << epoch;
    EXPECT_EQ(order, loader.indices(epoch));
    orders.push_back(order);
  }
  EXPECT_NE(orders[0], orders[1]);
  EXPECT_NE(orders[1], orders[2]);
  EXPECT_EQ(loader.epoch(), 3);
}

TEST(DataLoader, SameSeedSameOrderDifferentSeedDifferentOrder) {
  DataLoader a(indexed(50), {.batch_size = 8, .shuffle = true, .seed = 7});
  DataLoader b(indexed(50), {.batch_size = 8, .shuffle = true, .seed = 7});
  DataLoader c(indexed(50), {.batch_size = 8, .shuffle = true, .seed = 8});
  const auto a0 = epoch_targets(a), a1 = epoch_targets(a);
  EXPECT_EQ(a0, epoch_targets(b));
  EXPECT_EQ(a1, epoch_targets(b));
  EXPECT_NE(a0, epoch_targets(c));
  a.set_epoch(0);  // replaying an epoch gives its order again
  EXPECT_EQ(epoch_targets(a), a0);
}

BatchTransform augment() {
  return transforms::compose({transforms::RandomCrop(3, 1), transforms::RandomHorizontalFlip(0.5),
                              transforms::Normalize({0.5}, {0.25})});
}

std::shared_ptr<TensorDataset> images(int64_t n) {
  Generator gen(3);
  return std::make_shared<TensorDataset>(rand({n, 1, 4, 4}, Dtype::Float32, &gen),
                                         arange(static_cast<double>(n), Dtype::Int64));
}

TEST(DataLoader, PrefetchYieldsExactlyTheSynchronousBatches) {
  for (int64_t prefetch : {1, 2, 8}) {
    DataLoaderOptions o{.batch_size = 4, .shuffle = true, .seed = 11, .transform = augment()};
    DataLoader sync(images(37), o);
    o.prefetch = prefetch;
    DataLoader async(images(37), o);
    for (int epoch = 0; epoch < 3; ++epoch) {
      std::vector<Example> expected;
      for (auto& b : sync) expected.push_back(b);
      size_t i = 0;
      for (auto& b : async) {
        ASSERT_LT(i, expected.size());
        EXPECT_EQ(b.data.sizes(), (Shape{b.target.size(0), 1, 3, 3}));
        EXPECT_EQ(b.data.to_vector<float>(), expected[i].data.to_vector<float>());
        EXPECT_EQ(b.target.to_vector<int64_t>(), expected[i].target.to_vector<int64_t>());
        // batch() computes the same batch directly
        EXPECT_EQ(async.batch(epoch, static_cast<int64_t>(i)).data.to_vector<float>(),
                  b.data.to_vector<float>());
        ++i;
      }
      EXPECT_EQ(i, expected.size());
    }
  }
}

TEST(DataLoader, BreakingOutOfAPrefetchingEpochStopsTheThread) {
  DataLoader loader(images(1000), {.batch_size = 1, .shuffle = true, .prefetch = 2});
  for (int epoch = 0; epoch < 5; ++epoch) {
    int n = 0;
    for (auto& b : loader) {
      EXPECT_EQ(b.target.numel(), 1);
      if (++n == 3) break;
    }
    EXPECT_EQ(n, 3);
  }
  auto it = loader.begin();  // abandoned right away
  (void)it;
  EXPECT_EQ(loader.epoch(), 6);
}

TEST(DataLoader, TransformErrorsReachTheCallerWithAndWithoutPrefetch) {
  for (int64_t prefetch : {0, 3}) {
    int calls = 0;
    DataLoader loader(
        indexed(20),
        {.batch_size = 2, .prefetch = prefetch, .transform = [&calls](Example b, Generator&) {
           if (++calls == 4) throw std::runtime_error("bad batch");
           return b;
         }});
    int seen = 0;
    try {
      for (auto& b : loader) {
        (void)b;
        ++seen;
      }
      ADD_FAILURE() << "no exception";
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "bad batch");
    }
    EXPECT_EQ(seen, 3);
  }
}

TEST(DataLoader, RejectsBadOptions) {
  EXPECT_THROW(DataLoader(indexed(3), {.batch_size = 0}), Error);
  EXPECT_THROW(DataLoader(nullptr), Error);
  DataLoader loader(indexed(3), {.batch_size = 2});
  EXPECT_THROW(loader.batch(0, 2), IndexError);
  EXPECT_THROW(*loader.end(), Error);
}

// Minimal IDX files for load_mnist: images [n, 2, 2], labels [n].
void write_idx(const std::filesystem::path& path, std::vector<uint8_t> sizes,
               const std::vector<uint8_t>& payload) {
  std::vector<uint8_t> b = {0, 0, 8, static_cast<uint8_t>(sizes.size())};
  for (uint8_t s : sizes) b.insert(b.end(), {0, 0, 0, s});
  b.insert(b.end(), payload.begin(), payload.end());
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

TEST(LoadMnist, ReadsAGeneratedSplit) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("aclgrad_mnist_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  write_idx(dir / "t10k-images-idx3-ubyte", {3, 2, 2}, std::vector<uint8_t>(12, 255));
  write_idx(dir / "t10k-labels-idx1-ubyte", {3}, {4, 1, 9});
  const TensorDataset ds = load_mnist(dir.string(), /*train=*/false);
  EXPECT_EQ(ds.data().sizes(), (Shape{3, 1, 2, 2}));
  EXPECT_EQ(ds.data().to_vector<float>(), std::vector<float>(12, 1.0f));
  EXPECT_EQ(ds.target().to_vector<int64_t>(), (std::vector<int64_t>{4, 1, 9}));
  EXPECT_THROW(load_mnist(dir.string(), /*train=*/true), Error);  // no train files
  write_idx(dir / "t10k-labels-idx1-ubyte", {2}, {4, 1});
  EXPECT_THROW(load_mnist(dir.string(), false), Error);  // 3 images, 2 labels
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace aclgrad::data
