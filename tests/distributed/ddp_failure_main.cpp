// ddp_failure: a data-parallel training loop in which rank 1 fails at step 3, to check that the
// job ends with a non-zero status and a message instead of hanging (ddp_failure_test.cmake).
//
//   mpirun -np 2 ddp_failure throw      # rank 1 throws; main catches it and aborts the job
//   mpirun -np 2 ddp_failure uncaught   # rank 1 throws and nobody catches it
//   mpirun -np 2 ddp_failure hang       # rank 1 stops communicating; rank 0's wait times out
#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <thread>

#include "nn/distributed/distributed_data_parallel.h"
#include "nn/nn.h"
#include "nn/optim.h"
#include "ops/ops.h"
#include "tensor/random.h"

using namespace aclgrad;

namespace {

void train(distributed::ProcessGroup& group, std::shared_ptr<distributed::ProcessGroup> g,
           const std::string& mode) {
  auto model = std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(16, 32),
                                                std::make_shared<nn::ReLU>(),
                                                std::make_shared<nn::Linear>(32, 4));
  nn::DistributedDataParallel ddp(model, g);
  optim::SGD opt(ddp.parameters(), {.lr = 0.1});
  Generator gen(static_cast<uint64_t>(group.rank()));
  for (int step = 0; step < 10; ++step) {
    if (group.rank() == 1 && step == 3) {
      if (mode == "hang") std::this_thread::sleep_for(std::chrono::minutes(10));
      throw std::runtime_error("simulated failure in the data pipeline at step 3");
    }
    Tensor loss = cross_entropy(ddp(randn({8, 16}, Dtype::Float32, &gen)),
                                randint(0, 4, {8}, Dtype::Int64, &gen));
    opt.zero_grad();
    loss.backward();
    opt.step();
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "throw";
  auto group = distributed::ProcessGroup::init({.timeout = std::chrono::seconds(3)});
  if (mode == "uncaught") {
    train(*group, group, mode);
    return 0;
  }
  try {
    train(*group, group, mode);
  } catch (const std::exception& e) {
    group->abort(std::string("error: ") + e.what());
  }
  std::printf("rank %d finished\n", group->rank());
  return 0;
}
