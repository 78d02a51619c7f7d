#include "examples/train_fashion_mnist/model.h"

#include "nn/nn.h"

namespace aclgrad::fmnist {

std::shared_ptr<nn::Sequential> make_model(
    double dropout, const std::function<std::shared_ptr<nn::Module>(int64_t)>& batchnorm) {
  using namespace nn;
  auto norm = [&](int64_t channels) -> std::shared_ptr<Module> {
    return batchnorm ? batchnorm(channels) : std::make_shared<BatchNorm2d>(channels);
  };
  return std::make_shared<Sequential>(std::initializer_list<std::shared_ptr<Module>>{
      std::make_shared<Conv2d>(Conv2dOptions(1, 32, 3).padding(1)), norm(32),
      std::make_shared<ReLU>(), std::make_shared<MaxPool2d>(2),
      std::make_shared<Conv2d>(Conv2dOptions(32, 64, 3).padding(1)), norm(64),
      std::make_shared<ReLU>(), std::make_shared<MaxPool2d>(2), std::make_shared<Flatten>(),
      std::make_shared<Linear>(64 * 7 * 7, 128), std::make_shared<ReLU>(),
      std::make_shared<Dropout>(dropout), std::make_shared<Linear>(128, 10)});
}

}  // namespace aclgrad::fmnist
