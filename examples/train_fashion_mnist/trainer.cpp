#include "examples/train_fashion_mnist/trainer.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <numeric>
#include <stdexcept>

#include "autograd/autocast_mode.h"
#include "autograd/grad_mode.h"
#include "examples/common/atomic_file.h"
#include "examples/common/progress.h"
#include "nn/distributed/sync_batchnorm.h"
#include "nn/distributed_sampler.h"
#include "nn/transforms.h"
#include "ops/ops.h"
#include "tensor/creation.h"
#include "tensor/random.h"

namespace aclgrad::fmnist {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// splitmix64 finaliser: the dropout seed of an epoch.
uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

std::shared_ptr<data::TensorDataset> load_split(const std::string& dir, bool train, int64_t limit) {
  data::TensorDataset full = data::load_mnist(dir, train);
  if (limit <= 0 || limit >= full.size()) return std::make_shared<data::TensorDataset>(full);
  return std::make_shared<data::TensorDataset>(full.data().narrow(0, 0, limit),
                                               full.target().narrow(0, 0, limit));
}

// Rows [rank * N / ranks, (rank + 1) * N / ranks) of a dataset: this rank's test shard.
std::shared_ptr<data::TensorDataset> shard_of(const data::TensorDataset& set, int rank, int ranks) {
  const int64_t n = set.size(), begin = n * rank / ranks, end = n * (rank + 1) / ranks;
  return std::make_shared<data::TensorDataset>(set.data().narrow(0, begin, end - begin),
                                               set.target().narrow(0, begin, end - begin));
}

data::BatchTransform train_transform(const std::string& augment) {
  namespace T = data::transforms;
  std::vector<data::BatchTransform> steps;
  if (augment == "crop" || augment == "crop+flip") steps.push_back(T::RandomCrop(28, 2));
  if (augment == "flip" || augment == "crop+flip") steps.push_back(T::RandomHorizontalFlip());
  steps.push_back(T::Normalize({kMean}, {kStd}));
  return T::compose(std::move(steps));
}

const std::string kCheckpointName = "checkpoint.safetensors";

}  // namespace

Precision::Precision(const std::string& name) {
  if (name == "bf16" || name == "fp16") {
    autocast = true;
    dtype = name == "bf16" ? Dtype::BFloat16 : Dtype::Float16;
    loss_scaling = name == "fp16";
  } else if (name != "fp32") {
    throw std::runtime_error("--precision must be fp32, bf16 or fp16, got '" + name + "'");
  }
}

void check_data_dir(const std::string& dir) {
  if (!fs::is_directory(dir)) {
    throw std::runtime_error("data directory '" + dir +
                             "' does not exist; install the Debian package dataset-fashion-mnist "
                             "(scripts/setup.sh does) or pass --data DIR");
  }
  for (const char* stem : {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                           "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"}) {
    const fs::path plain = fs::path(dir) / stem;
    if (!fs::exists(plain) && !fs::exists(plain.string() + ".gz")) {
      throw std::runtime_error("missing data file '" + plain.string() +
                               "' (or .gz); install the "
                               "Debian package dataset-fashion-mnist (scripts/setup.sh does) or "
                               "pass --data DIR");
    }
  }
}

