// An outside program using the installed framework through its umbrella header only: two
// training steps of a tiny CNN on random data. Prints both losses; exits non-zero unless they are
// finite and the second is lower.
#include <aclgrad/aclgrad.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <vector>

using namespace aclgrad;
using namespace aclgrad::nn;

int main() {
  Generator gen(1);
  auto model = std::make_shared<Sequential>(
      std::make_shared<Conv2d>(Conv2dOptions(1, 4, 3).padding(1)), std::make_shared<ReLU>(),
      std::make_shared<MaxPool2d>(2), std::make_shared<Flatten>(),
      std::make_shared<Linear>(4 * 4 * 4, 3));
  optim::Adam opt(model->parameters(), {.lr = 1e-2});
  const Tensor x = randn({8, 1, 8, 8}, Dtype::Float32, &gen);
  const Tensor y = from_vector(std::vector<int64_t>{0, 1, 2, 0, 1, 2, 0, 1}, {8}, Dtype::Int64);
  double losses[2];
  for (double& l : losses) {
    Tensor loss = cross_entropy((*model)(x), y);
    opt.zero_grad();
    loss.backward();
    opt.step();
    l = loss.item<double>();
  }
  std::printf("aclgrad consumer: loss %.4f -> %.4f\n", losses[0], losses[1]);
  return std::isfinite(losses[1]) && losses[1] < losses[0] ? 0 : 1;
}
