// --profile: where the time of a training step goes.
#pragma once

#include <cstdint>

#include "examples/train_fashion_mnist/config.h"

namespace aclgrad::fmnist {

/// Times `batches` real training steps split into data / forward / loss / backward / optimizer,
/// then each layer's forward and backward on its own (input a leaf, like inside the model),
/// and prints both tables to stdout. Returns the exit code.
int run_profile(const Config& config, int64_t batches);

}  // namespace aclgrad::fmnist