Trainer::Trainer(const Config& config, std::shared_ptr<distributed::ProcessGroup> group)
    : config_(config),
      group_(std::move(group)),
      precision_(config.precision),
      scaler_({.enabled = precision_.loss_scaling}) {
  const int rank = group_ ? group_->rank() : 0;
  config_.ranks = group_ ? group_->size() : 1;
  if (config_.batch_size % config_.ranks != 0) {
    throw std::runtime_error("--batch-size " + std::to_string(config_.batch_size) +
                             " is the global batch and must be a multiple of the number of "
                             "ranks (" +
                             std::to_string(config_.ranks) + ")");
  }
  check_data_dir(config_.data_dir);
  auto train_set = load_split(config_.data_dir, true, config_.limit_train);
  auto test_set = load_split(config_.data_dir, false, config_.limit_test);
  train_size_ = train_set->size(), test_size_ = test_set->size();
  std::shared_ptr<data::DistributedSampler> sampler;
  if (group_) {
    sampler = std::make_shared<data::DistributedSampler>(
        train_size_, data::DistributedSamplerOptions{
                         .num_replicas = config_.ranks, .rank = rank, .seed = config_.seed});
    test_set = shard_of(*test_set, rank, config_.ranks);
  }
  train_loader_ = std::make_unique<data::DataLoader>(
      train_set, data::DataLoaderOptions{
                     .batch_size = config_.batch_size / config_.ranks,
                     .shuffle = sampler == nullptr,
                     // Augmentation draws: rank 0's are a single process's, the others' differ.
                     .seed = config_.seed + static_cast<uint64_t>(rank) * 0x9E3779B97F4A7C15ull,
                     .prefetch = 2,
                     .transform = train_transform(config_.augment),
                     .sampler = sampler});
  test_loader_ = std::make_unique<data::DataLoader>(
      test_set, data::DataLoaderOptions{.batch_size = 500,
                                        .prefetch = 2,
                                        .transform = data::transforms::Normalize({kMean}, {kStd})});

  manual_seed(config_.seed);  // initial weights
  std::function<std::shared_ptr<nn::Module>(int64_t)> batchnorm;
  if (config_.sync_batchnorm) {
    if (!group_) throw std::runtime_error("--sync-batchnorm needs --distributed");
    batchnorm = [this](int64_t channels) {
      return std::make_shared<nn::SyncBatchNorm2d>(channels, group_);
    };
  }
  model_ = make_model(config_.dropout, batchnorm);
  optim::AdamWOptions adam;
  adam.lr = config_.lr;
  adam.weight_decay = config_.weight_decay;
  optimizer_ = std::make_unique<optim::AdamW>(model_->parameters(), adam);
  scheduler_ = std::make_unique<optim::OneCycleLR>(
      *optimizer_, optim::OneCycleOptions{.max_lr = {config_.lr},
                                          .total_steps = config_.epochs * train_loader_->size(),
                                          .pct_start = 0.25});
  if (!config_.resume.empty()) load_checkpoint(config_.resume);
  if (group_) ddp_ = std::make_shared<nn::DistributedDataParallel>(model_, group_);
}

void Trainer::sum_over_ranks(std::vector<double>& values) const {
  if (!group_) return;
  Tensor t = from_vector(values);
  group_->allreduce_sum(t);
  values = t.to_vector<double>();
}

double Trainer::train_epoch(int64_t epoch) {
  model_->train();
  // Dropout masks; each rank its own (rank 0's are a single process's).
  manual_seed(mix(config_.seed ^ mix(static_cast<uint64_t>(epoch))) ^
              static_cast<uint64_t>(group_ ? group_->rank() : 0));
  train_loader_->set_epoch(epoch);
  const int64_t batches = train_loader_->size();
  examples::ProgressBar bar(
      "epoch " + std::to_string(epoch + 1) + "/" + std::to_string(config_.epochs), batches, stderr);
  const auto start = Clock::now();
  double loss_sum = 0, window_sum = 0;
  int64_t samples = 0, done = 0, window_n = 0;
  const int64_t curve_every = std::max<int64_t>(1, batches / 20);
  for (auto& batch : *train_loader_) {
    Tensor loss;
    {
      AutocastGuard autocast(precision_.dtype, precision_.autocast);
      Tensor logits = ddp_ ? (*ddp_)(batch.data) : (*model_)(batch.data);
      loss = cross_entropy(logits, batch.target);
    }
    optimizer_->zero_grad();
    scaler_.scale(loss).backward();
    scaler_.step(*optimizer_);  // optimizer_->step(), unless fp16 gradients overflowed
    scaler_.update();
    scheduler_->step();
    ++steps_;

    const double l = loss.item<double>();
    const int64_t n = batch.data.size(0);
    batch_losses_.push_back(l);
    loss_sum += l * static_cast<double>(n), samples += n, ++done;
    window_sum += l, ++window_n;
    if (done % curve_every == 0 || done == batches) {
      history_.train_curve.push_back(
          {static_cast<double>(epoch) + static_cast<double>(done) / static_cast<double>(batches),
           window_sum / static_cast<double>(window_n)});
      window_sum = 0, window_n = 0;
    }
    if (!config_.quiet && is_root()) {
      bar.update(done, {{"loss", loss_sum / static_cast<double>(samples)}},
                 static_cast<double>(samples) / seconds_since(start));
    }
  }
  if (!config_.quiet && is_root()) bar.finish();
  std::vector<double> totals{loss_sum, static_cast<double>(samples)};
  sum_over_ranks(totals);  // the epoch's loss over every rank's samples
  return totals[0] / std::max(totals[1], 1.0);
}

