// Image transforms over whole batches [N, C, H, W] (a single image [C, H, W] works too), float32
// or float64, returning new tensors. The random ones draw from the generator they are given, in
// a fixed order (example by example), so a fixed seed gives fixed results; torchvision's
// semantics otherwise. The BatchTransform factories plug them into DataLoaderOptions::transform:
//
//   .transform = transforms::compose({transforms::RandomCrop(28, 4),
//                                     transforms::RandomHorizontalFlip(),
//                                     transforms::Normalize({0.2860}, {0.3530})})
#pragma once

#include <cstdint>
#include <vector>

#include "../nn/data.h"
#include "../tensor/random.h"
#include "../tensor/tensor.h"

namespace aclgrad::data::transforms {

/// (x - mean[c]) / std[c] per channel, in the tensor's dtype with mean and std rounded to it
/// (torchvision Normalize). mean/std hold one value per channel, or one for all.
Tensor normalize(const Tensor& images, const std::vector<double>& mean,
                 const std::vector<double>& std);

/// Pads each image with padding zeros on every side, then crops a size x size window at a
/// random offset, per example (torchvision RandomCrop(size, padding)): for each example in
/// order, top = gen.below(H + 2p - size + 1), then left = gen.below(W + 2p - size + 1).
Tensor random_crop(const Tensor& images, int64_t size, int64_t padding, Generator& gen);

/// Mirrors each image left-right with probability p: example n is flipped when its draw
/// gen.uniform() < p (one draw per example, in order).
Tensor random_horizontal_flip(const Tensor& images, double p, Generator& gen);

/// Batch transforms (act on Example::data, keep the target).
BatchTransform Normalize(std::vector<double> mean, std::vector<double> std);
BatchTransform RandomCrop(int64_t size, int64_t padding = 0);
BatchTransform RandomHorizontalFlip(double p = 0.5);
/// Applies the transforms in order with the same generator.
BatchTransform compose(std::vector<BatchTransform> transforms);

}  // namespace aclgrad::data::transforms
