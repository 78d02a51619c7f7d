#include "autograd/node.h"

#include <algorithm>
#include <array>

#include "autograd/error.h"
#include "autograd/function.h"
#include "autograd/meta.h"
#include "tensor/bulk16.h"
#include "tensor/creation.h"
#include "tensor/iter.h"

namespace aclgrad::autograd {

// ---------------------------------------------------------------------------------------------
// SavedTensor

SavedTensor::SavedTensor(const Tensor& t, bool is_output, uint32_t output_nr)
    : data_(is_output ? t.detach() : t),
      version_(t.defined() ? t.version() : 0),
      output_nr_(output_nr),
      is_output_(is_output) {}

Tensor SavedTensor::unpack(Node& owner) const {
  if (!data_.defined()) return data_;
  check<AutogradError>(data_.version() == version_,
                       "one of the variables needed for gradient computation has been modified "
                       "by an inplace operation: [",
                       data_.dtype(), " ", data_.sizes(), "] saved by ", owner.name(),
                       " is at version ", data_.version(), "; expected version ", version_,
                       " instead");
  if (!is_output_ || !GradMode::is_enabled()) return data_;
  // create_graph: give the output its history back so the backward formula is differentiable.
  Tensor out = data_.detach();
  AutogradMetaImpl& meta = ensure_meta(out);
  meta.grad_fn = owner.shared_from_this();
  meta.output_nr = output_nr_;
  out.set_requires_grad(true);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Node

Node::~Node() {
  // Destroying the last handle of a long chain would recurse through shared_ptr destructors
  // (node -> next node -> ...). Instead, move every next node we hold the last reference to onto
  // a local stack and release them one at a time, after first dropping their saved tensors
  // (which may hold the only other reference to their own predecessors).
  saved_.clear();
  std::vector<std::shared_ptr<Node>> stack;
  auto steal_unique = [&stack](Node& n) {
    for (Edge& e : n.next_edges_) {
      if (e.node && e.node.use_count() == 1) stack.push_back(std::move(e.node));
    }
  };
  steal_unique(*this);
  while (!stack.empty()) {
    std::shared_ptr<Node> n = std::move(stack.back());
    stack.pop_back();
    n->saved_.clear();
    n->release_state();
    steal_unique(*n);
    // n is destroyed here; its destructor finds nothing left to release.
  }
}

void Node::set_next_edges(std::span<const Tensor> inputs) {
  next_edges_.clear();
  input_meta_.clear();
  next_edges_.reserve(inputs.size());
  input_meta_.reserve(inputs.size());
  for (const Tensor& t : inputs) {
    next_edges_.push_back(t.defined() ? gradient_edge(t) : Edge{});
    input_meta_.push_back(t.defined() ? TensorMeta{t.sizes(), t.dtype()} : TensorMeta{});
  }
}

void Node::set_history(const Tensor& out) {
  check<AutogradError>(out.defined(), name_, ": set_history on an undefined output");
  const AutogradMetaImpl* old = meta_of(out);
  check<AutogradError>(!out.requires_grad() && (old == nullptr || old->grad_fn == nullptr), name_,
                       ": set_history needs a new output tensor, got one that already has autograd "
                       "history (return out.detach() to pass an input through)");
  for (const SavedTensor& s : saved_) {
    check<AutogradError>(s.data().impl() != out.impl(), name_,
                         ": an output was saved before set_history(); save outputs after "
                         "set_history() so the node does not own itself");
  }
  AutogradMetaImpl& meta = ensure_meta(out);
  meta.grad_fn = shared_from_this();
  meta.output_nr = num_outputs_++;
  out.set_requires_grad(true);
}

size_t Node::save(const Tensor& t) {
  const AutogradMetaImpl* meta = t.defined() ? meta_of(t) : nullptr;
  const bool is_output = meta != nullptr && meta->grad_fn.get() == this;
  saved_.emplace_back(t, is_output, is_output ? meta->output_nr : 0);
  return saved_.size() - 1;
}

Tensor Node::saved(size_t slot) {
  check<AutogradError>(!released_,
                       "Trying to backward through the graph a second time (or to "
                       "access saved tensors after they were freed): the saved tensors of ",
                       name_,
                       " were released by a previous backward. Pass retain_graph=true "
                       "to the first backward or grad call to keep them");
  check<AutogradError>(slot < saved_.size(), name_, ": no saved tensor in slot ", slot, " (",
                       saved_.size(), " saved)");
  return saved_[slot].unpack(*this);
}

void Node::release_saved() {
  saved_.clear();
  release_state();
  released_ = true;
}

void Node::add_retained_grad(uint32_t output_nr, std::weak_ptr<AutogradMeta> meta) {
  retained_grads_.emplace_back(output_nr, std::move(meta));
}

// ---------------------------------------------------------------------------------------------
// Leaves

tensor_list AccumulateGrad::apply(tensor_list&& grad_outputs) {
  if (!grad_outputs.at(0).defined()) return {};
  AutogradMetaImpl& meta = ensure_meta(variable_);
  accumulate_into(meta, grad_outputs[0]);
  // A copy: a hook may register or remove hooks on this leaf while it runs.
  const auto hooks = meta.post_accumulate_hooks;
  for (const auto& [handle, hook] : hooks) hook(variable_);
  return {};
}

bool any_requires_grad(std::span<const Tensor> inputs) {
  if (!GradMode::is_enabled()) return false;
  for (const Tensor& t : inputs) {
    if (t.defined() && t.requires_grad()) return true;
  }
  return false;
}

Tensor gradient_buffer(const Tensor& g) {
  // One handle on the impl (the caller's) and one impl on the storage: nothing else, no view and
  // no saved tensor, can read the buffer after the caller is done with g.
  const bool reusable = !GradMode::is_enabled() && g.use_count() == 1 &&
                        g.storage().use_count() == 1 && g.storage().is_allocated() &&
                        g.is_contiguous() && !g.requires_grad() && g.autograd_meta() == nullptr;
  return reusable ? g : empty(g.sizes(), g.dtype());
}

Edge gradient_edge(const Tensor& t) {
  AutogradMetaImpl* meta = meta_of(t);
  if (meta != nullptr && meta->grad_fn) return Edge{meta->grad_fn, meta->output_nr};
  if (!t.requires_grad()) return Edge{};
  AutogradMetaImpl& m = ensure_meta(t);
  std::shared_ptr<Node> acc = m.grad_accumulator.lock();
  if (!acc) {
    acc = std::make_shared<AccumulateGrad>(t);
    m.grad_accumulator = acc;
  }
  return Edge{std::move(acc), 0};
}

AutogradMetaImpl& ensure_meta(const Tensor& t) {
  if (AutogradMetaImpl* m = meta_of(t)) return *m;
  auto meta = std::make_shared<AutogradMetaImpl>();
  AutogradMetaImpl& ref = *meta;
  t.set_autograd_meta(std::move(meta));
  return ref;
}

namespace {

// dL/da = dL/db = g for out = a + b (the engine summing two gradient contributions).
class GradSumBackward final : public Node {
 public:
  GradSumBackward() : Node("GradSumBackward") {}
  tensor_list apply(tensor_list&& grads) override {
    return {needs_grad(0) ? grads[0] : Tensor(), needs_grad(1) ? grads[0] : Tensor()};
  }
};

// out = a + b elementwise (same shapes), computing float16/bfloat16 in float32.
// out = a + b for 16-bit T, each sum in float32 rounded once, a chunk of a run at a time through
// the bulk conversions (tensor/bulk16.h): the same bits as element by element, which made a
// 16-bit leaf's gradient accumulation half of a linear layer's backward. Strided runs (a
// transposed gradient) are gathered into and scattered from 16-bit chunks first.
template <typename T>
void add16_into(const Tensor& out, const Tensor& a, const Tensor& b) {
  for_each_strided(
      out, {a, b},
      [](int64_t n, char* o, const char* const* in, const int64_t* s) {
        constexpr int64_t kChunk = 256;
        alignas(64) float x[kChunk], y[kChunk];
        alignas(64) T staged[kChunk];
        // (out may be a: each chunk is read before it is written)
        auto widen_run = [&](const char* p, int64_t stride, int64_t m, float* dst) {
          if (stride == sizeof(T)) return widen16(reinterpret_cast<const T*>(p), dst, m);
          for (int64_t k = 0; k < m; ++k) staged[k] = *reinterpret_cast<const T*>(p + k * stride);
          widen16(staged, dst, m);
        };
        for (int64_t i = 0; i < n; i += kChunk) {
          const int64_t m = std::min(kChunk, n - i);
          widen_run(in[0] + i * s[1], s[1], m, x);
          widen_run(in[1] + i * s[2], s[2], m, y);
          for (int64_t k = 0; k < m; ++k) x[k] += y[k];
          char* dst = o + i * s[0];
          if (s[0] == sizeof(T)) {
            narrow16(x, reinterpret_cast<T*>(dst), m);
            continue;
          }
          narrow16(x, staged, m);
          for (int64_t k = 0; k < m; ++k) *reinterpret_cast<T*>(dst + k * s[0]) = staged[k];
        }
      },
      Parallel::Yes);
}

void add_into(const Tensor& out, const Tensor& a, const Tensor& b) {
  dispatch_floating_dtype(a.dtype(), "add_gradients", [&]<typename T>() {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      map_elementwise<T, T, T>(out, {a, b}, [](T x, T y) { return x + y; });
    } else {
      const std::array<Tensor, 2> ins{a, b};
      const std::array<Dtype, 3> dtypes{dtype_of<T>(), dtype_of<T>(), dtype_of<T>()};
      detail::check_operand_dtypes("add_gradients", out, ins, dtypes);
      add16_into<T>(out, a, b);
    }
  });
}

}  // namespace

Tensor add_gradients(const Tensor& a, const Tensor& b) {
  Tensor out = empty(a.sizes(), a.dtype());
  add_into(out, a, b);
  if (auto node = make_node<GradSumBackward>({a, b})) node->set_history(out);
  return out;
}

// y = copy of x: dy/dx = 1.
class GradCopyBackward final : public Node {
 public:
  GradCopyBackward() : Node("CloneBackward") {}
  tensor_list apply(tensor_list&& grads) override { return {grads[0]}; }
};

void accumulate_into(AutogradMetaImpl& meta, const Tensor& g) {
  if (!meta.grad.defined()) {
    // Always a dense copy of our own: g may be a stride-0 view (e.g. the gradient of a sum) or
    // be shared with other leaves. Recorded in grad mode so create_graph keeps the history.
    meta.grad = g.clone();
    if (auto node = make_node<GradCopyBackward>({g})) node->set_history(meta.grad);
    meta.grad_owned = !meta.grad.requires_grad();
    return;
  }
  if (!GradMode::is_enabled() && meta.grad_owned) {
    add_into(meta.grad, meta.grad, g);
    meta.grad.bump_version();
    return;
  }
  meta.grad = add_gradients(meta.grad, g);
  meta.grad_owned = !meta.grad.requires_grad();
}

}  // namespace aclgrad::autograd