std::pair<double, double> Trainer::evaluate() {
  if (ddp_) ddp_->broadcast_buffers();  // every rank evaluates with rank 0's BatchNorm statistics
  NoGradGuard no_grad;
  AutocastGuard autocast(precision_.dtype, precision_.autocast);
  model_->eval();
  double loss_sum = 0;
  int64_t correct = 0, total = 0;
  for (auto& batch : *test_loader_) {
    Tensor logits = (*model_)(batch.data);
    loss_sum += cross_entropy(logits, batch.target, {.reduction = Reduction::Sum}).item<double>();
    const auto predicted = std::get<1>(max(logits, 1)).to_vector<int64_t>();
    const auto target = batch.target.to_vector<int64_t>();
    for (size_t i = 0; i < target.size(); ++i) correct += predicted[i] == target[i];
    total += static_cast<int64_t>(target.size());
  }
  model_->train();
  std::vector<double> totals{loss_sum, static_cast<double>(correct), static_cast<double>(total)};
  sum_over_ranks(totals);
  const double n = std::max(totals[2], 1.0);
  return {totals[0] / n, totals[1] / n};
}

int Trainer::run() {
  const bool root = is_root();
  if (root) {
    fs::create_directories(config_.out_dir);
    std::printf("%s\n", model_->to_string().c_str());
    std::printf("train %lld samples, test %lld samples, %lld batches of %lld per epoch\n",
                static_cast<long long>(train_size_), static_cast<long long>(test_size_),
                static_cast<long long>(train_loader_->size()),
                static_cast<long long>(config_.batch_size));
    if (precision_.autocast) {
      std::printf("precision %s: autocast to %s, float32 weights%s\n", config_.precision.c_str(),
                  dtype_name(precision_.dtype),
                  precision_.loss_scaling ? ", dynamic loss scaling" : "");
    }
    if (group_) {
      std::printf("distributed: %d ranks, %lld samples per rank and batch\n", config_.ranks,
                  static_cast<long long>(config_.batch_size / config_.ranks));
    }
  }
  const int64_t last =
      config_.stop_after > 0 ? std::min(config_.stop_after, config_.epochs) : config_.epochs;
  if (start_epoch_ >= last && root) {
    std::printf("nothing to do: the checkpoint has %lld of %lld epochs done\n",
                static_cast<long long>(start_epoch_), static_cast<long long>(last));
  }
  for (int64_t epoch = start_epoch_; epoch < last; ++epoch) {
    const auto start = Clock::now();
    const double lr = scheduler_->get_last_lr()[0];
    const double train_loss = train_epoch(epoch);
    const double train_seconds = seconds_since(start);
    const auto [test_loss, test_acc] = evaluate();
    seconds_ += seconds_since(start);
    const EpochRecord r{
        .epoch = epoch + 1,
        .step = steps_,
        .train_loss = train_loss,
        .test_loss = test_loss,
        .test_acc = test_acc,
        .lr = lr,
        .seconds = seconds_,
        .samples_per_second =
            static_cast<double>(train_loader_->size() * config_.batch_size) / train_seconds};
    history_.epochs.push_back(r);
    if (!root) continue;
    std::printf(
        "epoch %lld/%lld  train_loss %.4f  test_loss %.4f  test_acc %.2f%%  lr %.2e  "
        "time %.1fs (total %.1fs)  %.0f samples/s\n",
        static_cast<long long>(r.epoch), static_cast<long long>(config_.epochs), train_loss,
        test_loss, 100 * test_acc, lr, seconds_since(start), seconds_, r.samples_per_second);
    std::fflush(stdout);
    save_checkpoint(epoch + 1);
    write_reports();
  }
  if (root) {
    std::printf("wrote %s/{metrics.csv,curves.svg,%s}\n", config_.out_dir.c_str(),
                kCheckpointName.c_str());
  }
  if (config_.check_loss_decreases) {
    const size_t n = batch_losses_.size();
    const size_t k = std::max<size_t>(1, std::min<size_t>(5, n / 4));
    if (n < 2) {
      std::printf("loss check: too few batches (%zu)\n", n);
      return 1;
    }
    const double first = std::accumulate(batch_losses_.begin(), batch_losses_.begin() + k, 0.0) / k;
    const double last_l = std::accumulate(batch_losses_.end() - k, batch_losses_.end(), 0.0) / k;
    if (root)
      std::printf("loss %s: first %.4f last %.4f (means of %zu batches)\n",
                  last_l < first ? "went down" : "did NOT go down", first, last_l, k);
    return last_l < first ? 0 : 1;
  }
  return 0;
}

