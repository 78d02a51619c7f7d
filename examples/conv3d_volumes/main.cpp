// conv3d_volumes: classify generated 3-d shapes with Conv3d + MaxPool3d.
//
// The dataset is made up here, seeded: each sample is a 16x16x16 volume holding one noisy solid
// shape at a random position and size,
//   0 sphere   |p - c| <= r
//   1 cube     max(|dx|, |dy|, |dz|) <= s                   (axis-aligned)
//   2 torus    (sqrt(u^2 + v^2) - R)^2 + w^2 <= r^2        (axis along x, y or z)
// plus Gaussian noise on every voxel. The network:
//
//   [N, 1, 16, 16, 16] -Conv3d(1->8, 3, pad 1)-ReLU-MaxPool3d(2)-> [N, 8, 8, 8, 8]
//                      -Conv3d(8->16, 3, pad 1)-ReLU-MaxPool3d(2)-> [N, 16, 4, 4, 4]
//                      -Flatten-Linear(1024 -> 3)-> logits [N, 3]
//
//   conv3d_volumes --epochs 4
//   conv3d_volumes --smoke --train-size 192 --epochs 2     (exit 1 unless the loss went down)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <numbers>
#include <string>
#include <tuple>
#include <vector>

#include "examples/common/command_line.h"
#include "autograd/grad_mode.h"
#include "nn/data.h"
#include "nn/nn.h"
#include "nn/optim.h"
#include "ops/ops.h"
#include "tensor/creation.h"

using namespace aclgrad;

namespace {

constexpr int64_t kSide = 16, kClasses = 3;
const char* const kClassNames[kClasses] = {"sphere", "cube", "torus"};

// n volumes [n, 1, 16, 16, 16] (float32) and their labels [n] (int64), from a seeded generator.
data::TensorDataset make_volumes(int64_t n, uint64_t seed, double noise) {
  Generator gen(seed);
  auto uniform = [&](double lo, double hi) { return lo + (hi - lo) * gen.uniform(); };
  auto gaussian = [&] {  // Box-Muller
    const double u1 = 1.0 - gen.uniform(), u2 = gen.uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  };
  std::vector<float> voxels(static_cast<size_t>(n * kSide * kSide * kSide));
  std::vector<int64_t> labels(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t label = static_cast<int64_t>(gen.below(kClasses));
    labels[static_cast<size_t>(i)] = label;
    const double c[3] = {uniform(6.5, 8.5), uniform(6.5, 8.5), uniform(6.5, 8.5)};
    const double size = label == 0   ? uniform(3.5, 6.0)
                        : label == 1 ? uniform(2.5, 4.5)
                                     : uniform(3.5, 5.0);
    const double tube = uniform(1.2, 2.0);  // torus minor radius
    const int axis = static_cast<int>(gen.below(3));
    float* v = voxels.data() + i * kSide * kSide * kSide;
    for (int64_t z = 0; z < kSide; ++z)
      for (int64_t y = 0; y < kSide; ++y)
        for (int64_t x = 0; x < kSide; ++x) {
          const double d[3] = {x - c[0], y - c[1], z - c[2]};
          bool inside = false;
          if (label == 0) {
            inside = d[0] * d[0] + d[1] * d[1] + d[2] * d[2] <= size * size;
          } else if (label == 1) {
            inside = std::max({std::abs(d[0]), std::abs(d[1]), std::abs(d[2])}) <= size;
          } else {  // torus around `axis`: w along the axis, (u, v) the plane of the ring
            const double w = d[axis], u = d[(axis + 1) % 3], vv = d[(axis + 2) % 3];
            const double ring = std::sqrt(u * u + vv * vv) - size;
            inside = ring * ring + w * w <= tube * tube;
          }
          *v++ = static_cast<float>((inside ? 1.0 : 0.0) + noise * gaussian());
        }
  }
  return data::TensorDataset(from_vector(voxels, {n, 1, kSide, kSide, kSide}),
                             from_vector(labels, {n}));
}

std::shared_ptr<nn::Sequential> make_model() {
  using namespace nn;
  return std::make_shared<Sequential>(
      std::make_shared<Conv3d>(Conv3dOptions(1, 8, 3).padding(1)), std::make_shared<ReLU>(),
      std::make_shared<MaxPool3d>(2),  // 16^3 -> 8^3
      std::make_shared<Conv3d>(Conv3dOptions(8, 16, 3).padding(1)), std::make_shared<ReLU>(),
      std::make_shared<MaxPool3d>(2),  // 8^3 -> 4^3
      std::make_shared<Flatten>(), std::make_shared<Linear>(16 * 4 * 4 * 4, kClasses));
}

// Accuracy overall and per class, without recording a graph.
double accuracy(nn::Module& model, const data::TensorDataset& set, int64_t per_class[2][kClasses]) {
  NoGradGuard no_grad;
  const Tensor predicted = std::get<1>(max(model(set.data()), /*dim=*/1));  // argmax [N]
  const std::vector<int64_t> p = predicted.to_vector<int64_t>(),
                             t = set.target().to_vector<int64_t>();
  int64_t correct = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    per_class[0][t[i]] += p[i] == t[i];  // correct per class
    per_class[1][t[i]] += 1;             // total per class
    correct += p[i] == t[i];
  }
  return static_cast<double>(correct) / static_cast<double>(p.size());
}

}  // namespace

