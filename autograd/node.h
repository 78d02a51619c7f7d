// The autograd graph: Node (one recorded op's backward), Edge (where a gradient goes next) and
// SavedTensor (a tensor kept for backward, with its version checked on use).
//
// Vocabulary, as seen from the forward op that created the node:
//   - "inputs" of a node are the forward op's inputs; next_edges()[i] is where the gradient for
//     forward input i goes (an invalid edge when that input needs no gradient);
//   - "outputs" of a node are the forward op's outputs; apply() receives one gradient per output.
// See autograd/function.h for how to write an op.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "../tensor/tensor.h"

namespace aclgrad::autograd {

using tensor_list = std::vector<Tensor>;

class Node;

/// A gradient destination: output `input_nr` of `node`'s forward op, i.e. the gradient is fed to
/// node->apply() as grad_outputs[input_nr]. An edge without a node means "no gradient needed".
struct Edge {
  std::shared_ptr<Node> node;
  uint32_t input_nr = 0;
  bool valid() const { return node != nullptr; }
};

/// Shape and dtype a gradient must have (recorded from each forward input).
struct TensorMeta {
  Shape sizes;
  Dtype dtype = Dtype::Float32;
};

/// A tensor saved for backward. Remembers the version counter at save time; unpack() throws
/// AutogradError naming the node if the tensor was modified in place since, or if the node's
/// saved tensors were already released by a backward without retain_graph.
/// An output of the owning node is stored without its grad_fn (no reference cycle) and gets it
/// back on unpack while grad mode is on (create_graph), so double backward sees the real graph.
class SavedTensor {
 public:
  SavedTensor() = default;
  SavedTensor(const Tensor& t, bool is_output, uint32_t output_nr);
  Tensor unpack(Node& owner) const;
  const Tensor& data() const { return data_; }

 private:
  Tensor data_;
  uint64_t version_ = 0;
  uint32_t output_nr_ = 0;
  bool is_output_ = false;
};

/// The backward of one recorded op. Subclasses implement apply(); they are created by
/// make_node<T>() (autograd/function.h) and owned by shared_ptr through the graph.
class Node : public std::enable_shared_from_this<Node> {
 public:
  /// name: a static string like "MulBackward" used in every error message about this node.
  /// supports_double_backward = false makes a backward with create_graph=true that reaches this
  /// node an AutogradError (use it when apply() computes with plain kernels, not differentiable
  /// ops, so the result would silently have no graph).
  explicit Node(const char* name, bool supports_double_backward = true)
      : name_(name), supports_double_backward_(supports_double_backward) {}
  /// Releases the graph behind this node iteratively (a 100,000-node chain does not recurse).
  virtual ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  /// grad_outputs[k] = dL/d(forward output k); undefined when no gradient reached that output
  /// (the engine never calls apply() with all of them undefined, so a one-output node always
  /// gets a defined gradient). Returns num_inputs() gradients, dL/d(forward input i), each with
  /// input_meta(i)'s shape and dtype; undefined where !needs_grad(i). Runs with grad mode on
  /// exactly when the backward has create_graph=true.
  virtual tensor_list apply(tensor_list&& grad_outputs) = 0;

  const char* name() const { return name_; }
  size_t num_inputs() const { return next_edges_.size(); }
  size_t num_outputs() const { return num_outputs_; }
  const std::vector<Edge>& next_edges() const { return next_edges_; }
  /// Whether forward input i needs a gradient (skip computing it otherwise).
  bool needs_grad(size_t i) const { return i < next_edges_.size() && next_edges_[i].valid(); }
  const TensorMeta& input_meta(size_t i) const { return input_meta_.at(i); }
  const Shape& input_sizes(size_t i) const { return input_meta_.at(i).sizes; }
  bool supports_double_backward() const { return supports_double_backward_; }
  /// AccumulateGrad (the node of a leaf) answers true.
  virtual bool is_accumulator() const { return false; }

  // ---- used by op implementations (see autograd/function.h) ----
  /// Records one edge and one TensorMeta per forward input (done by make_node).
  void set_next_edges(std::span<const Tensor> inputs);
  /// Makes out the next forward output of this node: out gets grad_fn = this, output_nr = the
  /// number of outputs set so far, requires_grad = true. out must be a new tensor (no history).
  void set_history(const Tensor& out);
  /// Saves t for backward and returns its slot for saved(). Save an output after set_history().
  size_t save(const Tensor& t);
  /// The tensor in a slot (undefined if an undefined tensor was saved); version-checked.
  Tensor saved(size_t slot);

  /// Drops the saved tensors (and what release_state() drops); a later apply() is an error.
  /// The engine calls it after running the node in a backward without retain_graph.
  void release_saved();
  bool released() const { return released_; }

  // ---- engine support ----
  /// Non-leaf tensors of this node that asked for retain_grad(): (output_nr, their meta).
  const std::vector<std::pair<uint32_t, std::weak_ptr<AutogradMeta>>>& retained_grads() const {
    return retained_grads_;
  }
  void add_retained_grad(uint32_t output_nr, std::weak_ptr<AutogradMeta> meta);

 protected:
  /// Override to drop other large buffers a node keeps (e.g. a mask) on release_saved().
  virtual void release_state() {}

 private:
  const char* name_;
  bool supports_double_backward_;
  bool released_ = false;
  uint32_t num_outputs_ = 0;
  std::vector<Edge> next_edges_;
  std::vector<TensorMeta> input_meta_;
  std::vector<SavedTensor> saved_;
  std::vector<std::pair<uint32_t, std::weak_ptr<AutogradMeta>>> retained_grads_;
};

/// The node of a leaf that requires grad: accumulates the incoming gradient into its .grad.
class AccumulateGrad final : public Node {
 public:
  explicit AccumulateGrad(Tensor variable)
      : Node("AccumulateGrad"), variable_(std::move(variable)) {}
  tensor_list apply(tensor_list&& grad_outputs) override;
  bool is_accumulator() const override { return true; }
  const Tensor& variable() const { return variable_; }

 private:
  Tensor variable_;
};

/// Where a gradient for t must go: (grad_fn, output_nr) for a non-leaf, (its AccumulateGrad, 0)
/// for a leaf that requires grad (created on first use), an invalid edge otherwise.
Edge gradient_edge(const Tensor& t);

}  // namespace aclgrad::autograd