void Trainer::save_checkpoint(int64_t epochs_done) const {
  nn::TensorMap extra;
  nn::Metadata meta = trajectory_settings(config_);
  const optim::StateDict opt = optimizer_->state_dict();
  for (const auto& [name, t] : opt.tensors) extra["optimizer." + name] = t;
  for (const auto& [key, value] : opt.metadata) meta["optimizer." + key] = value;
  for (const auto& [key, value] : scheduler_->state_dict().metadata)
    meta["scheduler." + key] = value;
  for (const auto& [key, value] : scaler_.state_dict().metadata) meta["grad_scaler." + key] = value;
  meta["epoch"] = std::to_string(epochs_done);
  meta["step"] = std::to_string(steps_);
  meta["seconds"] = std::to_string(seconds_);
  history_.store(meta);
  nn::save(*model_, (fs::path(config_.out_dir) / kCheckpointName).string(), extra, meta);
}

void Trainer::load_checkpoint(const std::string& path) {
  if (!fs::exists(path)) throw std::runtime_error("--resume: no checkpoint at '" + path + "'");
  nn::CheckpointExtras extras = nn::load(*model_, path);
  const auto mismatches = resume_mismatches(extras.metadata, config_);
  if (!mismatches.empty()) {
    std::string msg = "--resume: '" + path +
                      "' was trained with other settings (resuming would "
                      "not continue the same run); pass the same flags:";
    for (const std::string& m : mismatches) msg += "\n  " + m;
    throw std::runtime_error(msg);
  }
  optim::StateDict opt, sched, scaler;
  for (const auto& [name, t] : extras.tensors) {
    if (name.rfind("optimizer.", 0) == 0) opt.tensors[name.substr(10)] = t;
  }
  for (const auto& [key, value] : extras.metadata) {
    if (key.rfind("optimizer.", 0) == 0) opt.metadata[key.substr(10)] = value;
    if (key.rfind("scheduler.", 0) == 0) sched.metadata[key.substr(10)] = value;
    if (key.rfind("grad_scaler.", 0) == 0) scaler.metadata[key.substr(12)] = value;
  }
  optimizer_->load_state_dict(opt);
  scheduler_->load_state_dict(sched);
  if (scaler_.is_enabled()) scaler_.load_state_dict(scaler);
  start_epoch_ = std::stoll(extras.metadata.at("epoch"));
  steps_ = std::stoll(extras.metadata.at("step"));
  seconds_ = std::stod(extras.metadata.at("seconds"));
  history_ = History::parse(extras.metadata);
  if (is_root())
    std::printf("resumed from %s after epoch %lld (step %lld)\n", path.c_str(),
                static_cast<long long>(start_epoch_), static_cast<long long>(steps_));
}

void Trainer::write_reports() const {
  examples::write_file_atomically((fs::path(config_.out_dir) / "metrics.csv").string(),
                                  history_.csv());
  examples::write_file_atomically((fs::path(config_.out_dir) / "curves.svg").string(),
                                  history_.svg());
}

}  // namespace aclgrad::fmnist
