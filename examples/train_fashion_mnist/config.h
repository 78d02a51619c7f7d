// Settings of a training run (the command-line flags) and how they are stored in a checkpoint.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace aclgrad::fmnist {

struct Config {
  // Data.
  std::string data_dir = "/usr/share/datasets/fashion-mnist";
  int64_t limit_train = 0;       // 0 = all 60000
  int64_t limit_test = 0;        // 0 = all 10000
  std::string augment = "flip";  // none | flip | crop | crop+flip
  // Optimisation.
  int64_t epochs = 4;
  int64_t batch_size = 128;
  double lr = 4e-3;  // OneCycleLR peak
  double weight_decay = 5e-4;
  double dropout = 0.25;
  uint64_t seed = 1;
  // fp32 | bf16 | fp16: bf16 and fp16 run forward and loss under autocast (float32 master
  // weights); fp16 adds a GradScaler.
  std::string precision = "fp32";
  // Run control (not part of the training trajectory).
  std::string out_dir = "runs/fashion_mnist";
  std::string resume;      // checkpoint to continue from ("" = fresh start)
  int64_t stop_after = 0;  // stop after this many epochs (simulated interruption); 0 = never
  int threads = 0;         // 0 = all hardware threads
  bool check_loss_decreases = false;
  bool quiet = false;  // no progress bar
  // Distributed data parallel (--distributed, under mpirun): batch_size is the global batch.
  bool distributed = false;
  bool sync_batchnorm = false;  // BatchNorm statistics over the global batch (--distributed)
  double dist_timeout = 300;    // seconds a collective may take before the job is aborted
  int ranks = 1;                // processes of the job (set from the process group, not a flag)
};

/// The settings that determine the training trajectory, as checkpoint metadata "config.<name>".
std::map<std::string, std::string> trajectory_settings(const Config& config);

/// Differences between the settings stored in a checkpoint and config, one line per setting
/// ("--lr: checkpoint 0.004, command line 0.001"); empty when resuming is exact.
std::vector<std::string> resume_mismatches(const std::map<std::string, std::string>& metadata,
                                           const Config& config);

}  // namespace aclgrad::fmnist
