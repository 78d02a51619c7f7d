#include "examples/train_fashion_mnist/config.h"

#include <cstdio>

namespace aclgrad::fmnist {

namespace {

std::string number(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// Settings added after the first checkpoints (distributed training, precision), recorded only
// when not at these values, so that older checkpoints (which lack them) still resume.
const std::map<std::string, std::string>& optional_settings() {
  static const std::map<std::string, std::string> values{
      {"config.ranks", "1"}, {"config.sync-batchnorm", "0"}, {"config.precision", "fp32"}};
  return values;
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
  const std::map<std::string, std::string> optional{
      {"config.ranks", std::to_string(c.ranks)},
      {"config.sync-batchnorm", c.sync_batchnorm ? "1" : "0"},
      {"config.precision", c.precision}};
  for (const auto& [key, value] : optional) {
    if (value != optional_settings().at(key)) settings[key] = value;
  }
  return settings;
}

std::vector<std::string> resume_mismatches(const std::map<std::string, std::string>& metadata,
                                           const Config& config) {
  std::vector<std::string> out;
  std::map<std::string, std::string> settings = trajectory_settings(config);
  for (const auto& [key, fallback] : optional_settings()) settings.try_emplace(key, fallback);
  for (const auto& [key, value] : settings) {
    const auto it = metadata.find(key);
    const auto optional = optional_settings().find(key);
    const std::string flag = key == "config.ranks" ? "ranks (mpirun -np)" : "--" + key.substr(7);
    const std::string stored = it != metadata.end()                    ? it->second
                               : optional != optional_settings().end() ? optional->second
                                                                       : std::string();
    if (it == metadata.end() && optional == optional_settings().end()) {
      out.push_back(flag + ": not recorded in the checkpoint");
    } else if (stored != value) {
      out.push_back(flag + ": checkpoint " + stored + ", command line " + value);
    }
  }
  return out;
}

}  // namespace aclgrad::fmnist
