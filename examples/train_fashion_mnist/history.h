// What a run has measured so far: one record per epoch plus the training loss every few
// batches. Written as metrics.csv and curves.svg, and kept in the checkpoint's metadata so a
// resumed run continues the same files.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace aclgrad::fmnist {

struct EpochRecord {
  int64_t epoch = 0;  // 1-based
  int64_t step = 0;   // optimizer steps so far
  double train_loss = 0, test_loss = 0, test_acc = 0, lr = 0;
  double seconds = 0;  // cumulative wall time of training + evaluation
  double samples_per_second = 0;
};

struct LossPoint {
  double epoch = 0;  // fractional epoch, e.g. 1.25
  double loss = 0;   // mean training loss over the last few batches
};

struct History {
  std::vector<EpochRecord> epochs;
  std::vector<LossPoint> train_curve;

  /// "epoch,step,train_loss,test_loss,test_acc,lr,seconds,samples_per_s" then one row per epoch.
  std::string csv() const;
  /// Two charts: losses (train curve, per-epoch train and test) and test accuracy.
  std::string svg() const;
  /// Checkpoint metadata ("history.epochs", "history.curve") and back; parse throws on garbage.
  void store(std::map<std::string, std::string>& metadata) const;
  static History parse(const std::map<std::string, std::string>& metadata);
};

}  // namespace aclgrad::fmnist
