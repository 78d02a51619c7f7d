// Trains the main job's CNN for a few steps in a given precision and writes everything PyTorch
// needs to repeat them into one safetensors file: the initial weights ("init.<name>"), the
// normalised input batches ("x", "y") and our loss at every step ("loss"). The steps are the main
// job's without its randomness (no shuffle, no augmentation, no dropout) and with a constant
// learning rate, so both frameworks see the same numbers. scripts/autocast_parity_pytorch.py runs
// this and the same steps under torch.cpu.amp.autocast, and compares the losses.
//
//   autocast_parity OUT.safetensors [STEPS=30] [fp32|bf16|fp16] [DATA_DIR]
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "autograd/autocast_mode.h"
#include "examples/train_fashion_mnist/trainer.h"
#include "nn/checkpoint.h"
#include "nn/grad_scaler.h"
#include "nn/transforms.h"
#include "ops/ops.h"
#include "tensor/creation.h"
#include "tensor/random.h"

using namespace aclgrad;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: autocast_parity OUT.safetensors [STEPS] [fp32|bf16|fp16] [DIR]\n");
    return 2;
  }
  const std::string out = argv[1];
  const int64_t steps = argc > 2 ? std::atoll(argv[2]) : 30;
  const std::string precision_name = argc > 3 ? argv[3] : "bf16";
  const std::string dir = argc > 4 ? argv[4] : "/usr/share/datasets/fashion-mnist";
  constexpr int64_t kBatch = 128;
  constexpr double kLr = 1e-3, kWeightDecay = 5e-4;
  try {
    if (steps < 1) throw std::runtime_error("STEPS must be >= 1, got " + std::string(argv[2]));
    const fmnist::Precision precision(precision_name);
    fmnist::check_data_dir(dir);
    manual_seed(1);
    auto model = fmnist::make_model(/*dropout=*/0.0);
    nn::TensorMap file;
    for (const auto& [name, t] : model->state_dict()) file["init." + name] = t.clone();

    const data::TensorDataset train = data::load_mnist(dir, /*train=*/true);
    const Tensor x = data::transforms::normalize(train.data().narrow(0, 0, steps * kBatch),
                                                 {fmnist::kMean}, {fmnist::kStd});
    const Tensor y = train.target().narrow(0, 0, steps * kBatch).contiguous();
    optim::AdamWOptions adam;
    adam.lr = kLr;
    adam.weight_decay = kWeightDecay;
    optim::AdamW opt(model->parameters(), adam);
    amp::GradScaler scaler({.enabled = precision.loss_scaling});
    std::vector<double> losses;
    for (int64_t s = 0; s < steps; ++s) {
      Tensor loss;
      {
        AutocastGuard autocast(precision.dtype, precision.autocast);
        loss = cross_entropy((*model)(x.narrow(0, s * kBatch, kBatch)),
                             y.narrow(0, s * kBatch, kBatch));
      }
      opt.zero_grad();
      scaler.scale(loss).backward();
      scaler.step(opt);
      scaler.update();
      losses.push_back(loss.item<double>());
      std::printf("step %lld loss %.6f\n", static_cast<long long>(s), losses.back());
    }
    file["x"] = x.contiguous();
    file["y"] = y;
    file["loss"] = from_vector(losses, {steps}, Dtype::Float64);
    nn::save_safetensors(out, file,
                         {{"precision", precision_name},
                          {"batch_size", std::to_string(kBatch)},
                          {"lr", std::to_string(kLr)},
                          {"weight_decay", std::to_string(kWeightDecay)}});
    std::printf("wrote %s (%lld steps, %s)\n", out.c_str(), static_cast<long long>(steps),
                precision_name.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "autocast_parity: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
