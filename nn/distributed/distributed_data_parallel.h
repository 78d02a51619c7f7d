// nn::DistributedDataParallel: data-parallel training of one Module replicated in every process
// of a ProcessGroup (torch.nn.parallel.DistributedDataParallel).
//
//   auto group = distributed::ProcessGroup::init();
//   auto ddp = std::make_shared<nn::DistributedDataParallel>(model, group);
//   optim::AdamW opt(ddp->parameters(), ...);            // the wrapped model's parameters
//   for (auto& batch : loader) {                          // each rank: its shard of the batch
//     Tensor loss = cross_entropy((*ddp)(batch.data), batch.target);
//     opt.zero_grad();
//     loss.backward();                                    // gradients averaged over ranks here
//     opt.step();                                         // same step on every rank
//   }
//
// Construction broadcasts the parameters and buffers of rank 0 (and checks every rank wraps a
// model of the same structure). The trainable parameters are split into buckets of about
// bucket_cap_mb, in reverse registration order (roughly the order backward produces their
// gradients). A post-accumulate-grad hook on each parameter (autograd/hooks.h) marks it ready;
// when a bucket is complete, its gradients are copied into one flat buffer and an all-reduce
// starts (MPI_Iallreduce) while backward continues with earlier layers. Buckets start in index
// order on every rank (collectives must match). When the last gradient of the model is ready,
// the hook waits for every bucket and writes the averaged gradients back into .grad, so when
// backward() returns every rank holds the same averaged gradients.
//
// As in PyTorch (find_unused_parameters=false), every trainable parameter must get a gradient
// in every backward; forward() reports a previous backward that left some without one.
//
// BatchNorm: each rank normalises with its own batch statistics (PyTorch DDP's default); with
// broadcast_buffers the running statistics of rank 0 are copied to every rank at each forward
// in training mode, so evaluation and checkpoints use one set.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "../../nn/distributed/process_group.h"
#include "../../nn/module.h"

namespace aclgrad::nn {

struct DistributedDataParallelOptions {
  /// Target bucket size in MiB (PyTorch: 25). Smaller buckets start communicating earlier.
  double bucket_cap_mb = 25;
  /// Copy rank 0's buffers (e.g. BatchNorm running statistics) to every rank at the start of
  /// each forward in training mode.
  bool broadcast_buffers = true;
  /// Called (on this rank's backward thread) when bucket `index` starts its all-reduce; for
  /// logging and tests.
  std::function<void(size_t index)> on_bucket_start = nullptr;
};

class DistributedDataParallel : public Module {
 public:
  /// Wraps module (registered as submodule "module"). Collective: every rank must construct it
  /// at the same point, with the same model structure.
  DistributedDataParallel(std::shared_ptr<Module> module,
                          std::shared_ptr<distributed::ProcessGroup> group,
                          DistributedDataParallelOptions options = {});
  ~DistributedDataParallel() override;

  /// Checks the previous backward completed its reduction, broadcasts buffers (see options),
  /// then runs the wrapped module.
  Tensor forward(const Tensor& input) override;

  const std::shared_ptr<Module>& module() const { return module_; }
  distributed::ProcessGroup& group() const { return *group_; }
  /// Copies rank 0's buffers to every rank (collective).
  void broadcast_buffers();

  /// Bucket layout: the parameter names (as in module()->named_parameters()) of each bucket.
  std::vector<std::vector<std::string>> bucket_parameter_names() const;

  /// What the last backward did (for logging and tests).
  struct BackwardStats {
    size_t buckets_started = 0;
    /// Gradients that were ready when the first bucket started, out of all of them.
    size_t ready_at_first_start = 0;
    size_t parameters = 0;
    /// Time spent waiting for all-reduces after the last gradient was ready.
    std::chrono::duration<double> wait{0};
  };
  const BackwardStats& last_backward_stats() const { return stats_; }

 private:
  struct Bucket;
  void build_buckets();
  void check_same_structure();
  void on_gradient_ready(size_t param);
  void start_ready_buckets();
  void finish_reduction();

  std::shared_ptr<Module> module_;
  std::shared_ptr<distributed::ProcessGroup> group_;
  DistributedDataParallelOptions options_;
  NamedList<Tensor> params_;            // trainable parameters, registration order
  std::vector<uint64_t> hook_handles_;  // one per params_ entry
  std::vector<size_t> bucket_of_;       // params_ index -> bucket
  std::vector<std::unique_ptr<Bucket>> buckets_;
  std::vector<bool> ready_;  // params_ index -> gradient ready in this backward
  size_t ready_count_ = 0;
  size_t next_bucket_ = 0;  // the next bucket to start (in index order)
  BackwardStats stats_;
};

}  // namespace aclgrad::nn
