// The Fashion-MNIST training run: model, data, optimizer, schedule, checkpoints.
//
// Precision: --precision bf16 / fp16 runs forward and loss (training and evaluation) under an
// AutocastGuard: convolutions and linear layers in 16-bit, the loss in float32, the weights and
// optimizer in float32. fp16 scales the loss with a GradScaler (steps with inf/NaN gradients are
// skipped and the scale backs off).
//
// Exact resume. Every random choice is a function of (seed, epoch) only: the shuffle order and
// the augmentation of each batch come from the DataLoader (Generator(seed + epoch), and a
// generator per (seed, epoch, batch)); the dropout masks come from the default generator, which
// is re-seeded from (seed, epoch) at the start of every epoch. So the checkpoint written after
// each epoch (weights, BatchNorm buffers, optimizer moments and step counts, scheduler position,
// the fp16 loss scale, the epoch number) holds all the state there is: training N epochs straight,
// or k epochs then
// --resume to N, gives bit-identical weights.
//
// Distributed (a process group is given; run under mpirun): the model is wrapped in
// nn::DistributedDataParallel, --batch-size is the global batch and each rank trains on
// batch_size / ranks samples of its DistributedSampler shard. Test accuracy is computed on
// shards and summed. Rank 0 alone prints, writes metrics, plots and checkpoints; every rank can
// --resume from the checkpoint (the same number of ranks is required for an exact resume).
#pragma once

#include <memory>
#include <string>

#include "examples/train_fashion_mnist/config.h"
#include "examples/train_fashion_mnist/history.h"
#include "examples/train_fashion_mnist/model.h"
#include "nn/data.h"
#include "nn/distributed/distributed_data_parallel.h"
#include "nn/grad_scaler.h"
#include "nn/lr_scheduler.h"
#include "nn/nn.h"
#include "nn/optim.h"

namespace aclgrad::fmnist {

/// Fashion-MNIST's per-pixel mean and standard deviation over the training images.
inline constexpr double kMean = 0.2860, kStd = 0.3530;

/// What --precision turns on: autocast (to bf16 or fp16) around forward and loss, and loss
/// scaling for fp16. fp32: neither (both guards are then no-ops).
struct Precision {
  explicit Precision(const std::string& name);
  bool autocast = false;
  Dtype dtype = Dtype::BFloat16;
  bool loss_scaling = false;
};

/// Error (std::runtime_error) naming the missing file and how to install the data set, if dir
/// does not hold the four (Fashion-)MNIST files (plain or .gz).
void check_data_dir(const std::string& dir);

class Trainer {
 public:
  /// Loads the data and builds everything; with config.resume, continues from that checkpoint.
  /// Distributed when group is given (its collectives are then used by every rank).
  explicit Trainer(const Config& config,
                   std::shared_ptr<distributed::ProcessGroup> group = nullptr);
  /// Trains the remaining epochs (evaluating, checkpointing and writing the CSV/SVG after each).
  /// Returns the process exit code (1 when --check-loss-decreases fails).
  int run();

  nn::Sequential& model() { return *model_; }
  const History& history() const { return history_; }

 private:
  double train_epoch(int64_t epoch);
  /// (mean loss, accuracy) on the test set.
  std::pair<double, double> evaluate();
  void save_checkpoint(int64_t epochs_done) const;
  void load_checkpoint(const std::string& path);
  void write_reports() const;
  /// Rank 0 (or the only process) prints and writes files.
  bool is_root() const { return group_ == nullptr || group_->rank() == 0; }
  /// values[i] = sum over ranks of values[i] (no-op in a single process).
  void sum_over_ranks(std::vector<double>& values) const;

  Config config_;
  std::shared_ptr<distributed::ProcessGroup> group_;
  std::shared_ptr<nn::Sequential> model_;
  std::shared_ptr<nn::DistributedDataParallel> ddp_;  // wraps model_ when distributed
  std::unique_ptr<optim::AdamW> optimizer_;
  std::unique_ptr<optim::OneCycleLR> scheduler_;
  Precision precision_;
  amp::GradScaler scaler_;  // enabled for fp16 only
  std::unique_ptr<data::DataLoader> train_loader_, test_loader_;
  History history_;
  int64_t start_epoch_ = 0;  // epochs already done (from the checkpoint)
  int64_t steps_ = 0;
  int64_t train_size_ = 0, test_size_ = 0;
  double seconds_ = 0;                // cumulative, carried over on resume
  std::vector<double> batch_losses_;  // every batch loss of this process (for the loss check)
};

}  // namespace aclgrad::fmnist
