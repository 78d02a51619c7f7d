// Optimizer base: parameter groups, state, zero_grad and the state_dict format.
#include "nn/optim.h"

#include <charconv>
#include <set>
#include <sstream>

#include "autograd/grad_mode.h"
#include "nn/optim_kernel.h"

namespace aclgrad::optim {

namespace detail {

std::string format_double(double v) {
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, res.ptr);
}

double parse_double(const std::string& s, const std::string& key) {
  double v = 0;
  const auto res = std::from_chars(s.data(), s.data() + s.size(), v);
  check(res.ec == std::errc() && res.ptr == s.data() + s.size(), "load_state_dict: metadata '", key,
        "' = '", s, "' is not a number");
  return v;
}

const std::string& lookup(const std::map<std::string, std::string>& m, const std::string& key) {
  const auto it = m.find(key);
  check(it != m.end(), "load_state_dict: metadata has no '", key, "'");
  return it->second;
}

}  // namespace detail

using detail::format_double;
using detail::lookup;
using detail::parse_double;

double ParamGroup::get(const std::string& name) const {
  const auto it = options.find(name);
  check(it != options.end(), "optimizer: parameter group has no option '", name, "'");
  return it->second;
}

Optimizer::Optimizer(std::string name, Options defaults)
    : name_(std::move(name)), defaults_(std::move(defaults)) {}

const ParamState* Optimizer::find_state(const Tensor& param) const {
  const auto it = state_.find(param.impl());
  return it == state_.end() ? nullptr : &it->second;
}

Tensor Optimizer::step(const std::function<Tensor()>& closure) {
  Tensor loss;
  {
    EnableGradGuard enable;
    loss = closure();
  }
  step();
  return loss;
}

void Optimizer::zero_grad(bool set_to_none) {
  for (const ParamGroup& g : groups_) {
    for (const Tensor& p : g.params) p.zero_grad(set_to_none);
  }
}

void Optimizer::add_param_group(ParamGroup group) {
  check(!group.params.empty(), name_, ": optimizer got an empty parameter list");
  for (const auto& [key, value] : group.options) {
    check(defaults_.count(key) != 0, name_, ": unknown option '", key, "' in parameter group ",
          groups_.size());
  }
  for (const auto& [key, value] : defaults_) group.options.try_emplace(key, value);
  validate(group.options);
  std::set<const TensorImpl*> seen;
  for (const ParamGroup& g : groups_) {
    for (const Tensor& p : g.params) seen.insert(p.impl());
  }
  for (size_t i = 0; i < group.params.size(); ++i) {
    const Tensor& p = group.params[i];
    check(p.defined(), name_, ": parameter ", i, " of group ", groups_.size(), " is undefined");
    check<DtypeError>(p.dtype() == Dtype::Float32 || p.dtype() == Dtype::Float64, name_,
                      ": parameter ", i, " of group ", groups_.size(), " has dtype ", p.dtype(),
                      "; only float32 and float64 parameters are supported");
    check(p.is_leaf(), name_, ": can't optimize a non-leaf tensor (parameter ", i, " of group ",
          groups_.size(), ")");
    check(seen.insert(p.impl()).second, name_, ": parameter ", i, " of group ", groups_.size(),
          " appears in more than one parameter group (or twice in one)");
  }
  groups_.push_back(std::move(group));
}

StateDict Optimizer::state_dict() const {
  StateDict dict;
  dict.metadata["optimizer"] = name_;
  dict.metadata["param_groups"] = std::to_string(groups_.size());
  int64_t index = 0;
  for (size_t g = 0; g < groups_.size(); ++g) {
    const std::string prefix = "param_groups." + std::to_string(g) + ".";
    std::string indices;
    for (const Tensor& p : groups_[g].params) {
      if (!indices.empty()) indices += ",";
      indices += std::to_string(index);
      if (const ParamState* s = find_state(p)) {
        for (const auto& [name, t] : *s) {
          dict.tensors["state." + std::to_string(index) + "." + name] = t.clone();
        }
      }
      ++index;
    }
    dict.metadata[prefix + "params"] = indices;
    for (const auto& [key, value] : groups_[g].options) {
      dict.metadata[prefix + key] = format_double(value);
    }
  }
  return dict;
}

void Optimizer::load_state_dict(const StateDict& dict) {
  const std::string& kind = lookup(dict.metadata, "optimizer");
  check(kind == name_, "load_state_dict: the state was saved by a ", kind, " optimizer, not ",
        name_);
  const std::string& ngroups = lookup(dict.metadata, "param_groups");
  check(ngroups == std::to_string(groups_.size()), "load_state_dict: the state has ", ngroups,
        " parameter groups, this ", name_, " has ", groups_.size());
  // Parse everything first, so that a bad dict changes nothing.
  std::vector<Tensor> params;
  std::vector<Options> options(groups_.size());
  for (size_t g = 0; g < groups_.size(); ++g) {
    const std::string prefix = "param_groups." + std::to_string(g) + ".";
    std::string expected;
    for (size_t i = 0; i < groups_[g].params.size(); ++i) {
      if (!expected.empty()) expected += ",";
      expected += std::to_string(params.size());
      params.push_back(groups_[g].params[i]);
    }
    const std::string& got = lookup(dict.metadata, prefix + "params");
    check(got == expected, "load_state_dict: group ", g, " holds parameters [", got,
          "] in the state but [", expected, "] here (group sizes differ)");
    for (auto it = dict.metadata.lower_bound(prefix);
         it != dict.metadata.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
      const std::string key = it->first.substr(prefix.size());
      if (key != "params") options[g][key] = parse_double(it->second, it->first);
    }
    for (const auto& [key, value] : defaults_) {
      check(options[g].count(key) != 0, "load_state_dict: group ", g, " has no option '", key, "'");
    }
    validate(options[g]);
  }
  std::vector<ParamState> states(params.size());
  for (const auto& [key, t] : dict.tensors) {
    if (key.compare(0, 6, "state.") != 0) continue;
    const size_t dot = key.find('.', 6);
    check(dot != std::string::npos, "load_state_dict: malformed state key '", key, "'");
    size_t index = 0;
    const auto res = std::from_chars(key.data() + 6, key.data() + dot, index);
    check(res.ec == std::errc() && res.ptr == key.data() + dot && index < params.size(),
          "load_state_dict: state key '", key, "' does not name one of the ", params.size(),
          " parameters");
    const std::string name = key.substr(dot + 1);
    const Tensor& p = params[index];
    // Scalars (e.g. Adam's step) keep their own shape; the rest match the parameter.
    if (t.dim() != 0) {
      check<ShapeError>(t.sizes() == p.sizes(), "load_state_dict: state '", key, "' has shape ",
                        t.sizes(), " but parameter ", index, " has shape ", p.sizes());
    }
    states[index][name] = t.dim() == 0 ? t.clone() : t.to(p.dtype()).clone();
  }
  for (size_t g = 0; g < groups_.size(); ++g) groups_[g].options = std::move(options[g]);
  state_.clear();
  for (size_t i = 0; i < params.size(); ++i) {
    if (!states[i].empty()) state_[params[i].impl()] = std::move(states[i]);
  }
}

}  // namespace aclgrad::optim
