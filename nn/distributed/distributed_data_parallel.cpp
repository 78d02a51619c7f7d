#include "nn/distributed/distributed_data_parallel.h"

#include <algorithm>
#include <cstring>
#include <functional>

#include "autograd/hooks.h"
#include "tensor/creation.h"

namespace aclgrad::nn {

using distributed::DistributedError;

// Gradients of some parameters of one dtype, all-reduced together through one flat buffer.
struct DistributedDataParallel::Bucket {
  Dtype dtype = Dtype::Float32;
  std::vector<size_t> params;    // indices into params_
  std::vector<int64_t> offsets;  // element offset of each parameter in flat
  int64_t numel = 0;
  Tensor flat;         // [numel]
  size_t pending = 0;  // parameters whose gradient is not ready yet in this backward
  std::unique_ptr<distributed::Work> work;
};

namespace {

// In-place x /= divisor over a contiguous float32/float64 tensor.
void divide_in_place(const Tensor& flat, double divisor) {
  if (flat.dtype() == Dtype::Float32) {
    float* p = flat.data_ptr<float>();
    const float d = static_cast<float>(divisor);
    for (int64_t i = 0; i < flat.numel(); ++i) p[i] /= d;
  } else {
    double* p = flat.data_ptr<double>();
    for (int64_t i = 0; i < flat.numel(); ++i) p[i] /= divisor;
  }
}

// Broadcasts t from rank 0 in place, through a contiguous copy if t is not contiguous.
void broadcast_tensor(distributed::ProcessGroup& group, const Tensor& t) {
  if (t.is_contiguous()) {
    group.broadcast(t, 0);
    return;
  }
  Tensor copy = t.contiguous();
  group.broadcast(copy, 0);
  t.copy_(copy);
}

uint64_t hash_combine(uint64_t h, uint64_t v) {
  return h ^ (v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2));
}

uint64_t hash_tensors(uint64_t h, const NamedList<Tensor>& tensors) {
  for (const auto& [name, t] : tensors) {
    h = hash_combine(h, std::hash<std::string>{}(name));
    h = hash_combine(h, static_cast<uint64_t>(t.dtype()));
    for (int64_t s : t.sizes()) h = hash_combine(h, static_cast<uint64_t>(s));
  }
  return h;
}

}  // namespace

DistributedDataParallel::DistributedDataParallel(std::shared_ptr<Module> module,
                                                 std::shared_ptr<distributed::ProcessGroup> group,
                                                 DistributedDataParallelOptions options)
    : Module("DistributedDataParallel"),
      module_(std::move(module)),
      group_(std::move(group)),
      options_(std::move(options)) {
  check<DistributedError>(module_ != nullptr, "DistributedDataParallel: module is null");
  check<DistributedError>(group_ != nullptr, "DistributedDataParallel: process group is null");
  check<DistributedError>(options_.bucket_cap_mb > 0,
                          "DistributedDataParallel: bucket_cap_mb must be positive, got ",
                          options_.bucket_cap_mb);
  register_module("module", module_);
  for (auto& [name, p] : module_->named_parameters()) {
    if (!p.requires_grad()) continue;
    check<DistributedError>(p.dtype() == Dtype::Float32 || p.dtype() == Dtype::Float64,
                            "DistributedDataParallel: parameter '", name, "' has dtype ", p.dtype(),
                            "; gradients are all-reduced in float32 or float64 only");
    params_.emplace_back(name, p);
  }
  check_same_structure();
  for (const Tensor& p : module_->parameters()) broadcast_tensor(*group_, p);
  for (const Tensor& b : module_->buffers()) broadcast_tensor(*group_, b);
  build_buckets();
  ready_.assign(params_.size(), false);
  for (size_t i = 0; i < params_.size(); ++i) {
    hook_handles_.push_back(autograd::register_post_accumulate_grad_hook(
        params_[i].second, [this, i](const Tensor&) { on_gradient_ready(i); }));
  }
}

DistributedDataParallel::~DistributedDataParallel() {
  for (size_t i = 0; i < hook_handles_.size(); ++i) {
    autograd::remove_post_accumulate_grad_hook(params_[i].second, hook_handles_[i]);
  }
}

void DistributedDataParallel::check_same_structure() {
  const uint64_t h = hash_tensors(hash_tensors(1, params_), module_->named_buffers());
  check<DistributedError>(group_->all_equal(h), "DistributedDataParallel: rank ", group_->rank(),
                          " wraps a model whose trainable parameters or buffers (names, shapes, "
                          "dtypes) differ from another rank's; every rank must build the same "
                          "model");
}

void DistributedDataParallel::build_buckets() {
  const double cap_bytes = options_.bucket_cap_mb * 1024 * 1024;
  double bytes = 0;
  // Reverse registration order: the last layers' gradients are ready first.
  for (size_t k = params_.size(); k-- > 0;) {
    const Tensor& p = params_[k].second;
    const double p_bytes = static_cast<double>(p.numel() * p.element_size());
    if (buckets_.empty() || buckets_.back()->dtype != p.dtype() ||
        (bytes + p_bytes > cap_bytes && !buckets_.back()->params.empty())) {
      buckets_.push_back(std::make_unique<Bucket>());
      buckets_.back()->dtype = p.dtype();
      bytes = 0;
    }
    Bucket& b = *buckets_.back();
    b.params.push_back(k);
    b.offsets.push_back(b.numel);
    b.numel += p.numel();
    bytes += p_bytes;
  }
  bucket_of_.assign(params_.size(), 0);
  for (size_t bi = 0; bi < buckets_.size(); ++bi) {
    Bucket& b = *buckets_[bi];
    b.flat = empty({b.numel}, b.dtype);
    b.pending = b.params.size();
    for (size_t k : b.params) bucket_of_[k] = bi;
  }
}

