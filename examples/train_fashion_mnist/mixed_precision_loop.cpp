// The README's "Training in bf16" loop, as a program that compiles and runs (ctest checks that
// the README shows exactly the lines between the markers, and runs it in bf16 and in fp16).
//   mixed_precision_loop [DATA_DIR] [MAX_BATCHES] [bf16|fp16]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "autograd/autocast_mode.h"
#include "nn/data.h"
#include "nn/grad_scaler.h"
#include "nn/nn.h"
#include "nn/optim.h"
#include "nn/transforms.h"
#include "ops/ops.h"

using namespace aclgrad;
using namespace aclgrad::nn;

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : "/usr/share/datasets/fashion-mnist";
  long max_batches = argc > 2 ? std::atol(argv[2]) : -1;
  const bool fp16 = argc > 3 && std::strcmp(argv[3], "fp16") == 0;
  const Dtype dtype = fp16 ? Dtype::Float16 : Dtype::BFloat16;
  try {
    auto model = std::make_shared<Sequential>(
        std::make_shared<Conv2d>(Conv2dOptions(1, 16, 3).padding(1)),
        std::make_shared<BatchNorm2d>(16), std::make_shared<ReLU>(), std::make_shared<MaxPool2d>(2),
        std::make_shared<Flatten>(), std::make_shared<Linear>(16 * 14 * 14, 10));
    optim::Adam opt(model->parameters(), {.lr = 1e-3});
    auto train = std::make_shared<data::TensorDataset>(data::load_mnist(dir, /*train=*/true));
    data::DataLoaderOptions options{.batch_size = 64, .shuffle = true, .seed = 1, .prefetch = 2};
    options.transform = data::transforms::Normalize({0.286}, {0.353});
    data::DataLoader loader(train, options);
    // [loop]
    amp::GradScaler scaler({.enabled = dtype == Dtype::Float16});  // bf16 needs no loss scaling
    for (auto& batch : loader) {
      Tensor loss;
      {
        AutocastGuard autocast(dtype);  // Dtype::BFloat16 or Dtype::Float16
        loss = cross_entropy((*model)(batch.data), batch.target);  // conv, linear 16-bit; loss fp32
      }
      opt.zero_grad();
      scaler.scale(loss).backward();  // float32 gradients reach the float32 parameters
      scaler.step(opt);               // skipped if a gradient is inf or NaN (fp16)
      scaler.update();
      // [loop end]
      std::printf("loss %.4f (%s), scale %g\n", loss.item<double>(), dtype_name(loss.dtype()),
                  scaler.get_scale());
      if (--max_batches == 0) break;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mixed_precision_loop: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
