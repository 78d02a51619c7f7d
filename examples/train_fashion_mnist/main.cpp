// train_fashion_mnist: trains a small CNN on Fashion-MNIST (the project's main job).
//
//   train_fashion_mnist                       # default run: ~91-92% test accuracy
//   train_fashion_mnist --epochs 2 --out runs/a
//   train_fashion_mnist --resume runs/a/checkpoint.safetensors --out runs/a
//   train_fashion_mnist --compare A.safetensors B.safetensors   # bitwise tensor comparison
//   train_fashion_mnist --precision bf16      # mixed precision (autocast; fp16: + loss scaling)
//   train_fashion_mnist --profile 20          # where a training step's time goes
//   mpirun -np 2 train_fashion_mnist --distributed   # data parallel over 2 processes
#include <tbb/global_control.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <thread>
#include <vector>

#include "examples/common/command_line.h"
#include "examples/train_fashion_mnist/profile.h"
#include "examples/train_fashion_mnist/trainer.h"
#include "nn/checkpoint.h"
#include "nn/distributed/process_group.h"

namespace {

using namespace aclgrad;

// Exit 0 when both files hold the same tensor names with identical dtype, shape and bytes, and
// the same training state in their metadata (optimizer, scheduler and loss-scaler entries; not
// timings).
int compare_checkpoints(const std::string& a, const std::string& b) {
  nn::Metadata ma, mb;
  const nn::TensorMap ta = nn::load_safetensors(a, &ma), tb = nn::load_safetensors(b, &mb);
  int64_t differing = 0;
  auto state_of = [](const nn::Metadata& m) {
    nn::Metadata state;
    for (const auto& [key, value] : m) {
      for (const char* prefix : {"optimizer.", "scheduler.", "grad_scaler."})
        if (key.rfind(prefix, 0) == 0) state[key] = value;
    }
    return state;
  };
  const nn::Metadata sa = state_of(ma), sb = state_of(mb);
  for (const auto& [key, value] : sa) {
    const auto it = sb.find(key);
    if (it == sb.end() || it->second != value) {
      std::printf("differs: metadata %s (%s vs %s)\n", key.c_str(), value.c_str(),
                  it == sb.end() ? "absent" : it->second.c_str());
      ++differing;
    }
  }
  for (const auto& [key, value] : sb) {
    if (!sa.count(key))
      std::printf("only in %s: metadata %s\n", b.c_str(), key.c_str()), ++differing;
  }
  for (const auto& [name, x] : ta) {
    const auto it = tb.find(name);
    if (it == tb.end()) {
      std::printf("only in %s: %s\n", a.c_str(), name.c_str()), ++differing;
      continue;
    }
    const Tensor& y = it->second;
    if (x.dtype() != y.dtype() || x.sizes() != y.sizes() ||
        std::memcmp(x.contiguous().data_ptr(), y.contiguous().data_ptr(),
                    static_cast<size_t>(x.numel() * x.element_size())) != 0) {
      std::printf("differs: %s\n", name.c_str()), ++differing;
    }
  }
  for (const auto& [name, y] : tb) {
    if (!ta.count(name)) std::printf("only in %s: %s\n", b.c_str(), name.c_str()), ++differing;
  }
  if (differing == 0) {
    std::printf("bit-identical: %zu tensors\n", ta.size());
    return 0;
  }
  std::printf("%lld of %zu tensors differ\n", static_cast<long long>(differing), ta.size());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  fmnist::Config c;
  std::vector<std::string> compare;
  int64_t profile_batches = 0;

  examples::CommandLine cli{
      "Trains a small CNN (2 conv + BN + max-pool, 2 linear) on Fashion-MNIST with "
      "AdamW and a one-cycle schedule. Progress on stderr, one summary line per epoch "
      "on stdout; metrics.csv, curves.svg and checkpoint.safetensors in --out after "
      "every epoch.",
      "train_fashion_mnist"};
  cli.option("--data", c.data_dir, "Directory with the (Fashion-)MNIST IDX files (.gz or not)");
  cli.option("--epochs", c.epochs, "Epochs to train", examples::ValueCheck::range(1, 1000));
  cli.option("--batch-size", c.batch_size, "Training batch size",
             examples::ValueCheck::range(1, 65536));
  cli.option("--lr", c.lr, "Peak learning rate of the one-cycle schedule",
             examples::ValueCheck::positive());
  cli.option("--weight-decay", c.weight_decay, "AdamW decoupled weight decay",
             examples::ValueCheck::non_negative());
  cli.option("--dropout", c.dropout, "Dropout before the last layer",
             examples::ValueCheck::range(0.0, 0.99));
  cli.option("--augment", c.augment, "Training augmentation",
             examples::ValueCheck::member_of({"none", "flip", "crop", "crop+flip"}));
  cli.option("--seed", c.seed, "Seed of the initial weights, shuffling, augmentation, dropout");
  cli.option("--precision", c.precision,
             "fp32, or mixed precision: bf16 / fp16 autocast (convolutions and linear layers in "
             "16-bit, float32 weights and loss); fp16 adds dynamic loss scaling",
             examples::ValueCheck::member_of({"fp32", "bf16", "fp16"}));
  cli.option("--out", c.out_dir, "Output directory (metrics.csv, curves.svg, checkpoint)");
  cli.option("--resume", c.resume,
             "Continue from this checkpoint (same training flags required); the result is "
             "bit-identical to an uninterrupted run");
  cli.option("--stop-after", c.stop_after,
             "Stop after this many epochs, as if interrupted (the schedule still spans "
             "--epochs); continue with --resume",
             examples::ValueCheck::non_negative());
  cli.option("--limit-train", c.limit_train, "Use only the first N training images (0 = all)",
             examples::ValueCheck::non_negative());
  cli.option("--limit-test", c.limit_test, "Use only the first N test images (0 = all)",
             examples::ValueCheck::non_negative());
  cli.option("--threads", c.threads,
             "Worker threads (0 = all hardware threads; with --distributed, per rank: the "
             "host's threads divided among its ranks)",
             examples::ValueCheck::non_negative());
  cli.flag("--distributed", c.distributed,
           "Data-parallel training over the processes of an MPI job (start with mpirun); "
           "--batch-size is the global batch, split evenly across ranks");
  cli.flag("--sync-batchnorm", c.sync_batchnorm,
           "With --distributed: BatchNorm statistics over the global batch (all-reduced) "
           "instead of each rank's share");
  cli.option("--dist-timeout", c.dist_timeout,
             "Seconds a rank waits for the others in a collective before aborting the job",
             examples::ValueCheck::positive());
  cli.flag("--quiet", c.quiet, "No progress bar");
  cli.flag("--check-loss-decreases", c.check_loss_decreases,
           "Exit with 1 unless the mean loss of the last batches is below that of the first");
  cli.option("--compare", compare, "Compare the tensors of two checkpoints bitwise and exit", 2);
  cli.option("--profile", profile_batches,
             "Time N training steps by phase and each layer's forward/backward, then exit",
             examples::ValueCheck::positive());
  if (auto status = cli.parse(argc, argv)) return *status;

  std::shared_ptr<distributed::ProcessGroup> group;
  try {
    if (!compare.empty()) return compare_checkpoints(compare[0], compare[1]);
    if (c.distributed) {
      if (profile_batches > 0) throw std::runtime_error("--profile runs in one process only");
      group = distributed::ProcessGroup::init(
          {.timeout = std::chrono::milliseconds(static_cast<int64_t>(c.dist_timeout * 1000))});
      if (c.threads == 0) {  // the ranks on one host share its cores
        const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
        c.threads = std::max(1, hw / group->local_size());
      }
    }
    std::unique_ptr<tbb::global_control> threads;
    if (c.threads > 0) {
      threads = std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism,
                                                      static_cast<size_t>(c.threads));
    }
    if (profile_batches > 0) return fmnist::run_profile(c, profile_batches);
    fmnist::Trainer trainer(c, group);
    return trainer.run();
  } catch (const std::exception& e) {
    // The other ranks would wait for this one in their next collective: end the whole job.
    if (group) group->abort(std::string("train_fashion_mnist: error: ") + e.what(), 2);
    std::fprintf(stderr, "train_fashion_mnist: error: %s\n", e.what());
    return 2;
  }
}