std::vector<std::vector<std::string>> DistributedDataParallel::bucket_parameter_names() const {
  std::vector<std::vector<std::string>> names;
  for (const auto& b : buckets_) {
    names.emplace_back();
    for (size_t k : b->params) names.back().push_back(params_[k].first);
  }
  return names;
}

void DistributedDataParallel::on_gradient_ready(size_t param) {
  check<DistributedError>(!ready_[param], "DistributedDataParallel: parameter '",
                          params_[param].first,
                          "' received a second gradient before the reduction of this iteration "
                          "finished; call forward() of the DistributedDataParallel module before "
                          "each backward");
  ready_[param] = true;
  if (ready_count_++ == 0) stats_ = BackwardStats{.parameters = params_.size()};
  Bucket& b = *buckets_[bucket_of_[param]];
  const size_t slot =
      static_cast<size_t>(std::find(b.params.begin(), b.params.end(), param) - b.params.begin());
  const Tensor& p = params_[param].second;
  b.flat.narrow(0, b.offsets[slot], p.numel()).view(p.sizes()).copy_(p.grad());
  --b.pending;
  start_ready_buckets();
  // MPI progresses a non-blocking collective only inside MPI calls: poke the ones in flight.
  for (size_t i = 0; i < next_bucket_; ++i) {
    if (buckets_[i]->work) buckets_[i]->work->test();
  }
  if (ready_count_ == params_.size()) finish_reduction();
}

void DistributedDataParallel::start_ready_buckets() {
  while (next_bucket_ < buckets_.size() && buckets_[next_bucket_]->pending == 0) {
    Bucket& b = *buckets_[next_bucket_];
    if (stats_.buckets_started == 0) stats_.ready_at_first_start = ready_count_;
    b.work = group_->allreduce_sum_async(b.flat);
    ++stats_.buckets_started;
    if (options_.on_bucket_start) options_.on_bucket_start(next_bucket_);
    ++next_bucket_;
  }
}

void DistributedDataParallel::finish_reduction() {
  const auto start = std::chrono::steady_clock::now();
  for (auto& b : buckets_) b->work->wait();
  stats_.wait = std::chrono::steady_clock::now() - start;
  const double world = group_->size();
  for (auto& b : buckets_) {
    divide_in_place(b->flat, world);
    for (size_t slot = 0; slot < b->params.size(); ++slot) {
      const Tensor& p = params_[b->params[slot]].second;
      p.grad().copy_(b->flat.narrow(0, b->offsets[slot], p.numel()).view(p.sizes()));
    }
    b->work.reset();
    b->pending = b->params.size();
  }
  ready_.assign(params_.size(), false);
  ready_count_ = 0;
  next_bucket_ = 0;
}

Tensor DistributedDataParallel::forward(const Tensor& input) {
  if (ready_count_ != 0) {
    std::string missing;
    size_t count = 0;
    for (size_t i = 0; i < params_.size(); ++i) {
      if (ready_[i]) continue;
      if (count++ < 5) missing += (missing.empty() ? "'" : ", '") + params_[i].first + "'";
    }
    throw DistributedError(
        "DistributedDataParallel: the previous backward gave no gradient to " +
        std::to_string(count) + " of " + std::to_string(params_.size()) + " parameters (" +
        missing + (count > 5 ? ", ..." : "") +
        "), so their reduction never finished; every trainable parameter must take part in "
        "the loss of every iteration (or set requires_grad=false on the unused ones before "
        "wrapping the model)");
  }
  if (options_.broadcast_buffers && module_->is_training() && group_->size() > 1) {
    broadcast_buffers();
  }
  return (*module_)(input);
}

void DistributedDataParallel::broadcast_buffers() {
  // One broadcast of all buffers' bytes (BatchNorm has three small buffers per layer).
  const std::vector<Tensor> buffers = module_->buffers();
  int64_t bytes = 0;
  for (const Tensor& b : buffers) bytes += b.numel() * b.element_size();
  if (bytes == 0) return;
  Tensor flat = empty({(bytes + 7) / 8}, Dtype::Int64);  // a byte buffer
  auto* out = static_cast<uint8_t*>(flat.data_ptr());
  for (const Tensor& b : buffers) {
    const Tensor c = b.contiguous();
    const size_t n = static_cast<size_t>(c.numel() * c.element_size());
    std::memcpy(out, c.data_ptr(), n);
    out += n;
  }
  group_->broadcast(flat, 0);
  const auto* in = static_cast<const uint8_t*>(flat.data_ptr());
  for (const Tensor& b : buffers) {
    const size_t n = static_cast<size_t>(b.numel() * b.element_size());
    if (b.is_contiguous()) {
      std::memcpy(b.data_ptr(), in, n);
      b.bump_version();
    } else {
      Tensor c = b.contiguous();
      std::memcpy(c.data_ptr(), in, n);
      b.copy_(c);
    }
    in += n;
  }
}

}  // namespace aclgrad::nn