int main(int argc, char** argv) {
  examples::CommandLine cli{"Conv3d classifier of generated volumes (sphere / cube / torus)"};
  int epochs = 4;
  int64_t train_size = 1200, test_size = 300, batch_size = 32;
  double lr = 2e-3, noise = 0.3;
  uint64_t seed = 1;
  bool smoke = false;
  cli.option("--epochs", epochs, "Passes over the training set", examples::ValueCheck::positive());
  cli.option("--train-size", train_size, "Generated training volumes",
             examples::ValueCheck::positive());
  cli.option("--test-size", test_size, "Generated test volumes", examples::ValueCheck::positive());
  cli.option("--batch-size", batch_size, "Volumes per step", examples::ValueCheck::positive());
  cli.option("--lr", lr, "Adam learning rate");
  cli.option("--noise", noise, "Standard deviation of the voxel noise");
  cli.option("--seed", seed, "Seed of the data, the initial weights and the shuffling");
  cli.flag("--smoke", smoke,
           "Exit with status 1 unless the mean loss of the last 3 batches < of the first 3");
  if (auto status = cli.parse(argc, argv)) return *status;

  try {
    manual_seed(seed);
    auto model = make_model();
    std::printf("%s\n", model->to_string().c_str());
    // Different seeds for the two splits, so test volumes are new ones.
    auto train = std::make_shared<data::TensorDataset>(make_volumes(train_size, seed, noise));
    const data::TensorDataset test = make_volumes(test_size, seed + 1000003, noise);
    std::printf("generated %lld training and %lld test volumes of %lld^3 (chance: 33.3%%)\n",
                static_cast<long long>(train_size), static_cast<long long>(test_size),
                static_cast<long long>(kSide));

    optim::Adam opt(model->parameters(), {.lr = lr});
    data::DataLoader loader(train, {.batch_size = batch_size, .shuffle = true, .seed = seed});
    std::vector<double> losses;
    const auto start = std::chrono::steady_clock::now();
    for (int epoch = 1; epoch <= epochs; ++epoch) {
      model->train();
      double sum_loss = 0;
      int64_t batches = 0;
      for (auto& batch : loader) {
        Tensor loss = cross_entropy((*model)(batch.data), batch.target);
        opt.zero_grad();
        loss.backward();
        opt.step();
        losses.push_back(loss.item<double>());
        sum_loss += losses.back();
        ++batches;
      }
      model->eval();
      int64_t per_class[2][kClasses] = {};
      const double acc = accuracy(*model, test, per_class);
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::printf("epoch %d/%d  train loss %.4f  test accuracy %.1f%%  (", epoch, epochs,
                  sum_loss / static_cast<double>(batches), 100.0 * acc);
      for (int64_t c = 0; c < kClasses; ++c)
        std::printf("%s %lld/%lld, ", kClassNames[c], static_cast<long long>(per_class[0][c]),
                    static_cast<long long>(per_class[1][c]));
      std::printf("%.1f s)\n", seconds);
      std::fflush(stdout);
    }

    if (smoke) {
      const size_t k = std::min<size_t>(3, losses.size() / 2);
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
    std::fprintf(stderr, "conv3d_volumes: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
