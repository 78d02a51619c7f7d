// The README's "Training loop in 15 lines", as a program that compiles and runs (ctest checks that
// the README shows exactly the lines between the markers).
//   minimal_loop [DATA_DIR] [MAX_BATCHES]
#include <cstdio>
#include <cstdlib>
#include <string>

#include "nn/data.h"
#include "nn/lr_scheduler.h"
#include "nn/nn.h"
#include "nn/optim.h"
#include "nn/transforms.h"
#include "ops/ops.h"

using namespace aclgrad;
using namespace aclgrad::nn;

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : "/usr/share/datasets/fashion-mnist";
  long max_batches = argc > 2 ? std::atol(argv[2]) : -1;
  try {
    // [loop]
    auto model = std::make_shared<Sequential>(
        std::make_shared<Conv2d>(Conv2dOptions(1, 16, 3).padding(1)),
        std::make_shared<BatchNorm2d>(16), std::make_shared<ReLU>(), std::make_shared<MaxPool2d>(2),
        std::make_shared<Flatten>(), std::make_shared<Linear>(16 * 14 * 14, 10));
    optim::Adam opt(model->parameters(), {.lr = 1e-3});
    auto train = std::make_shared<data::TensorDataset>(data::load_mnist(dir, /*train=*/true));
    data::DataLoaderOptions options{.batch_size = 64, .shuffle = true, .seed = 1, .prefetch = 2};
    options.transform = data::transforms::Normalize({0.286}, {0.353});  // Fashion-MNIST mean, std
    data::DataLoader loader(train, options);
    for (auto& batch : loader) {
      Tensor loss = cross_entropy((*model)(batch.data), batch.target);
      opt.zero_grad();
      loss.backward();
      opt.step();
      // [loop end]
      std::printf("loss %.4f\n", loss.item<double>());
      if (--max_batches == 0) break;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "minimal_loop: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
