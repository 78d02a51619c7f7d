// tbc_sequence: ConvTBC (fairseq's temporal convolution, libaclnn's aclnnConvTbc) end to end.
//
// Each Fashion-MNIST image is read row by row as a sequence: time step t is row t, and its 28
// pixels are the 28 input channels. ConvTBC wants time-batch-channel layout:
//
//   images [B, 1, 28, 28] -> [T=28, B, C=28]
//   ConvTBC(28 -> 64, k=3, pad=1) -> ReLU -> ConvTBC(64 -> 64, k=3, pad=1) -> ReLU   [28, B, 64]
//   max over time                                                                   [B, 64]
//   Linear(64 -> 10)                                                                [B, 10]
//
// Trained with Adam on cross-entropy; prints the loss per epoch and the test accuracy.
//
//   tbc_sequence --epochs 2
//   tbc_sequence --smoke --limit 1024 --epochs 1      (exit 1 unless the loss went down)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "examples/common/command_line.h"
#include "autograd/grad_mode.h"
#include "nn/data.h"
#include "nn/nn.h"
#include "nn/optim.h"
#include "ops/ops.h"

using namespace aclgrad;

namespace {

// A module with its own forward: the layers are registered so parameters() finds them.
struct SequenceClassifier : nn::Module {
  SequenceClassifier() : Module("SequenceClassifier") {
    // padding 1 with kernel 3 keeps the 28 time steps ("same" length).
    conv1 = register_module(
        "conv1", std::make_shared<nn::ConvTBC>(nn::ConvTBCOptions(28, 64, 3).padding(1)));
    conv2 = register_module(
        "conv2", std::make_shared<nn::ConvTBC>(nn::ConvTBCOptions(64, 64, 3).padding(1)));
    fc = register_module("fc", std::make_shared<nn::Linear>(64, 10));
  }

  // images [B, 1, 28, 28] -> logits [B, 10]
  Tensor forward(const Tensor& images) override {
    // The input needs no gradient, so Tensor's own (unrecorded) view methods are fine here:
    // [B, 1, 28, 28] -> [B, 28 rows, 28 pixels] -> [T = 28, B, C = 28]. ConvTBC takes the
    // strided view as is (libaclnn reads non-contiguous tensors without a copy).
    const Tensor seq = images.reshape({images.size(0), 28, 28}).permute({1, 0, 2});
    Tensor h = relu((*conv1)(seq));  // [28, B, 64]
    h = relu((*conv2)(h));           // [28, B, 64]
    // Pooling over time: each feature keeps its strongest response along the sequence;
    // the gradient flows back to that time step only.
    const Tensor pooled = std::get<0>(max(h, /*dim=*/0));  // [B, 64]
    return (*fc)(pooled);
  }

  std::shared_ptr<nn::ConvTBC> conv1, conv2;
  std::shared_ptr<nn::Linear> fc;
};

data::TensorDataset take(const data::TensorDataset& d, int64_t limit) {
  if (limit <= 0 || limit >= d.size()) return d;
  return data::TensorDataset(d.data().narrow(0, 0, limit), d.target().narrow(0, 0, limit));
}

// Fraction of correctly classified images, without recording a graph.
double accuracy(nn::Module& model, const std::shared_ptr<data::TensorDataset>& set) {
  NoGradGuard no_grad;
  data::DataLoader loader(set, {.batch_size = 256});
  int64_t correct = 0;
  for (auto& batch : loader) {
    const Tensor predicted = std::get<1>(max(model(batch.data), /*dim=*/1));  // argmax [B]
    const std::vector<int64_t> p = predicted.to_vector<int64_t>(),
                               t = batch.target.to_vector<int64_t>();
    for (size_t i = 0; i < p.size(); ++i) correct += p[i] == t[i];
  }
  return static_cast<double>(correct) / static_cast<double>(set->size());
}

}  // namespace

int main(int argc, char** argv) {
  examples::CommandLine cli{
      "Fashion-MNIST rows as sequences, classified by ConvTBC temporal convolutions"};
  std::string data_dir = "/usr/share/datasets/fashion-mnist";
  int epochs = 2;
  int64_t batch_size = 64, limit = 0, test_limit = 0;
  double lr = 2e-3;
  uint64_t seed = 1;
  bool smoke = false;
  cli.option("--data", data_dir, "Fashion-MNIST directory (IDX files, plain or .gz)");
  cli.option("--epochs", epochs, "Passes over the training set", examples::ValueCheck::positive());
  cli.option("--batch-size", batch_size, "Sequences per step", examples::ValueCheck::positive());
  cli.option("--lr", lr, "Adam learning rate");
  cli.option("--limit", limit, "Use only the first N training images (0: all)");
  cli.option("--test-limit", test_limit, "Use only the first N test images (0: all)");
  cli.option("--seed", seed, "Seed of the initial weights and the shuffling");
  cli.flag("--smoke", smoke,
           "Exit with status 1 unless the mean loss of the last 5 batches < of the first 5");
  if (auto status = cli.parse(argc, argv)) return *status;

  try {
    manual_seed(seed);
    SequenceClassifier model;
    std::printf("%s\n", model.to_string().c_str());

    auto train = std::make_shared<data::TensorDataset>(
        take(data::load_mnist(data_dir, /*train=*/true), limit));
    auto test = std::make_shared<data::TensorDataset>(
        take(data::load_mnist(data_dir, /*train=*/false), test_limit));
    std::printf("train %lld sequences, test %lld sequences\n",
                static_cast<long long>(train->size()), static_cast<long long>(test->size()));

    optim::Adam opt(model.parameters(), {.lr = lr});
    // Normalize pixels to mean 0 / std 1 (Fashion-MNIST's mean 0.286, std 0.353) on each batch.
    data::DataLoader loader(train, {.batch_size = batch_size,
                                    .shuffle = true,
                                    .seed = seed,
                                    .prefetch = 2,
                                    .transform = [](data::Example b, Generator&) {
                                      b.data = (b.data - 0.286) / 0.353;
                                      return b;
                                    }});
    // The test set gets the same normalization, once.
    auto test_norm =
        std::make_shared<data::TensorDataset>((test->data() - 0.286) / 0.353, test->target());
    std::vector<double> losses;  // every batch loss, for the smoke check
    const auto start = std::chrono::steady_clock::now();
    for (int epoch = 1; epoch <= epochs; ++epoch) {
      model.train();
      double sum_loss = 0;
      int64_t batches = 0;
      for (auto& batch : loader) {
        Tensor loss = cross_entropy(model(batch.data), batch.target);
        opt.zero_grad();
        loss.backward();
        opt.step();
        losses.push_back(loss.item<double>());
        sum_loss += losses.back();
        ++batches;
      }
      model.eval();
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::printf("epoch %d/%d  train loss %.4f  test accuracy %.2f%%  (%.1f s)\n", epoch, epochs,
                  sum_loss / static_cast<double>(batches), 100.0 * accuracy(model, test_norm),
                  seconds);
      std::fflush(stdout);
    }

    if (smoke) {
      // Single batches are noisy; compare the mean of the first and last few.
      const size_t k = std::min<size_t>(5, losses.size() / 2);
      double first = 0, last = 0;
      for (size_t i = 0; i < k; ++i) {
        first += losses[i] / static_cast<double>(k);
        last += losses[losses.size() - 1 - i] / static_cast<double>(k);
      }
      const bool ok = k > 0 && last < first;
      std::printf("smoke: loss %.4f (first %zu batches) -> %.4f (last %zu): %s\n", first, k, last,
                  k, ok ? "PASS" : "FAIL");
      return ok ? 0 : 1;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tbc_sequence: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
