// Losses, composed of differentiable ops so that their backward (and double backward) comes from
// the pieces. The only new differentiable pieces here:
//   gather_class(x, t):   y[n, ...] = x[n, t[n, ...], ...]   (its backward is scatter_class)
//   scatter_class(g, t):  zeros with y[n, t[n, ...], ...] = g[n, ...]  (backward: gather_class)
//   log1p_exp_neg(x):     log(1 + exp(-x)), stable; d/dx = -sigmoid(-x)
#include "ops/loss.h"

#include <cmath>
#include <string>

#include "autograd/function.h"
#include "ops/autocast.h"
#include "ops/activation.h"
#include "ops/elementwise.h"
#include "ops/kernels.h"
#include "ops/reduction.h"
#include "ops/shape.h"
#include "ops/softmax.h"
#include "tensor/iter.h"

namespace aclgrad {

using autograd::make_node;
using autograd::Node;
using autograd::tensor_list;

Reduction reduction_from_string(std::string_view name) {
  if (name == "none") return Reduction::None;
  if (name == "mean") return Reduction::Mean;
  check(name == "sum", "reduction: '", name, "' is not a valid value (expected none, mean or sum)");
  return Reduction::Sum;
}

namespace {

// ---------------------------------------------------------------------------------------------
// gather_class / scatter_class along dim 1. idx: int64, x's shape without dim 1, every value in
// [0, C). Positions are distinct per output element, so the scatter is a plain store.

Tensor gather_class(const Tensor& x, const Tensor& idx);
Tensor scatter_class(const Tensor& g, const Tensor& idx, const Shape& sizes);

struct GatherClassBackward final : Node {
  explicit GatherClassBackward(Tensor idx) : Node("GatherBackward"), idx(std::move(idx)) {}
  Tensor idx;  // int64, no history
  tensor_list apply(tensor_list&& grads) override {
    return {scatter_class(grads[0], idx, input_sizes(0))};
  }
  void release_state() override { idx = Tensor(); }
};

struct ScatterClassBackward final : Node {
  explicit ScatterClassBackward(Tensor idx) : Node("ScatterBackward"), idx(std::move(idx)) {}
  Tensor idx;
  tensor_list apply(tensor_list&& grads) override { return {gather_class(grads[0], idx)}; }
  void release_state() override { idx = Tensor(); }
};

Tensor gather_class(const Tensor& x, const Tensor& idx) {
  Tensor out = empty(idx.sizes(), x.dtype());
  const int64_t step = x.stride(1) * x.element_size();  // bytes between classes
  if (out.numel() > 0) {
    dispatch_floating_dtype(x.dtype(), "gather", [&]<typename T>() {
      // Walk the output with x seen at class 0; each element then jumps idx classes.
      for_each_strided(out.unsqueeze(1), {idx.unsqueeze(1), x.narrow(1, 0, 1)},
                       [step](int64_t n, char* o, const char* const* in, const int64_t* s) {
                         for (int64_t i = 0; i < n; ++i) {
                           const int64_t k = *reinterpret_cast<const int64_t*>(in[0] + i * s[1]);
                           *reinterpret_cast<T*>(o + i * s[0]) =
                               *reinterpret_cast<const T*>(in[1] + i * s[2] + k * step);
                         }
                       });
    });
  }
  if (auto node = make_node<GatherClassBackward>({x}, idx)) node->set_history(out);
  return out;
}

Tensor scatter_class(const Tensor& g, const Tensor& idx, const Shape& sizes) {
  Tensor out = zeros(sizes, g.dtype());
  const int64_t step = out.stride(1) * out.element_size();
  if (g.numel() > 0) {
    dispatch_floating_dtype(g.dtype(), "scatter", [&]<typename T>() {
      for_each_strided(out.narrow(1, 0, 1), {idx.unsqueeze(1), g.unsqueeze(1)},
                       [step](int64_t n, char* o, const char* const* in, const int64_t* s) {
                         for (int64_t i = 0; i < n; ++i) {
                           const int64_t k = *reinterpret_cast<const int64_t*>(in[0] + i * s[1]);
                           *reinterpret_cast<T*>(o + i * s[0] + k * step) =
                               *reinterpret_cast<const T*>(in[1] + i * s[2]);
                         }
                       });
    });
  }
  if (auto node = make_node<ScatterClassBackward>({g}, idx)) node->set_history(out);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Class targets: validated once, turned into constant tensors the loss is built from.

struct ClassTargets {
  Tensor input;         // [N, C, d...] (an unbatched [C] input gets N = 1, recorded)
  Tensor index;         // int64 [N, d...], ignored targets replaced by 0 (a valid class)
  Tensor weight;        // input dtype [N, d...]: w[t], 0 where ignored
  Tensor ignored;       // bool [N, d...]
  double total_weight;  // sum of weight (the Mean denominator)
  bool unbatched;
};

ClassTargets class_targets(const char* op, const Tensor& input, const Tensor& target,
                           const Tensor& class_weight, int64_t ignore_index) {
  check<ShapeError>(input.dim() >= 1, op, ": expected input of shape [N, C, d1, ...] or [C], got ",
                    input.sizes());
  check<DtypeError>(target.dtype() == Dtype::Int64, op,
                    ": expected target of dtype int64 (class indices), got ", target.dtype());
  ClassTargets ct;
  ct.unbatched = input.dim() == 1;
  Shape want = input.sizes();
  want.erase(want.begin() + (ct.unbatched ? 0 : 1));
  check<ShapeError>(target.sizes() == want, op, ": expected target of shape ", want,
                    " for input of shape ", input.sizes(), " (the input without its class dim ",
                    ct.unbatched ? 0 : 1, "), got ", target.sizes());
  ct.input = ct.unbatched ? unsqueeze(input, 0) : input;
  const Tensor t = (ct.unbatched ? target.unsqueeze(0) : target).contiguous();
  const int64_t C = ct.input.size(1);
  std::vector<double> w(C, 1.0);
  if (class_weight.defined()) {
    check<ShapeError>(class_weight.dim() == 1 && class_weight.size(0) == C, op,
                      ": expected weight of shape [", C, "] (one per class), got ",
                      class_weight.sizes());
    check<DtypeError>(class_weight.dtype() == input.dtype(), op, ": weight has dtype ",
                      class_weight.dtype(), " but the input has dtype ", input.dtype());
    w = class_weight.to_vector<double>();
  }
  const int64_t n = t.numel();
  const int64_t* tv = t.data_ptr<int64_t>();
  std::vector<int64_t> index(n);
  std::vector<double> weight(n);
  std::vector<bool> ignored(n);
  ct.total_weight = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t k = tv[i];
    ignored[i] = k == ignore_index;
    if (ignored[i]) continue;
    check<IndexError>(k >= 0 && k < C, op, ": target ", k, " is out of bounds; expected a class ",
                      "index in [0, ", C - 1, "] (", C, " classes) or ignore_index ", ignore_index);
    index[i] = k;
    weight[i] = w[k];
    ct.total_weight += w[k];
  }
  ct.index = from_vector(index, t.sizes(), Dtype::Int64);
  ct.weight = from_vector(weight, t.sizes(), input.dtype());
  ct.ignored =
      from_vector(std::vector<int64_t>(ignored.begin(), ignored.end()), t.sizes(), Dtype::Bool);
  return ct;
}

// Per-element losses [N, d...] reduced; for None an unbatched loss becomes 0-dim again.
Tensor reduce_elements_of(const Tensor& loss, Reduction reduction, double denominator,
                          bool unbatched) {
  switch (reduction) {
    case Reduction::None:
      return unbatched ? reshape(loss, {}) : loss;
    case Reduction::Sum:
      return sum(loss);
    case Reduction::Mean:
      break;
  }
  return div(sum(loss), denominator);
}

// -w[t]·x[n, t] per element, from validated targets.
Tensor nll_from(const ClassTargets& ct) {
  return mul(gather_class(ct.input, ct.index), neg(ct.weight));
}

// y = log(1 + exp(-x)) = max(-x, 0) + log1p(exp(-|x|)): dy/dx = -sigmoid(-x).
struct Log1pExpNegBackward final : Node {
  Log1pExpNegBackward() : Node("Log1pExpNegBackward") {}
  size_t x = 0;
  tensor_list apply(tensor_list&& grads) override {
    return {mul(grads[0], neg(sigmoid(neg(saved(x)))))};
  }
};

Tensor log1p_exp_neg(const Tensor& x) {
  Tensor out = kernels::map_unary("binary_cross_entropy_with_logits", x, [](auto v) {
    return std::max(-v, decltype(v)(0)) + std::log1p(std::exp(-std::abs(v)));
  });
  if (auto node = make_node<Log1pExpNegBackward>({x})) {
    node->x = node->save(x);
    node->set_history(out);
  }
  return out;
}

// "weight of shape [4] does not broadcast to the input shape [2, 3]" unless it does.
void check_broadcasts_to(const char* op, const char* what, const Tensor& t, const Tensor& input) {
  if (!t.defined()) return;
  check<DtypeError>(t.dtype() == input.dtype(), op, ": ", what, " has dtype ", t.dtype(),
                    " but the input has dtype ", input.dtype());
  bool ok = t.dim() <= input.dim();
  for (int64_t i = 1; ok && i <= t.dim(); ++i) {
    ok = t.size(-i) == 1 || t.size(-i) == input.size(-i);
  }
  check<ShapeError>(ok, op, ": ", what, " of shape ", t.sizes(),
                    " does not broadcast to the input shape ", input.sizes());
}

}  // namespace

Tensor nll_loss(const Tensor& input, const Tensor& target, const NllLossOptions& options) {
  if (autocast::is_active()) {
    const autocast::OpInputs in(AutocastOp::kNllLoss, {input, target, options.weight});
    NllLossOptions o = options;
    o.weight = in[2];
    return nll_loss(in[0], in[1], o);
  }
  const ClassTargets ct =
      class_targets("nll_loss", input, target, options.weight, options.ignore_index);
  return reduce_elements_of(nll_from(ct), options.reduction, ct.total_weight, ct.unbatched);
}

Tensor cross_entropy(const Tensor& input, const Tensor& target,
                     const CrossEntropyOptions& options) {
  if (autocast::is_active()) {
    const autocast::OpInputs in(AutocastOp::kCrossEntropy, {input, target, options.weight});
    CrossEntropyOptions o = options;
    o.weight = in[2];
    return cross_entropy(in[0], in[1], o);
  }
  const char* op = "cross_entropy";
  const double eps = options.label_smoothing;
  check(eps >= 0.0 && eps <= 1.0, op, ": label_smoothing must be between 0.0 and 1.0, got ", eps);
  check<ShapeError>(input.dim() >= 1, op, ": expected input of shape [N, C, d1, ...] or [C], got ",
                    input.sizes());
  const int64_t class_dim = input.dim() == 1 ? 0 : 1;
  const int64_t C = input.size(class_dim);
  // Class weights seen along the class dim: [1, C, 1, ...].
  Tensor w_b;
  if (options.weight.defined()) {
    check<ShapeError>(options.weight.dim() == 1 && options.weight.size(0) == C, op,
                      ": expected weight of shape [", C, "] (one per class), got ",
                      options.weight.sizes());
    check<DtypeError>(options.weight.dtype() == input.dtype(), op, ": weight has dtype ",
                      options.weight.dtype(), " but the input has dtype ", input.dtype());
    Shape s(input.dim(), 1);
    s[class_dim] = C;
    w_b = options.weight.view(s);
  }
  const Tensor logp = log_softmax(input, class_dim);

  if (target.is_floating_point()) {  // class probabilities
    check<ShapeError>(target.sizes() == input.sizes(), op,
                      ": a floating target holds class probabilities and must have the input's "
                      "shape ",
                      input.sizes(), ", got shape ", target.sizes(),
                      " (class indices must be int64)");
    check<DtypeError>(target.dtype() == input.dtype(), op, ": target probabilities have dtype ",
                      target.dtype(), " but the input has dtype ", input.dtype());
    check(options.ignore_index < 0, op, ": ignore_index (", options.ignore_index,
          ") is not supported for floating point (probability) targets");
    const Tensor t = eps > 0 ? add(mul(target, 1.0 - eps), eps / static_cast<double>(C)) : target;
    Tensor prod = mul(logp, t);
    if (w_b.defined()) prod = mul(prod, w_b);
    if (options.reduction == Reduction::None) return neg(sum(prod, {class_dim}));
    const Tensor total = neg(sum(prod));
    if (options.reduction == Reduction::Sum) return total;
    return div(total, static_cast<double>(input.numel() / std::max<int64_t>(C, 1)));
  }

  const ClassTargets ct = class_targets(op, logp, target, options.weight, options.ignore_index);
  const Tensor nll =
      reduce_elements_of(nll_from(ct), options.reduction, ct.total_weight, ct.unbatched);
  if (eps == 0) return nll;
  // Smoothing term per element: -sum_c w_c log p_c, 0 where the target is ignored. Mean divides
  // by the same denominator as nll (sum of w[t], or the count of non-ignored targets).
  const Tensor& lp = ct.input;  // logp, [N, C, d...]
  const Tensor wl = w_b.defined() ? mul(lp, w_b) : lp;
  const Tensor smooth = masked_fill(neg(sum(wl, {1})), ct.ignored, 0.0);
  const Tensor smooth_red =
      reduce_elements_of(smooth, options.reduction, ct.total_weight, ct.unbatched);
  return add(mul(nll, 1.0 - eps), mul(smooth_red, eps / static_cast<double>(C)));
}

Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  if (autocast::is_active()) {
    const autocast::OpInputs in(AutocastOp::kMseLoss, {input, target});
    return mse_loss(in[0], in[1], reduction);
  }
  check<DtypeError>(input.dtype() == target.dtype(), "mse_loss: input has dtype ", input.dtype(),
                    " but the target has dtype ", target.dtype());
  check_broadcasts_to("mse_loss", "target", target, input);
  const Tensor d = sub(input, target);
  const Tensor sq = mul(d, d);
  switch (reduction) {
    case Reduction::None:
      return sq;
    case Reduction::Sum:
      return sum(sq);
    case Reduction::Mean:
      break;
  }
  return mean(sq);
}

Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const BceWithLogitsOptions& options) {
  if (autocast::is_active()) {
    const autocast::OpInputs in(AutocastOp::kBinaryCrossEntropyWithLogits,
                                {input, target, options.weight, options.pos_weight});
    BceWithLogitsOptions o = options;
    o.weight = in[2];
    o.pos_weight = in[3];
    return binary_cross_entropy_with_logits(in[0], in[1], o);
  }
  const char* op = "binary_cross_entropy_with_logits";
  check<ShapeError>(target.sizes() == input.sizes(), op, ": target size ", target.sizes(),
                    " must be the same as input size ", input.sizes());
  check<DtypeError>(target.dtype() == input.dtype(), op, ": target has dtype ", target.dtype(),
                    " but the input has dtype ", input.dtype());
  check_broadcasts_to(op, "weight", options.weight, input);
  check_broadcasts_to(op, "pos_weight", options.pos_weight, input);
  // loss = (1 - y) x + L log(1 + exp(-x)), L = 1 + (p - 1) y: the -log σ(x) = log(1 + exp(-x))
  // term weighted by p y + (1 - y), and -log(1 - σ(x)) = x + log(1 + exp(-x)) by (1 - y).
  const Tensor sp = log1p_exp_neg(input);
  const Tensor lw =
      options.pos_weight.defined() ? add(mul(sub(options.pos_weight, 1.0), target), 1.0) : Tensor();
  Tensor loss = add(mul(rsub(target, 1.0), input), lw.defined() ? mul(lw, sp) : sp);
  if (options.weight.defined()) loss = mul(loss, options.weight);
  switch (options.reduction) {
    case Reduction::None:
      return loss;
    case Reduction::Sum:
      return sum(loss);
    case Reduction::Mean:
      break;
  }
  return mean(loss);
}

}  // namespace aclgrad
