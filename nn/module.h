// Module: the base of every layer. It owns named parameters (leaf tensors that require grad),
// buffers (state that is saved but not trained, e.g. BatchNorm's running_mean) and submodules,
// all kept in registration order, like torch.nn.Module.
//
//   struct Net : nn::Module {
//     Net() : Module("Net") {
//       fc1 = register_module("fc1", std::make_shared<nn::Linear>(784, 128));
//       fc2 = register_module("fc2", std::make_shared<nn::Linear>(128, 10));
//     }
//     Tensor forward(const Tensor& x) override { return (*fc2)(relu((*fc1)(x))); }
//     std::shared_ptr<nn::Linear> fc1, fc2;
//   };
//   auto net = std::make_shared<Net>();
//   net->named_parameters();   // "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"
//
// Identity: a Tensor is a handle, so the member a layer keeps (`weight`), the registry entry and
// an optimizer's parameter list all share one TensorImpl. Operations that change a parameter's
// data (to(dtype), load_state_dict) do it in place on that impl, so every handle sees the change.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "../tensor/tensor.h"

namespace aclgrad::nn {

/// (name, value) pairs in registration order (PyTorch's OrderedDict).
template <typename T>
using NamedList = std::vector<std::pair<std::string, T>>;

class Module {
 public:
  /// type_name is the class name shown by repr(), e.g. "Linear".
  explicit Module(std::string type_name = "Module");
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  /// The single-input forward of most layers. The base version throws Error (a module with
  /// several inputs defines its own call method instead).
  virtual Tensor forward(const Tensor& input);
  Tensor operator()(const Tensor& input) { return forward(input); }

  const std::string& type_name() const { return type_name_; }

  // ---- registration (names: non-empty, no '.', unique among parameters/buffers/modules) ----
  /// Registers tensor (a defined leaf, floating if requires_grad) as parameter `name`, sets its
  /// requires_grad flag and returns the same handle.
  Tensor register_parameter(const std::string& name, const Tensor& tensor,
                            bool requires_grad = true);
  /// Registers tensor as buffer `name` (saved in state_dict, not returned by parameters()).
  Tensor register_buffer(const std::string& name, const Tensor& tensor);
  /// Registers a submodule and returns it, keeping its static type.
  template <typename M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    register_module_impl(name, module);
    return module;
  }

  // ---- traversal (recursive ones use dotted names "features.0.weight", pre-order) ----
  /// Parameters of this module and, if recurse, of all submodules; a tensor registered under
  /// several names (tied weights) appears once, under its first name.
  NamedList<Tensor> named_parameters(bool recurse = true) const;
  std::vector<Tensor> parameters(bool recurse = true) const;
  NamedList<Tensor> named_buffers(bool recurse = true) const;
  std::vector<Tensor> buffers(bool recurse = true) const;
  /// Direct submodules.
  NamedList<std::shared_ptr<Module>> named_children() const;
  std::vector<std::shared_ptr<Module>> children() const;
  /// All descendants (not this module itself), pre-order, with dotted names.
  NamedList<std::shared_ptr<Module>> named_modules() const;
  /// Calls fn on every descendant (pre-order), then on this module.
  void apply(const std::function<void(Module&)>& fn);

  /// Parameter or buffer by dotted name ("features.0.weight"); IndexError if there is none.
  Tensor find_tensor(const std::string& dotted_name) const;

  // ---- state ----
  /// Every parameter then every buffer of this module, then each submodule's, with dotted names
  /// (PyTorch's state_dict order). Tied tensors appear under each of their names.
  NamedList<Tensor> state_dict() const;
  /// Copies `state` into the parameters and buffers, after checking everything first: each name
  /// of state_dict() must be present (strict) with the same shape and dtype, and (strict) no
  /// other name may be. On any error nothing is modified; messages name `source`, the tensor,
  /// expected vs got. Values are copied in place (handles keep their identity); version counters
  /// bump.
  void load_state_dict(const std::map<std::string, Tensor>& state, bool strict = true,
                       const std::string& source = "state_dict");

  /// Training mode for this module and all descendants (Dropout, BatchNorm depend on it).
  /// Overrides must call Module::train(on).
  virtual void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }

  /// Clears (set_to_none) or zeroes the .grad of every parameter.
  void zero_grad(bool set_to_none = true);
  /// Converts floating parameters and buffers (and their .grad) to dtype, in place: the module,
  /// the tensor handles and requires_grad are kept; non-floating buffers are left alone.
  /// dtype must be floating.
  void to(Dtype dtype);

  /// Number of parameter elements (each tied tensor counted once).
  int64_t num_parameters(bool trainable_only = false) const;

  /// PyTorch's repr: "Linear(in_features=3, out_features=4, bias=True)", submodules indented
  /// on their own lines as "(name): ...".
  std::string repr() const;
  /// repr() followed by "Total params: N" and "Trainable params: M" lines.
  std::string to_string() const;
  /// What repr() prints inside the parentheses for this module itself ("" for none).
  virtual std::string extra_repr() const { return ""; }

 private:
  void register_module_impl(const std::string& name, std::shared_ptr<Module> module);
  void check_new_name(const std::string& name, const char* what) const;
  void collect_parameters(const std::string& prefix, NamedList<Tensor>& out) const;
  void collect_buffers(const std::string& prefix, NamedList<Tensor>& out) const;
  void collect_modules(const std::string& prefix, NamedList<std::shared_ptr<Module>>& out) const;
  void collect_state(const std::string& prefix, NamedList<Tensor>& out) const;

  std::string type_name_;
  bool training_ = true;
  NamedList<Tensor> parameters_;
  NamedList<Tensor> buffers_;
  NamedList<std::shared_ptr<Module>> children_;
};

std::ostream& operator<<(std::ostream& os, const Module& module);

/// Replaces t's data (storage, layout, dtype) with new_data's, in place on t's impl, so every
/// handle of t sees it (PyTorch's `t.data = new_data`). Autograd state (requires_grad, .grad)
/// stays; the caller keeps .grad consistent.
void set_data(const Tensor& t, const Tensor& new_data);

/// A Module running a function: Functional([](const Tensor& x) { return relu(x); }).
class Functional : public Module {
 public:
  explicit Functional(std::function<Tensor(const Tensor&)> fn, std::string name = "Functional");
  Tensor forward(const Tensor& input) override { return fn_(input); }

 private:
  std::function<Tensor(const Tensor&)> fn_;
};

}  // namespace aclgrad::nn
