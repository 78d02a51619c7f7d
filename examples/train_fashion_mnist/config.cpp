#include "examples/train_fashion_mnist/config.h"

#include <cstdio>

namespace aclgrad::fmnist {

namespace {

std::string number(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

}  // namespace

std::map<std::string, std::string> trajectory_settings(const Config& c) {
  std::map<std::string, std::string> settings{{"config.limit-train", std::to_string(c.limit_train)},
                                              {"config.augment", c.augment},
                                              {"config.epochs", std::to_string(c.epochs)},
                                              {"config.batch-size", std::to_string(c.batch_size)},
                                              {"config.lr", number(c.lr)},
                                              {"config.weight-decay", number(c.weight_decay)},
                                              {"config.dropout", number(c.dropout)},
                                              {"config.seed", std::to_string(c.seed)}};
  // The shards (and so the trajectory) depend on the number of ranks; absent means 1, which
  // keeps single-process checkpoints as they were.
  if (c.ranks != 1) settings["config.ranks"] = std::to_string(c.ranks);
  return settings;
}

std::vector<std::string> resume_mismatches(const std::map<std::string, std::string>& metadata,
                                           const Config& config) {
  std::vector<std::string> out;
  for (const auto& [key, value] : trajectory_settings(config)) {
    const auto it = metadata.find(key);
    const std::string flag = key == "config.ranks" ? "ranks (mpirun -np)" : "--" + key.substr(7);
    if (it == metadata.end()) {
      out.push_back(flag + ": not recorded in the checkpoint");
    } else if (it->second != value) {
      out.push_back(flag + ": checkpoint " + it->second + ", command line " + value);
    }
  }
  const auto ranks = metadata.find("config.ranks");
  if (config.ranks == 1 && ranks != metadata.end()) {
    out.push_back("ranks (mpirun -np): checkpoint " + ranks->second + ", command line 1");
  }
  return out;
}

}  // namespace aclgrad::fmnist
