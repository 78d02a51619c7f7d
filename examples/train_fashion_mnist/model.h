// The Fashion-MNIST CNN of the main job, on its own so that other programs (bench/
// train_step_bench) can build the identical model: model.cpp depends on nn/ only.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "nn/sequential.h"

namespace aclgrad::fmnist {

/// Conv(1→32)+BN+ReLU+MaxPool → Conv(32→64)+BN+ReLU+MaxPool → Flatten → Linear(3136→128)+ReLU
/// +Dropout → Linear(128→10). Input [N, 1, 28, 28] (normalised), output logits [N, 10].
/// batchnorm(channels) makes the normalisation layers (default: nn::BatchNorm2d), e.g.
/// nn::SyncBatchNorm2d for distributed training.
std::shared_ptr<nn::Sequential> make_model(
    double dropout, const std::function<std::shared_ptr<nn::Module>(int64_t)>& batchnorm = nullptr);

}  // namespace aclgrad::fmnist
